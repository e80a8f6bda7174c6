//go:build e2e

package e2e

import (
	"fmt"
	"strconv"
	"strings"
	"testing"
	"time"
)

// schedulerSetup is one scheduler and queue policy the chart offers, reached at run time in
// the lead: Fluxion's queue manager reloaded with another policy, or Fluxion's modules
// swapped for flux-core's sched-simple and back. One install serves them all.
type schedulerSetup struct {
	name string
	load [][]string // flux commands that switch the lead to it
}

var fluxionModules = []string{"sched-fluxion-qmanager", "sched-fluxion-feasibility", "sched-fluxion-resource"}

func reloadPolicy(policy string) [][]string {
	return [][]string{{"module", "reload", "sched-fluxion-qmanager", "queue-policy=" + policy}}
}

// checkTooLarge submits jobs too large for a MiniCluster of size of maxSize brokers of cores
// cores each, under Fluxion with every queue policy and under sched-simple, switched at run
// time in the lead: one no MiniCluster of maxSize brokers could run (more nodes than maxSize,
// more cores on one node than a broker has) is refused at submit with the scheduler's reason;
// one that fits maxSize but not the brokers up (more nodes, or more cores in all) is refused at
// submit too, saying to grow the MiniCluster first (files/validate-brokers-up.py). The lead is
// left under Fluxion's fcfs.
func checkTooLarge(t *testing.T, ns, lead string, size, maxSize, cores int) {
	t.Helper()
	toSimple := [][]string{}
	for _, m := range fluxionModules {
		toSimple = append(toSimple, []string{"module", "remove", m})
	}
	toSimple = append(toSimple, []string{"module", "load", "sched-simple"})
	toFluxion := [][]string{{"module", "remove", "sched-simple"},
		{"module", "load", "sched-fluxion-resource"}, {"module", "load", "sched-fluxion-feasibility"},
		{"module", "load", "sched-fluxion-qmanager", "queue-policy=conservative"}}
	setups := []schedulerSetup{
		{name: "fluxion easy", load: reloadPolicy("easy")},
		{name: "fluxion hybrid", load: reloadPolicy("hybrid")},
		{name: "sched-simple", load: toSimple},
		{name: "fluxion conservative", load: toFluxion},
		{name: "fluxion fcfs", load: reloadPolicy("fcfs")},
	}
	never := [][]string{{"-N", strconv.Itoa(maxSize + 1)}, {"-N", "1", "-n", "1", "-c", strconv.Itoa(cores + 1)}}
	notYet := [][]string{{"-N", strconv.Itoa(size + 1)}, {"-n", strconv.Itoa(size*cores + 1)}}
	for _, s := range setups {
		for _, cmd := range s.load {
			if out, stderr, err := fluxIn(ns, lead, cmd...); err != nil {
				t.Fatalf("%s: flux %s: %v %s %s", s.name, strings.Join(cmd, " "), err, out, stderr)
			}
		}
		for _, tc := range []struct {
			jobs [][]string
			want string
		}{{never, "unsatisfiable request"}, {notYet, fmt.Sprintf("grow it to %d brokers first", size+1)}} {
			for _, job := range tc.jobs {
				args := append(append([]string{"submit"}, job...), "true")
				out, stderr, err := fluxIn(ns, lead, args...)
				if err == nil || !strings.Contains(strings.ToLower(stderr), tc.want) {
					t.Errorf("%s: flux submit %s with %d of at most %d brokers of %d cores up: %q %v %q; want it refused at submit with %q",
						s.name, strings.Join(job, " "), size, maxSize, cores, out, err, stderr, tc.want)
				}
			}
		}
	}
}

// checkQueued: job id (what) reaches the scheduler and stays there, neither refused nor run.
func checkQueued(t *testing.T, what, ns, lead, id string) {
	t.Helper()
	eventually(t, 30*time.Second, what+": the job reaches the queue", func() (bool, string) {
		got, err := jobStateNote(ns, lead, id)
		return strings.HasPrefix(got, "SCHED"), fmt.Sprint(got, err)
	})
	time.Sleep(2 * time.Second) // a scheduler refuses in its next loop, in milliseconds
	if got, err := jobStateNote(ns, lead, id); err != nil || !strings.HasPrefix(got, "SCHED") {
		t.Errorf("%s: state and exception %q (%v), want it waiting in the queue", what, got, err)
	}
}

// jobStateNote is a job's state name and the note of its exception, if any.
func jobStateNote(ns, lead, id string) (string, error) {
	out, stderr, err := fluxIn(ns, lead, "jobs", "--no-header", "-o", "{state} {exception.note}", id)
	if err != nil {
		return "", fmt.Errorf("flux jobs %s: %v %s", id, err, stderr)
	}
	return strings.TrimSpace(out), nil
}

// checkFeasibilityAskedPerShape: the chart's validator (files/validate-feasible.py) asks the
// scheduler's feasibility.check once for each shape of request in each of job-ingest's
// validator workers (at most 4), not once for each job; a shape the scheduler refused is asked
// again, and refused again with its reason. Counted by the requests Fluxion's feasibility
// module received (`flux module stats`, whose own reading adds to the count: read until two
// readings in a row add the same, to know by how much; the module was loaded again a moment
// before, by checkTooLarge, and may still receive its first requests).
func checkFeasibilityAskedPerShape(t *testing.T, ns, lead string, maxSize int) {
	t.Helper()
	const module = "sched-fluxion-feasibility"
	received := func() int {
		out, stderr, err := fluxIn(ns, lead, "module", "stats", "--parse", "rx.request", module)
		n, perr := strconv.Atoi(strings.TrimSpace(out))
		if err != nil || perr != nil {
			t.Fatalf("flux module stats --parse rx.request %s: %q %v %s", module, out, err, stderr)
		}
		return n
	}
	before, reading := received(), -1
	for i := 0; i < 10; i++ {
		now := received()
		added := now - before
		before = now
		if added == reading {
			break
		}
		reading = added
	}
	const jobs = 20
	if out, stderr, err := fluxIn(ns, lead, "submit", "--cc=1-"+strconv.Itoa(jobs), "--quiet", "--wait", "-N", "1", "true"); err != nil {
		t.Fatalf("flux submit --cc=1-%d -N 1 true: %q %v %s", jobs, out, err, stderr)
	}
	if asked := received() - before - reading; asked < 1 || asked > 4 {
		t.Errorf("%d jobs of one shape: the scheduler's feasibility check was asked %d times, want 1 to 4 (once in each validator worker)", jobs, asked)
	}
	// Each submit of a refused shape asks the scheduler again (a refusal is not remembered).
	// Counted submit by submit, at least once each: on a loaded machine a request from
	// elsewhere has reached the module between the readings (3 where 2 were made).
	for _, nth := range []string{"first", "second"} {
		before = received()
		out, stderr, err := fluxIn(ns, lead, "submit", "-N", strconv.Itoa(maxSize+1), "true")
		if err == nil || !strings.Contains(strings.ToLower(stderr), "unsatisfiable request") {
			t.Errorf("flux submit -N %d (more than maxSize) a %s time: %q %v %q; want it refused with the scheduler's reason", maxSize+1, nth, out, err, stderr)
		}
		if asked := received() - before - reading; asked < 1 {
			t.Errorf("a refused shape submitted a %s time: the scheduler's feasibility check was asked %d times, want it asked (a refusal is not remembered)", nth, asked)
		}
	}
}
