//go:build e2e

package e2e

import (
	"context"
	"crypto/rand"
	"fmt"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// rcTime is the broker's report of an rc script's run, e.g.
// "rc3.0: flux modprobe rc3 Exited (rc=0) 0.4s".
var rcTime = regexp.MustCompile(`rc([13])\.0: .*Exited \(rc=(\d+)\) ([0-9.]+)s`)

// rcSeconds returns how long rc1 or rc3 ("1", "3") took by the lead broker's log ("" if absent).
func rcSeconds(log, rc string) string {
	for _, m := range rcTime.FindAllStringSubmatch(log, -1) {
		if m[1] == rc {
			return m[3] + "s (rc=" + m[2] + ")"
		}
	}
	return ""
}

// stateJob submits `echo <word>` to the lead's Flux, waits for it and returns its id.
func stateJob(t *testing.T, ns, lead, word string) string {
	t.Helper()
	out, stderr, err := fluxIn(ns, lead, "submit", "echo", word)
	if err != nil {
		t.Fatalf("flux submit echo %s: %v\n%s%s", word, err, out, stderr)
	}
	id := strings.TrimSpace(out)
	checkAttach(t, ns, lead, id, word)
	return id
}

// checkAttach: flux job attach <id> prints word (the job's output, from Flux's KVS).
func checkAttach(t *testing.T, ns, lead, id, word string) {
	t.Helper()
	out, stderr, err := fluxIn(ns, lead, "job", "attach", id)
	if err != nil || strings.TrimSpace(out) != word {
		t.Errorf("flux job attach %s: %v, printed %q (%s), want %q", id, err, out, strings.TrimSpace(stderr), word)
	}
}

// checkJobsListed: flux jobs -a lists every one of ids.
func checkJobsListed(t *testing.T, ns, lead string, ids ...string) {
	t.Helper()
	out, stderr, err := fluxIn(ns, lead, "jobs", "-a", "--no-header", "--format", "{id.f58}")
	if err != nil {
		t.Fatalf("flux jobs -a: %v\n%s", err, stderr)
	}
	listed := strings.Fields(out)
	for _, id := range ids {
		if !slices.Contains(listed, id) {
			t.Errorf("flux jobs -a lists %v, not the earlier job %s", listed, id)
		}
	}
}

func word(prefix string) string {
	b := make([]byte, 4)
	_, _ = rand.Read(b)
	return fmt.Sprintf("%s-%x", prefix, b)
}

// TestState: an interactive MiniCluster with flux.state keeps its jobs and their output across
// an uninstall and install (the chart's claim is kept) and across the loss of its lead pod (the
// Job's new lead restores what the old one dumped on SIGTERM). The test deletes the claim.
func TestState(t *testing.T) {
	t.Parallel()
	class := envOr("E2E_STORAGE_CLASS", "local-path")
	ns := newNamespace(t, "state")
	r := newRelease(t, ns, "flux-sample", helm3)
	args := []string{"--set", "size=2,flux.state.enabled=true,flux.state.storageClassName=" + class}
	claim := r.name + "-state"
	pvcs := kube.CoreV1().PersistentVolumeClaims(ns)
	ctx := context.Background()

	r.install(args...)
	pods := waitFluxUp(t, ns, r.name, 2, 16, wiringTimeout)
	lead := pods[0].Name
	if log := leadLog(t, r); !strings.Contains(log, "flux.state: no archive at") {
		t.Errorf("a first install should start empty; the lead's log:\n%s", log)
	}
	w1, w2 := word("hello"), word("run")
	id1 := stateJob(t, ns, lead, w1)
	out, stderr, err := fluxIn(ns, lead, "run", "-N", "2", "--label-io", "echo", w2)
	if err != nil || strings.Count(out, w2) != 2 {
		t.Fatalf("flux run -N 2 echo %s: %v\n%s%s", w2, err, out, stderr)
	}
	ids, _, err := fluxIn(ns, lead, "jobs", "-a", "--no-header", "--format", "{id.f58}")
	if err != nil || len(strings.Fields(ids)) != 2 {
		t.Fatalf("flux jobs -a: %v: %q", err, ids)
	}

	// Uninstall: the lead dumps on SIGTERM; the claim stays.
	follow := followLogs(t, ns, lead, "flux")
	start := time.Now()
	r.uninstall()
	waitNothingLeft(t, ns, r.name, time.Minute)
	gone := time.Since(start)
	log := follow()
	if !strings.Contains(log, "flux.state: dumped to /minicluster/state/flux-content.tgz") {
		t.Fatalf("the lead did not dump its state on uninstall; its log from then:\n%s", log)
	}
	t.Logf("uninstall: pods gone in %.1fs; the lead's rc3 (the content dump included) took %s", gone.Seconds(), rcSeconds(log, "3"))
	pvc, err := pvcs.Get(ctx, claim, metav1.GetOptions{})
	if err != nil {
		t.Fatalf("the state claim %s is gone after helm uninstall: %v", claim, err)
	}
	if pvc.Annotations["helm.sh/resource-policy"] != "keep" {
		t.Errorf("claim %s annotations %v, want helm.sh/resource-policy: keep", claim, pvc.Annotations)
	}

	// Install again with the same state: the earlier jobs and their output are there.
	start = time.Now()
	r.install(args...)
	pods = waitFluxUp(t, ns, r.name, 2, 16, wiringTimeout)
	lead = pods[0].Name
	log = leadLog(t, r)
	if !strings.Contains(log, "flux.state: restoring Flux's state from") {
		t.Errorf("the new lead did not restore; its log:\n%s", log)
	}
	t.Logf("install again: Flux up with the state in %.1fs; the lead's rc1 (the restore included) took %s", time.Since(start).Seconds(), rcSeconds(log, "1"))
	checkJobsListed(t, ns, lead, strings.Fields(ids)...)
	checkAttach(t, ns, lead, id1, w1)
	if out, err := r.upgrade("--set", "flux.state.dumpTimeoutSeconds=5"); err == nil || !strings.Contains(out, "only size can change on a running MiniCluster") {
		t.Errorf("helm upgrade changing flux.state: %v, want it refused (only size can change)", err)
	}

	// The lead pod deleted: the Job's new lead restores what the old one dumped.
	w3 := word("again")
	id3 := stateJob(t, ns, lead, w3)
	follow = followLogs(t, ns, lead, "flux")
	start = time.Now()
	if err := kube.CoreV1().Pods(ns).Delete(ctx, lead, metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	log = follow()
	t.Logf("lead deleted: its rc3 took %s", rcSeconds(log, "3"))
	var newLead string
	eventually(t, wiringTimeout, "a new lead", func() (bool, string) {
		p, _, err := brokerPods(ns, r.name)
		if err != nil {
			return false, err.Error()
		}
		newLead = p[0].Name
		return newLead != "" && newLead != lead, "lead " + newLead
	})
	pods = waitFluxUp(t, ns, r.name, 2, 16, wiringTimeout)
	lead = pods[0].Name
	t.Logf("lead deleted: the new lead %s has Flux up with the state %.1fs after the deletion", lead, time.Since(start).Seconds())
	checkJobsListed(t, ns, lead, append(strings.Fields(ids), id3)...)
	checkAttach(t, ns, lead, id3, w3)
	checkAttach(t, ns, lead, id1, w1)

	// A dump that hangs (a FIFO at its temporary name: flux dump blocks opening it, as on a
	// stuck file server) or fails (a directory there) ends the lead's pod well within the grace
	// period, and keeps the archive of the previous dump: the job submitted since is not restored.
	ids = strings.Join(append(strings.Fields(ids), id3), " ")
	for _, c := range []struct{ name, prep, want string }{
		{"hangs", "mkfifo", "has taken more than flux.state.dumpTimeoutSeconds=10: killing it; the previous archive is kept"},
		{"fails", "mkdir", "the content dump did not finish; keeping the previous archive"},
	} {
		if out, stderr, err := execIn(ns, lead, "flux", c.prep, "/minicluster/state/.partial-flux-content.tgz"); err != nil {
			t.Fatalf("%s: %v\n%s%s", c.prep, err, out, stderr)
		}
		lost := stateJob(t, ns, lead, word("lost"))
		follow = followLogs(t, ns, lead, "flux")
		start = time.Now()
		if err := kube.CoreV1().Pods(ns).Delete(ctx, lead, metav1.DeleteOptions{}); err != nil {
			t.Fatal(err)
		}
		log = follow()
		stopped := time.Since(start)
		t.Logf("a dump that %s: the lead's container ended %.1fs after its deletion (grace period 30 s)", c.name, stopped.Seconds())
		if !strings.Contains(log, c.want) {
			t.Errorf("a dump that %s: the lead's log lacks %q:\n%s", c.name, c.want, log)
		}
		if stopped > 20*time.Second {
			t.Errorf("a dump that %s: the lead took %.1fs to stop, want it within flux.state.dumpTimeoutSeconds (10 s) + a few", c.name, stopped.Seconds())
		}
		old := lead
		eventually(t, wiringTimeout, "a new lead", func() (bool, string) {
			p, _, err := brokerPods(ns, r.name)
			if err != nil {
				return false, err.Error()
			}
			return p[0].Name != "" && p[0].Name != old, "lead " + p[0].Name
		})
		pods = waitFluxUp(t, ns, r.name, 2, 16, wiringTimeout)
		lead = pods[0].Name
		checkJobsListed(t, ns, lead, strings.Fields(ids)...)
		if out, _, _ := fluxIn(ns, lead, "jobs", "-a", "--no-header", "--format", "{id.f58}"); slices.Contains(strings.Fields(out), lost) {
			t.Errorf("a dump that %s: job %s, submitted after the last good dump, was restored: the archive was replaced", c.name, lost)
		}
	}

	r.uninstallToNothing()
	// The claim outlives the release until it is deleted; its volume goes with it.
	pvc, err = pvcs.Get(ctx, claim, metav1.GetOptions{})
	if err != nil {
		t.Fatalf("the state claim is gone after the second uninstall: %v", err)
	}
	if err := pvcs.Delete(ctx, claim, metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	volume := pvc.Spec.VolumeName
	eventually(t, time.Minute, "the claim and its volume deleted", func() (bool, string) {
		if _, err := pvcs.Get(ctx, claim, metav1.GetOptions{}); !apierrors.IsNotFound(err) {
			return false, fmt.Sprintf("claim %s: %v", claim, err)
		}
		if volume == "" {
			return true, ""
		}
		_, err := kube.CoreV1().PersistentVolumes().Get(ctx, volume, metav1.GetOptions{})
		return apierrors.IsNotFound(err), fmt.Sprintf("volume %s: %v", volume, err)
	})
}

// TestStateEphemeral: an ephemeral MiniCluster with flux.state takes Flux's full shutdown even
// with flux.ephemeralExit=fast (the default), dumps when its command ends, and the next install
// of the same release finds the earlier run's job.
func TestStateEphemeral(t *testing.T) {
	t.Parallel()
	ns := newNamespace(t, "state-eph")
	r := newRelease(t, ns, "flux-sample", helm4)
	w := word("eph")
	args := []string{"--set", "size=2,flux.state.enabled=true,flux.state.storageClassName=" + envOr("E2E_STORAGE_CLASS", "local-path"),
		"--set-string", "command=flux jobs -a --no-header --format 'earlier {id.f58}'; flux run -N 2 --label-io echo " + w}
	var first string
	for run := 1; run <= 2; run++ {
		r.install(args...)
		waitLeadEnded(t, r, 3*time.Minute)
		waitJobComplete(t, r, time.Minute)
		log := leadLog(t, r)
		for _, want := range []string{"0: " + w, "1: " + w, "flux.ephemeralExit=fast: flux.state dumps the content store, which needs Flux's whole shutdown: taking it",
			"flux.state: dumped to /minicluster/state/flux-content.tgz"} {
			if !strings.Contains(log, want) {
				t.Errorf("run %d: the lead's log lacks %q:\n%s", run, want, log)
			}
		}
		t.Logf("run %d: the lead's rc1 took %s, its rc3 %s", run, rcSeconds(log, "1"), rcSeconds(log, "3"))
		if run == 1 {
			first = log
		} else if !strings.Contains(log, "earlier ") {
			t.Errorf("the second run's flux jobs -a listed no job of the first run:\n%s\nfirst run:\n%s", log, first)
		}
		r.uninstallToNothing()
	}
	if err := kube.CoreV1().PersistentVolumeClaims(ns).Delete(context.Background(), r.name+"-state", metav1.DeleteOptions{}); err != nil {
		t.Errorf("delete the kept claim: %v", err)
	}
}
