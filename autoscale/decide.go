package autoscale

import (
	"fmt"
	"sort"
	"time"
)

// DrainReason starts the reason of every drain the autoscaler makes: it undrains only those.
const DrainReason = "minicluster-autoscale"

// Policy bounds the sizes the Scaler picks.
type Policy struct {
	// Min and Max brokers: the Scaler never asks for fewer or more.
	Min, Max int
	// Idle is how long a broker must have run nothing before it is given back.
	Idle time.Duration
}

// Plan is what the Scaler wants done after one look at Flux.
type Plan struct {
	// Size is the number of brokers wanted, and Reason why; Size equals the live size when
	// nothing is to change.
	Size   int
	Reason string
	// Kind is the reason's kind, for metrics: jobs-waiting, idle or bounds.
	Kind string
	// Drain: brokers to drain in Flux before a shrink to Size may be written; Undrain: brokers
	// the autoscaler drained that are wanted again.
	Drain, Undrain []int
}

// Scaler turns each look at Flux into a Plan. It remembers when each broker last ran a job and
// which shrink it has started (its brokers drained, waiting for them to be empty).
type Scaler struct {
	Policy   Policy
	lastBusy map[int]time.Time
	// shrinkTo is the size a started shrink goes to (0: none started).
	shrinkTo int
}

// NewScaler returns a Scaler for p.
func NewScaler(p Policy) *Scaler { return &Scaler{Policy: p, lastBusy: map[int]time.Time{}} }

// Decide looks at st, with size brokers in the Job now, and says what to do.
func (s *Scaler) Decide(st State, size int, now time.Time) (Plan, error) {
	online, err := st.ranks(st.Online)
	if err != nil {
		return Plan{}, err
	}
	busy, err := st.ranks(st.Allocated)
	if err != nil {
		return Plan{}, err
	}
	ours, err := st.drainedBy(DrainReason)
	if err != nil {
		return Plan{}, err
	}
	for rank := range online {
		if _, known := s.lastBusy[rank]; !known || busy[rank] {
			// A broker that just joined counts as busy now: it is given Idle to be used.
			s.lastBusy[rank] = now
		}
	}
	for rank := range s.lastBusy {
		if !online[rank] {
			delete(s.lastBusy, rank)
		}
	}
	demand, why := s.demand(st)
	plan := Plan{Size: size}
	switch {
	case demand > size:
		plan.Size, plan.Reason, plan.Kind = min(demand, s.Policy.Max), why, "jobs-waiting"
		s.shrinkTo = 0
	case size < s.Policy.Min:
		plan.Size, plan.Reason, plan.Kind = s.Policy.Min, fmt.Sprintf("autoscale.minSize is %d", s.Policy.Min), "bounds"
		s.shrinkTo = 0
	case size > s.Policy.Max:
		plan.Size, plan.Reason, plan.Kind = s.Policy.Max, fmt.Sprintf("maxSize is %d", s.Policy.Max), "bounds"
	default:
		plan = s.shrink(plan, size, max(demand, s.Policy.Min), busy, ours, now)
	}
	// Brokers the autoscaler drained are given back to the scheduler once they are wanted.
	for rank := range ours {
		if rank < plan.Size && (s.shrinkTo == 0 || rank < s.shrinkTo) {
			plan.Undrain = append(plan.Undrain, rank)
		}
	}
	sort.Ints(plan.Undrain)
	return plan, nil
}

// shrink gives back the idle brokers at the top, down to floor: first it drains them (Plan.Drain),
// then, once none of them holds a job, it plans the smaller size.
func (s *Scaler) shrink(plan Plan, size, floor int, busy, ours map[int]bool, now time.Time) Plan {
	if s.shrinkTo != 0 && s.shrinkTo < floor {
		s.shrinkTo = 0 // jobs came that want some of those brokers: keep them
	}
	if s.shrinkTo != 0 {
		for rank := s.shrinkTo; rank < size; rank++ {
			if busy[rank] {
				return plan // a job placed there before the drain: it ends first
			}
		}
		plan.Size, plan.Kind = s.shrinkTo, "idle"
		plan.Reason = fmt.Sprintf("brokers %d to %d ran nothing for %s", s.shrinkTo, size-1, s.Policy.Idle)
		s.shrinkTo = 0
		return plan
	}
	to := size
	for to > floor {
		rank := to - 1
		last, seen := s.lastBusy[rank]
		if busy[rank] || (seen && now.Sub(last) < s.Policy.Idle) {
			break
		}
		to--
	}
	if to == size {
		return plan
	}
	s.shrinkTo = to
	for rank := to; rank < size; rank++ {
		if !ours[rank] {
			plan.Drain = append(plan.Drain, rank)
		}
	}
	return plan
}

// demand is the number of brokers the jobs running and waiting need at once, and why; 0 when no
// job waits for brokers. Each broker is taken to be like the others; a job that names nodes is
// counted as whole nodes.
func (s *Scaler) demand(st State) (int, string) {
	perCore, perGPU := 0, 0
	if st.Ranks > 0 {
		perCore, perGPU = st.All.Cores/st.Ranks, st.All.GPUs/st.Ranks
	}
	waiting, largest := 0, 0
	cores, gpus := st.Busy.Cores, st.Busy.GPUs
	for _, j := range st.Pending {
		if j.Held {
			continue
		}
		waiting++
		n := nodesFor(j, perCore, perGPU)
		largest = max(largest, n)
		cores += max(j.Cores, j.Nodes*perCore)
		gpus += j.GPUs
	}
	if waiting == 0 {
		return 0, ""
	}
	want := largest
	if perCore > 0 {
		want = max(want, ceilDiv(cores, perCore))
	}
	if perGPU > 0 {
		want = max(want, ceilDiv(gpus, perGPU))
	}
	jobs := "jobs wait"
	if waiting == 1 {
		jobs = "job waits"
	}
	return want, fmt.Sprintf("%d %s (the largest for %d brokers; %d cores and %d GPUs asked for with the running jobs')", waiting, jobs, largest, cores, gpus)
}

// nodesFor is the fewest brokers that hold job j.
func nodesFor(j Job, perCore, perGPU int) int {
	n := max(j.Nodes, 1)
	if perCore > 0 {
		n = max(n, ceilDiv(j.Cores, perCore))
	}
	if perGPU > 0 {
		n = max(n, ceilDiv(j.GPUs, perGPU))
	}
	return n
}

func ceilDiv(a, b int) int { return (a + b - 1) / b }
