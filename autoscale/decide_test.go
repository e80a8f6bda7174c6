package autoscale

import (
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/minicluster/minicluster/internal/idset"
)

// look is a state of 6 brokers of 4 cores each, with the given brokers online and busy.
func look(online, busy string, drain map[string]string, pending ...Job) State {
	ids, _ := idset.Parse(busy, 6)
	return State{Ranks: 6, Online: online, Allocated: busy, Drain: drain,
		All: Count{Nodes: 6, Cores: 24}, Busy: Count{Nodes: len(ids), Cores: 4 * len(ids)}, Pending: pending}
}

func TestGrowForAJobLargerThanTheBrokersUp(t *testing.T) {
	s := NewScaler(Policy{Min: 1, Max: 6, Idle: time.Minute})
	now := time.Unix(1000, 0)
	plan, err := s.Decide(look("0", "", nil, Job{ID: 1, Nodes: 4, Cores: 4}), 1, now)
	if err != nil || plan.Size != 4 || !strings.Contains(plan.Reason, "1 job waits") {
		t.Fatalf("plan %+v, %v; want 4 brokers for one job of 4 nodes", plan, err)
	}
	// Beyond maxSize: as many as maxSize allows.
	plan, _ = s.Decide(look("0", "", nil, Job{ID: 2, Cores: 40}), 1, now)
	if plan.Size != 6 {
		t.Errorf("a job of 40 cores: size %d, want maxSize 6", plan.Size)
	}
	// A held job waits for a person, not for brokers.
	plan, _ = s.Decide(look("0", "", nil, Job{ID: 3, Nodes: 4, Held: true}), 1, now)
	if plan.Size != 1 {
		t.Errorf("a held job: size %d, want 1", plan.Size)
	}
}

func TestGrowForABurstOfSmallJobs(t *testing.T) {
	s := NewScaler(Policy{Min: 1, Max: 6, Idle: time.Minute})
	// 2 brokers busy; 3 jobs of 1 node each wait: 5 brokers' worth.
	st := look("0-1", "0-1", nil, Job{ID: 1, Nodes: 1, Cores: 1}, Job{ID: 2, Nodes: 1, Cores: 1}, Job{ID: 3, Nodes: 1, Cores: 1})
	plan, _ := s.Decide(st, 2, time.Unix(0, 0))
	if plan.Size != 5 {
		t.Errorf("size %d, want 5 (2 busy + 3 whole nodes)", plan.Size)
	}
	// 8 one-core jobs without nodes named fit in 2 brokers of 4 cores.
	var small []Job
	for i := range 8 {
		small = append(small, Job{ID: uint64(i), Cores: 1})
	}
	plan, _ = s.Decide(look("0", "", nil, small...), 1, time.Unix(0, 0))
	if plan.Size != 2 {
		t.Errorf("8 one-core jobs: size %d, want 2", plan.Size)
	}
}

func TestGPUsDecide(t *testing.T) {
	s := NewScaler(Policy{Min: 1, Max: 6, Idle: time.Minute})
	st := look("0", "", nil, Job{ID: 1, Cores: 1, GPUs: 3})
	st.All.GPUs = 6 // one per broker
	plan, _ := s.Decide(st, 1, time.Unix(0, 0))
	if plan.Size != 3 {
		t.Errorf("a job of 3 GPUs on brokers of 1: size %d, want 3", plan.Size)
	}
}

func TestShrinkDrainsFirstAndKeepsABusyBroker(t *testing.T) {
	s := NewScaler(Policy{Min: 1, Max: 6, Idle: time.Minute})
	t0 := time.Unix(0, 0)
	// Brokers 0-3 up, broker 2 runs a long job.
	if plan, _ := s.Decide(look("0-3", "2", nil), 4, t0); plan.Size != 4 || plan.Drain != nil {
		t.Fatalf("at once: %+v, want nothing before idleSeconds", plan)
	}
	plan, _ := s.Decide(look("0-3", "2", nil), 4, t0.Add(2*time.Minute))
	if plan.Size != 4 || !reflect.DeepEqual(plan.Drain, []int{3}) {
		t.Fatalf("after idle: %+v, want broker 3 drained, size kept until it is empty", plan)
	}
	plan, _ = s.Decide(look("0-3", "2", map[string]string{"3": DrainReason + ": idle"}), 4, t0.Add(2*time.Minute+time.Second))
	if plan.Size != 3 || !strings.Contains(plan.Reason, "ran nothing") {
		t.Fatalf("drained and empty: %+v, want size 3", plan)
	}
	// Broker 2 still busy: no shrink below it.
	plan, _ = s.Decide(look("0-2", "2", nil), 3, t0.Add(3*time.Minute))
	if plan.Size != 3 || plan.Drain != nil {
		t.Fatalf("busy broker 2: %+v, want it kept", plan)
	}
	// Its job ends; once idle long enough, down to minSize.
	s.Decide(look("0-2", "", nil), 3, t0.Add(3*time.Minute+30*time.Second))
	plan, _ = s.Decide(look("0-2", "", nil), 3, t0.Add(6*time.Minute))
	if !reflect.DeepEqual(plan.Drain, []int{1, 2}) {
		t.Fatalf("all idle: %+v, want 1-2 drained", plan)
	}
	plan, _ = s.Decide(look("0-2", "", map[string]string{"1-2": DrainReason}), 3, t0.Add(6*time.Minute))
	if plan.Size != 1 {
		t.Fatalf("drained: %+v, want size 1 (minSize)", plan)
	}
}

func TestShrinkWaitsForAJobPlacedBeforeTheDrain(t *testing.T) {
	s := NewScaler(Policy{Min: 1, Max: 6, Idle: time.Second})
	t0 := time.Unix(0, 0)
	s.Decide(look("0-1", "", nil), 2, t0)
	if plan, _ := s.Decide(look("0-1", "", nil), 2, t0.Add(time.Minute)); !reflect.DeepEqual(plan.Drain, []int{1}) {
		t.Fatalf("%+v: want broker 1 drained", plan)
	}
	// A job got broker 1 between the look and the drain: the shrink waits for it.
	ours := map[string]string{"1": DrainReason}
	if plan, _ := s.Decide(look("0-1", "1", ours), 2, t0.Add(time.Minute)); plan.Size != 2 {
		t.Fatalf("%+v: want size 2 while broker 1 runs a job", plan)
	}
	if plan, _ := s.Decide(look("0-1", "", ours), 2, t0.Add(2*time.Minute)); plan.Size != 1 {
		t.Fatalf("%+v: want size 1 once it is empty", plan)
	}
}

func TestJobsCancelAShrinkAndUndrain(t *testing.T) {
	s := NewScaler(Policy{Min: 1, Max: 6, Idle: time.Second})
	t0 := time.Unix(0, 0)
	s.Decide(look("0-3", "", nil), 4, t0)
	if plan, _ := s.Decide(look("0-3", "", nil), 4, t0.Add(time.Minute)); !reflect.DeepEqual(plan.Drain, []int{1, 2, 3}) {
		t.Fatalf("%+v: want 1-3 drained", plan)
	}
	ours := map[string]string{"1-3": DrainReason + ": idle", "5": "a person's"}
	plan, _ := s.Decide(look("0-3", "", ours, Job{ID: 1, Nodes: 3, Cores: 3}), 4, t0.Add(time.Minute))
	if plan.Size != 4 || !reflect.DeepEqual(plan.Undrain, []int{1, 2}) {
		t.Fatalf("%+v: want size 4 kept and brokers 1-2 undrained for a job of 3 nodes", plan)
	}
	// Growing again undrains what the autoscaler drained, never a person's drain.
	plan, _ = s.Decide(look("0", "", ours, Job{ID: 2, Nodes: 6, Cores: 6}), 1, t0.Add(time.Hour))
	if plan.Size != 6 || !reflect.DeepEqual(plan.Undrain, []int{1, 2, 3}) {
		t.Fatalf("%+v: want size 6 and 1-3 undrained (5 is not ours)", plan)
	}
}

func TestBounds(t *testing.T) {
	s := NewScaler(Policy{Min: 2, Max: 4, Idle: time.Second})
	if plan, _ := s.Decide(look("0", "", nil), 1, time.Unix(0, 0)); plan.Size != 2 {
		t.Errorf("below minSize: %+v", plan)
	}
	if plan, _ := s.Decide(look("0-4", "", nil), 5, time.Unix(0, 0)); plan.Size != 4 {
		t.Errorf("above maxSize: %+v", plan)
	}
	if _, err := s.Decide(look("0-9", "", nil), 1, time.Unix(0, 0)); err == nil {
		t.Error("an idset beyond the brokers: no error")
	}
}
