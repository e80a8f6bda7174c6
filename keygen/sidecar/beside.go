package sidecar

import (
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"github.com/minicluster/minicluster/keygen/kube"
)

// Files the sidecar keeps in its directory (the pod's shared keys volume) for the broker's
// supervisor (package supervisor, which charts/minicluster/files/entrypoint.sh execs). The
// broker's container starts at the same time as this one (an init container would delay it by
// up to a second: the kubelet notices that an init container ended only at its next 1 s
// relist), so the two meet there.
const (
	// Alive is a FIFO the supervisor holds open for as long as its container lives; its end
	// (EOF here) is the sidecar's cue to end too, so the pod can complete.
	Alive = ".alive"
	// Ended is written by the supervisor as it exits. It covers a supervisor that ended before
	// the sidecar's open of the FIFO returned (that open would then wait for ever); the FIFO
	// covers a supervisor killed before it could write anything.
	Ended = ".ended"
	// Ready: the keys are written and the parent broker is listed; start the broker.
	Ready = ".ready"
	// Invalid holds the error about a key object that is not a valid key: the broker cannot
	// start (the supervisor exits with the chart's cannot-start code, which fails the Job).
	Invalid = ".invalid"
	// Installed is written by the supervisor once it has made its private copies of the keys:
	// the copies here, which every user of the pod can read, are then deleted.
	Installed = ".installed"
	// Failed holds any other error (a timeout, an API error waiting cannot mend): the pod fails
	// and the Job may start another.
	Failed = ".failed"
)

// RunBesideBroker runs fetch beside the broker's container: it reports the outcome through
// files in dir, then waits until the broker's container has ended (or a signal from stop:
// SIGTERM and SIGINT in the pod) and returns fetch's error.
func RunBesideBroker(dir string, fetch func() error, stop <-chan os.Signal, log io.Writer) error {
	alive := filepath.Join(dir, Alive)
	if err := makeFIFO(alive); err != nil {
		return err
	}
	// Open the FIFO now, so that it is held from the supervisor's first moments on.
	opened, closed := readToEOF(alive)
	err := fetch()
	status, text := Ready, ""
	var invalid InvalidKeyError
	switch {
	case errors.As(err, &invalid):
		status, text = Invalid, err.Error()+"\n"
	case err != nil:
		status, text = Failed, err.Error()+"\n"
	}
	if werr := writeStatus(dir, status, text); werr != nil {
		return errors.Join(err, werr)
	}
	if err != nil {
		fmt.Fprintf(log, "flux-keygen: %v (told the broker's entrypoint through %s)\n", err, filepath.Join(dir, status))
	}
	removed := make(chan struct{})
	go func() {
		defer close(removed)
		if err := removeWhenInstalled(dir, closed); err != nil {
			fmt.Fprintf(log, "flux-keygen: %v\n", err)
		}
	}()
	waitEnded(opened, closed, filepath.Join(dir, Ended), stop)
	select { // the last look for .installed, if it had not come
	case <-removed:
	case <-time.After(200 * time.Millisecond):
	}
	return err
}

// Supervisor is the name of the broker's supervisor (minicluster-broker) in the keys volume,
// where the chart has the sidecar copy it (--supervisor) for the broker's container to exec.
const Supervisor = "minicluster-broker"

// Handed are the files of the keys volume that every user of the pod can read, the keys and
// the API's credentials and TLS key: deleted once the supervisor has its private copies. So is
// the supervisor's program: it runs by then (the kernel keeps its file while it does), and it
// starts nothing of its own file after it has written .installed.
var Handed = []string{kube.CertKey, kube.MungeKey, filepath.Join(APIDir, "user"), filepath.Join(APIDir, "token"),
	filepath.Join(APIDir, "secret-key"), filepath.Join(APIDir, "tls.crt"), filepath.Join(APIDir, "tls.key"), Supervisor}

// removeWhenInstalled deletes the handed files once dir holds Installed, or at once when the
// broker's container has ended (closed): a pod whose broker never started keeps no key either.
func removeWhenInstalled(dir string, closed <-chan struct{}) error {
	tick := time.NewTicker(50 * time.Millisecond)
	defer tick.Stop()
	for done := false; !done; {
		select {
		case <-closed:
			done = true
		case <-tick.C:
			_, err := os.Stat(filepath.Join(dir, Installed))
			done = err == nil
		}
	}
	var errs []error
	for _, f := range Handed {
		if err := os.Remove(filepath.Join(dir, f)); err != nil && !errors.Is(err, os.ErrNotExist) {
			errs = append(errs, fmt.Errorf("deleting the handed key %s: %w", f, err))
		}
	}
	return errors.Join(errs...)
}

// makeFIFO makes path a FIFO that any user of the pod may open (the broker may run as any
// user); an existing FIFO is kept.
func makeFIFO(path string) error {
	if err := syscall.Mkfifo(path, 0o666); err != nil && !errors.Is(err, os.ErrExist) {
		return fmt.Errorf("making the FIFO %s: %w", path, err)
	}
	if fi, err := os.Stat(path); err != nil || fi.Mode()&os.ModeNamedPipe == 0 {
		return fmt.Errorf("%s exists and is not a FIFO", path)
	}
	// The umask took bits off: set them again.
	return os.Chmod(path, 0o666)
}

// writeStatus writes name through a rename, so that the supervisor never reads half of it.
func writeStatus(dir, name, text string) error {
	return replaceFile(filepath.Join(dir, name), 0o444, strings.NewReader(text))
}

// readToEOF opens the FIFO for reading (blocking until the supervisor holds it) and reads it
// until no writer is left: opened is closed once the open returns, closed at the EOF.
func readToEOF(fifo string) (opened, closed <-chan struct{}) {
	open, done := make(chan struct{}), make(chan struct{})
	go func() {
		defer close(done)
		f, err := os.Open(fifo)
		close(open)
		if err != nil {
			return
		}
		defer f.Close()
		_, _ = io.Copy(io.Discard, f) // EOF: no writer is left
	}()
	return open, done
}

// waitEnded returns once the broker's container has ended (closed reports EOF on the FIFO, or
// the entrypoint wrote the file ended), or at a signal from stop. The file is looked for only
// until the FIFO's open returns: from then on its EOF says it all, and an idle sidecar never
// wakes up.
func waitEnded(opened, closed <-chan struct{}, ended string, stop <-chan os.Signal) {
	tick := time.NewTicker(100 * time.Millisecond)
	defer tick.Stop()
	for {
		select {
		case <-closed:
			return
		case <-stop:
			return
		case <-opened:
			tick.Stop()
			opened = nil // a nil channel: never again
		case <-tick.C:
			if _, err := os.Stat(ended); err == nil {
				return
			}
		}
	}
}
