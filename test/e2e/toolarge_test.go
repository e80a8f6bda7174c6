//go:build e2e

package e2e

import (
	"fmt"
	"strings"
	"testing"
	"time"
)

// schedulerSetup is one scheduler and queue policy the chart offers, reached at run time in
// the lead: Fluxion's queue manager reloaded with another policy, or Fluxion's modules
// swapped for flux-core's sched-simple and back.
type schedulerSetup struct {
	name string
	load [][]string // flux commands that switch the lead to it
	// Fluxion's own limit: its satisfiability check counts only the nodes up, so under fcfs a
	// job for more nodes than are up is refused as unsatisfiable, not queued (docs/hpc.md).
	refusesNodesDown bool
}

var fluxionModules = []string{"sched-fluxion-qmanager", "sched-fluxion-feasibility", "sched-fluxion-resource"}

func reloadPolicy(policy string) [][]string {
	return [][]string{{"module", "reload", "sched-fluxion-qmanager", "queue-policy=" + policy}}
}

// Jobs too large for the MiniCluster: one that no MiniCluster of maxSize brokers could run
// (more nodes than maxSize, more cores per node than a broker has) is refused at submit with
// the scheduler's reason, under Fluxion with every queue policy and under sched-simple; one
// that fits maxSize but not the brokers up waits in the queue and runs once a resize brings
// them up. One install of 1 of 2 brokers serves every scheduler and policy.
func TestJobsTooLarge(t *testing.T) {
	t.Parallel()
	ns := newNamespace(t, "toolarge")
	r := newRelease(t, ns, "flux-sample", helm4)
	r.install("--set", "size=1,maxSize=2,flux.coresPerBroker=2")
	lead := up(t, r, 1, 2)[0].Name

	toSimple := [][]string{}
	for _, m := range fluxionModules {
		toSimple = append(toSimple, []string{"module", "remove", m})
	}
	toSimple = append(toSimple, []string{"module", "load", "sched-simple"})
	toConservative := [][]string{{"module", "remove", "sched-simple"},
		{"module", "load", "sched-fluxion-resource"}, {"module", "load", "sched-fluxion-feasibility"},
		{"module", "load", "sched-fluxion-qmanager", "queue-policy=conservative"}}
	setups := []schedulerSetup{
		{name: "fluxion fcfs", refusesNodesDown: true}, // the install's
		{name: "fluxion easy", load: reloadPolicy("easy")},
		{name: "fluxion hybrid", load: reloadPolicy("hybrid")},
		{name: "sched-simple", load: toSimple},
		{name: "fluxion conservative", load: toConservative}, // last: its queued job runs after the resize
	}
	var waiting string
	for i, s := range setups {
		for _, cmd := range s.load {
			if out, stderr, err := fluxIn(ns, lead, cmd...); err != nil {
				t.Fatalf("%s: flux %s: %v %s %s", s.name, strings.Join(cmd, " "), err, out, stderr)
			}
		}
		// (a) more nodes than maxSize, (b) more cores on one node than a broker has: refused by
		// flux submit itself, with the scheduler's reason.
		for _, job := range [][]string{{"-N", "3"}, {"-N", "1", "-n", "1", "-c", "3"}} {
			args := append(append([]string{"submit"}, job...), "true")
			out, stderr, err := fluxIn(ns, lead, args...)
			if err == nil || !strings.Contains(strings.ToLower(stderr), "unsatisfiable request") {
				t.Errorf("%s: flux submit %s on a MiniCluster of at most 2 brokers of 2 cores: %q %v %q; want it refused as an unsatisfiable request",
					s.name, strings.Join(job, " "), out, err, stderr)
			}
		}
		// (c) 2 nodes while 1 of 2 is up: accepted, then queued (or Fluxion fcfs's refusal).
		out, stderr, err := fluxIn(ns, lead, "submit", "-N", "2", "hostname")
		if err != nil {
			t.Fatalf("%s: flux submit -N 2 with 1 of 2 brokers up: %v %s; want it accepted", s.name, err, stderr)
		}
		id := strings.TrimSpace(out)
		if s.refusesNodesDown {
			eventually(t, 30*time.Second, s.name+": Fluxion refuses -N 2 with 1 of 2 brokers up", func() (bool, string) {
				got, err := jobStateNote(ns, lead, id)
				return strings.HasPrefix(got, "INACTIVE") && strings.Contains(got, "unsatisfiable"), fmt.Sprint(got, err)
			})
			continue
		}
		checkQueued(t, s.name+": -N 2 with 1 of 2 brokers up", ns, lead, id)
		if i < len(setups)-1 {
			if _, stderr, err := fluxIn(ns, lead, "cancel", id); err != nil {
				t.Fatalf("flux cancel %s: %v %s", id, err, stderr)
			}
		} else {
			waiting = id
		}
	}

	if _, err := r.upgrade("--set", "size=2"); err != nil {
		t.Fatal(err)
	}
	out, stderr, err := fluxIn(ns, lead, "job", "attach", waiting)
	if hosts := strings.Fields(out); err != nil || len(hosts) != 2 || hosts[0] == hosts[1] {
		t.Errorf("the queued -N 2 job after the resize to 2 brokers: %q %v %s; want it run on both", out, err, stderr)
	}
	r.uninstallToNothing()
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
