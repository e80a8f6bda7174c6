//go:build e2e

package e2e

import (
	"context"
	"fmt"
	"os"
	"slices"
	"strings"
	"sync"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// timeline notes when each pod of a namespace was first seen in each state (a container
// running, a container ended and how, the pod's phase, the pod gone) and when each Job
// finished, from lists every 50 ms: where the time of an ephemeral run goes, for BENCH_TRACE.
// A nil timeline (BENCH_TRACE unset) notes nothing.
type timeline struct {
	start time.Time
	mu    sync.Mutex
	seen  map[string]time.Duration
	stop  chan struct{}
	done  chan struct{}
}

// traceIfAsked starts a timeline of ns when BENCH_TRACE is set, and is nil otherwise.
func traceIfAsked(ns string) *timeline {
	if os.Getenv("BENCH_TRACE") == "" {
		return nil
	}
	t := &timeline{start: time.Now(), seen: map[string]time.Duration{}, stop: make(chan struct{}), done: make(chan struct{})}
	go func() {
		defer close(t.done)
		pods := map[string]bool{}
		for {
			t.poll(ns, pods)
			select {
			case <-t.stop:
				return
			case <-time.After(50 * time.Millisecond):
			}
		}
	}()
	return t
}

// note records what at the time since start, unless seen before: the polls' events, and the
// caller's own such as a command returning.
func (t *timeline) note(what string) {
	if t == nil {
		return
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	if _, ok := t.seen[what]; !ok {
		t.seen[what] = time.Since(t.start)
	}
}

func (t *timeline) poll(ns string, known map[string]bool) {
	ctx := context.Background()
	list, err := kube.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{})
	if err != nil {
		return
	}
	now := map[string]bool{}
	for _, p := range list.Items {
		now[p.Name] = true
		known[p.Name] = true
		t.note(fmt.Sprintf("pod %s %s", p.Name, p.Status.Phase))
		if p.DeletionTimestamp != nil {
			t.note(fmt.Sprintf("pod %s being deleted", p.Name))
		}
		for _, c := range slices.Concat(p.Status.InitContainerStatuses, p.Status.ContainerStatuses) {
			switch {
			case c.State.Running != nil:
				t.note(fmt.Sprintf("pod %s: %s running", p.Name, c.Name))
			case c.State.Terminated != nil:
				t.note(fmt.Sprintf("pod %s: %s ended (%d, %s)", p.Name, c.Name, c.State.Terminated.ExitCode, c.State.Terminated.Reason))
			}
		}
	}
	for name := range known {
		if !now[name] {
			t.note(fmt.Sprintf("pod %s gone", name))
		}
	}
	jobs, err := kube.BatchV1().Jobs(ns).List(ctx, metav1.ListOptions{})
	if err != nil {
		return
	}
	for _, j := range jobs.Items {
		for _, c := range j.Status.Conditions {
			if c.Status == "True" && (c.Type == batchv1.JobComplete || c.Type == batchv1.JobFailed || c.Type == batchv1.JobSuccessCriteriaMet) {
				t.note(fmt.Sprintf("Job %s %s", j.Name, c.Type))
			}
		}
	}
}

// end stops the polls and returns the events in order, one per line ("" when nil).
func (t *timeline) end() string {
	if t == nil {
		return ""
	}
	close(t.stop)
	<-t.done
	t.mu.Lock()
	defer t.mu.Unlock()
	var lines []string
	for what, at := range t.seen {
		lines = append(lines, fmt.Sprintf("%8.3f s  %s", at.Seconds(), what))
	}
	slices.Sort(lines)
	return strings.Join(lines, "\n")
}
