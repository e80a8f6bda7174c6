package main

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes/fake"

	"github.com/minicluster/minicluster/keygen/sidecar"
)

// besideRun starts the sidecar in the background, as the broker pods' keys container does.
type besideRun struct {
	dir  string
	stop chan os.Signal
	done chan besideResult
}

type besideResult struct {
	code           int
	stdout, stderr string
}

func startBeside(t *testing.T, client *fake.Clientset, args ...string) *besideRun {
	t.Helper()
	r := &besideRun{dir: t.TempDir(), stop: make(chan os.Signal, 1), done: make(chan besideResult, 1)}
	e := testEnv(client, map[string]string{"POD_NAMESPACE": "ns1"})
	e.signals = func() <-chan os.Signal { return r.stop }
	go func() {
		code, out, errs := runCLI(t, e, append([]string{"sidecar", "--out=" + r.dir, "--timeout=5s"}, args...)...)
		r.done <- besideResult{code, out, errs}
	}()
	return r
}

// await waits for the status file name and returns its text.
func (r *besideRun) await(t *testing.T, name string) string {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for time.Now().Before(deadline) {
		if b, err := os.ReadFile(filepath.Join(r.dir, name)); err == nil {
			return string(b)
		}
		select {
		case res := <-r.done:
			t.Fatalf("the sidecar ended before writing %s: exit %d %s %s", name, res.code, res.stdout, res.stderr)
		case <-time.After(10 * time.Millisecond):
		}
	}
	entries, _ := os.ReadDir(r.dir)
	t.Fatalf("no %s in %s after 10 s: %v", name, r.dir, entries)
	return ""
}

// hold opens the FIFO as the entrypoint does, once it is there (read-write: it never blocks).
func (r *besideRun) hold(t *testing.T) *os.File {
	t.Helper()
	path := filepath.Join(r.dir, sidecar.Alive)
	for deadline := time.Now().Add(5 * time.Second); time.Now().Before(deadline); time.Sleep(10 * time.Millisecond) {
		if _, err := os.Stat(path); err == nil {
			break
		}
	}
	if fi, err := os.Stat(path); err != nil || fi.Mode()&os.ModeNamedPipe == 0 || fi.Mode().Perm() != 0o666 {
		t.Fatalf("%s: %v %v, want a FIFO with mode 0666", sidecar.Alive, fi, err)
	}
	f, err := os.OpenFile(path, os.O_RDWR, 0)
	if err != nil {
		t.Fatal(err)
	}
	return f
}

func (r *besideRun) ended(t *testing.T, within time.Duration) (besideResult, bool) {
	t.Helper()
	select {
	case res := <-r.done:
		return res, true
	case <-time.After(within):
		return besideResult{}, false
	}
}

// TestSidecarBesideBroker: the keys container writes .ready when the keys are there, stays while
// the broker's container holds the FIFO, and exits when it lets go (the broker ended) or at
// SIGTERM; an invalid key is reported in .invalid for the entrypoint and exits 78.
func TestSidecarBesideBroker(t *testing.T) {
	client := fake.NewClientset()
	e := testEnv(client, map[string]string{"POD_NAMESPACE": "ns1"})
	if code, out, errs := runCLI(t, e, "kube", "--release=r1"); code != exitOK {
		t.Fatalf("keygen: exit %d %s %s", code, out, errs)
	}

	r := startBeside(t, client, "--curve-name=r1-curve")
	held := r.hold(t)
	if text := r.await(t, sidecar.Ready); text != "" {
		t.Errorf("%s = %q, want empty", sidecar.Ready, text)
	}
	if _, err := os.Stat(filepath.Join(r.dir, "curve.cert")); err != nil {
		t.Errorf(".ready before the certificate: %v", err)
	}
	if res, ok := r.ended(t, 300*time.Millisecond); ok {
		t.Fatalf("the sidecar ended while the broker holds %s: %+v", sidecar.Alive, res)
	}
	held.Close()
	if res, ok := r.ended(t, 5*time.Second); !ok || res.code != exitOK {
		t.Fatalf("after the broker let go: ended %v, %+v; want exit 0", ok, res)
	}

	// SIGTERM ends it at once, held or not.
	r = startBeside(t, client, "--curve-name=r1-curve")
	held = r.hold(t)
	defer held.Close()
	r.await(t, sidecar.Ready)
	r.stop <- os.Interrupt
	if res, ok := r.ended(t, 5*time.Second); !ok || res.code != exitOK {
		t.Fatalf("after SIGTERM: ended %v, %+v; want exit 0", ok, res)
	}

	// An entrypoint that ended before the sidecar held the FIFO (it never opens it here) leaves
	// .ended: the sidecar ends too, without waiting for ever on the FIFO.
	r = startBeside(t, client, "--curve-name=r1-curve")
	r.await(t, sidecar.Ready)
	if res, ok := r.ended(t, 300*time.Millisecond); ok {
		t.Fatalf("the sidecar ended before the broker's container: %+v", res)
	}
	must(t, os.WriteFile(filepath.Join(r.dir, sidecar.Ended), nil, 0o644))
	if res, ok := r.ended(t, 5*time.Second); !ok || res.code != exitOK {
		t.Fatalf("after .ended: ended %v, %+v; want exit 0", ok, res)
	}

	// An invalid key: .invalid names the object, nothing is ready, exit 78 after the broker ended.
	s, err := client.CoreV1().Secrets("ns1").Get(context.Background(), "r1-curve", metav1.GetOptions{})
	must(t, err)
	s.Data["curve.cert"] = []byte("curve\n")
	_, err = client.CoreV1().Secrets("ns1").Update(context.Background(), s, metav1.UpdateOptions{})
	must(t, err)
	r = startBeside(t, client, "--curve-name=r1-curve")
	held = r.hold(t)
	if text := r.await(t, sidecar.Invalid); !strings.Contains(text, "Secret ns1/r1-curve its curve.cert is not a valid certificate") {
		t.Errorf("%s = %q, want the reason naming the Secret", sidecar.Invalid, text)
	}
	if _, err := os.Stat(filepath.Join(r.dir, sidecar.Ready)); err == nil {
		t.Errorf("%s written for an invalid key", sidecar.Ready)
	}
	held.Close()
	if res, ok := r.ended(t, 5*time.Second); !ok || res.code != exitConfig {
		t.Fatalf("invalid key: ended %v, %+v; want exit 78", ok, res)
	}

	// Any other failure goes to .failed: here, nothing ever fills the object. (A new clientset:
	// the fake one ignores the name selector and would list the invalid key above.)
	r = startBeside(t, fake.NewClientset(), "--curve-name=nothing", "--timeout=200ms")
	held = r.hold(t)
	if text := r.await(t, sidecar.Failed); !strings.Contains(text, "nothing") {
		t.Errorf("%s = %q, want the reason naming the object", sidecar.Failed, text)
	}
	held.Close()
	if res, ok := r.ended(t, 5*time.Second); !ok || res.code != exitFailure {
		t.Fatalf("failure: ended %v, %+v; want exit 1", ok, res)
	}
}

// TestSidecarNamespaceDeleted: with --namespace-deleted-code the sidecar deletes the Job --job and
// exits with that code when its namespace is being deleted (at SIGTERM or when the broker
// ended), and does as before when it is not or when it cannot tell.
func TestSidecarNamespaceDeleted(t *testing.T) {
	now := metav1.NewTime(time.Now())
	for _, c := range []struct {
		name      string
		namespace *corev1.Namespace
		byBroker  bool // the broker's container ends first, not a signal
		want      int
		stderr    string
	}{
		{"being deleted, SIGTERM", &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "ns1", DeletionTimestamp: &now, Finalizers: []string{"kubernetes"}}}, false, 79, "the namespace ns1 is being deleted: exit 79"},
		{"being deleted, broker ended", &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "ns1", DeletionTimestamp: &now, Finalizers: []string{"kubernetes"}}}, true, 79, "the namespace ns1 is being deleted"},
		{"live", &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "ns1"}}, false, exitOK, ""},
		{"unreadable", nil, false, exitOK, "cannot tell whether the namespace is being deleted"},
	} {
		t.Run(c.name, func(t *testing.T) {
			objs := []runtime.Object{&batchv1.Job{ObjectMeta: metav1.ObjectMeta{Name: "r1", Namespace: "ns1"}}}
			if c.namespace != nil {
				objs = append(objs, c.namespace)
			}
			client := fake.NewClientset(objs...)
			e := testEnv(client, map[string]string{"POD_NAMESPACE": "ns1"})
			if code, out, errs := runCLI(t, e, "kube", "--release=r1"); code != exitOK {
				t.Fatalf("keygen: exit %d %s %s", code, out, errs)
			}
			r := startBeside(t, client, "--curve-name=r1-curve", "--namespace-deleted-code=79", "--job=r1")
			held := r.hold(t)
			defer held.Close()
			r.await(t, sidecar.Ready)
			if c.byBroker {
				held.Close()
			} else {
				r.stop <- os.Interrupt
			}
			res, ok := r.ended(t, 10*time.Second)
			if !ok || res.code != c.want || !strings.Contains(res.stderr, c.stderr) {
				t.Fatalf("ended %v, %+v; want exit %d and %q on stderr", ok, res, c.want, c.stderr)
			}
			if c.stderr == "" && res.stderr != "" {
				t.Errorf("stderr %q, want nothing", res.stderr)
			}
			_, err := client.BatchV1().Jobs("ns1").Get(context.Background(), "r1", metav1.GetOptions{})
			if deleted := apierrors.IsNotFound(err); deleted != (c.want == 79) {
				t.Errorf("the Job deleted: %v (%v), want %v", deleted, err, c.want == 79)
			}
		})
	}
	if code, _, errs := runCLI(t, testEnv(fake.NewClientset(), nil), "sidecar", "--out=/tmp", "--namespace-deleted-code=300"); code != exitUsage || !strings.Contains(errs, "--namespace-deleted-code=300 is not an exit code") {
		t.Errorf("--namespace-deleted-code=300: exit %d %s, want a usage error naming it", code, errs)
	}
}
