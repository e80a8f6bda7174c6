package sidecar

import (
	"io"
	"os"
	"path/filepath"
	"testing"
	"time"
)

// runBeside runs RunBesideBroker with a fetch that succeeds and returns when it has returned.
func runBeside(t *testing.T, dir string) <-chan error {
	t.Helper()
	done := make(chan error, 1)
	go func() { done <- RunBesideBroker(dir, func() error { return nil }, nil, io.Discard) }()
	return done
}

func waitFor(t *testing.T, done <-chan error, what string) {
	t.Helper()
	select {
	case err := <-done:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(5 * time.Second):
		t.Fatalf("the sidecar did not end after %s", what)
	}
}

// The entrypoint holds the FIFO, finds .ready, then ends: the FIFO's EOF ends the sidecar.
func TestBesideBrokerEndsWithTheEntrypointsFIFO(t *testing.T) {
	dir := t.TempDir()
	done := runBeside(t, dir)
	var fifo *os.File
	for fifo == nil {
		if fi, err := os.Stat(filepath.Join(dir, Alive)); err == nil && fi.Mode()&os.ModeNamedPipe != 0 {
			f, err := os.OpenFile(filepath.Join(dir, Alive), os.O_WRONLY, 0)
			if err != nil {
				t.Fatal(err)
			}
			fifo = f
		}
		time.Sleep(10 * time.Millisecond)
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, Ready)); err == nil {
			break
		}
		time.Sleep(10 * time.Millisecond)
	}
	select {
	case <-done:
		t.Fatal("the sidecar ended while the entrypoint held the FIFO")
	case <-time.After(300 * time.Millisecond):
	}
	fifo.Close()
	waitFor(t, done, "the FIFO's last writer closed it")
}

// An entrypoint that ends without ever opening the FIFO leaves .ended: the sidecar sees it.
func TestBesideBrokerEndsWithEndedFile(t *testing.T) {
	dir := t.TempDir()
	done := runBeside(t, dir)
	for {
		if _, err := os.Stat(filepath.Join(dir, Ready)); err == nil {
			break
		}
		time.Sleep(10 * time.Millisecond)
	}
	if err := os.WriteFile(filepath.Join(dir, Ended), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	waitFor(t, done, ".ended was written")
}

// TestHandedKeysDeleted: the copies every user of the pod can read are deleted once the
// entrypoint writes .installed, and at the latest when the broker's container ends.
func TestHandedKeysDeleted(t *testing.T) {
	for _, installed := range []bool{true, false} {
		dir := t.TempDir()
		if err := os.Mkdir(filepath.Join(dir, APIDir), 0o755); err != nil {
			t.Fatal(err)
		}
		for _, f := range Handed {
			if err := os.WriteFile(filepath.Join(dir, f), []byte("k"), 0o444); err != nil {
				t.Fatal(err)
			}
		}
		done := runBeside(t, dir)
		fifo := holdFIFO(t, dir)
		if installed {
			if err := os.WriteFile(filepath.Join(dir, Installed), nil, 0o644); err != nil {
				t.Fatal(err)
			}
			deadline := time.Now().Add(5 * time.Second)
			for _, f := range Handed {
				for {
					if _, err := os.Stat(filepath.Join(dir, f)); os.IsNotExist(err) {
						break
					}
					if time.Now().After(deadline) {
						t.Fatalf("%s is still there after .installed", f)
					}
					time.Sleep(20 * time.Millisecond)
				}
			}
		}
		fifo.Close()
		waitFor(t, done, "the FIFO's last writer closed it")
		for _, f := range Handed {
			if _, err := os.Stat(filepath.Join(dir, f)); !os.IsNotExist(err) {
				t.Errorf("installed=%v: %s left behind (%v)", installed, f, err)
			}
		}
	}
}

// holdFIFO opens the sidecar's FIFO as the entrypoint does.
func holdFIFO(t *testing.T, dir string) *os.File {
	t.Helper()
	for {
		if fi, err := os.Stat(filepath.Join(dir, Alive)); err == nil && fi.Mode()&os.ModeNamedPipe != 0 {
			f, err := os.OpenFile(filepath.Join(dir, Alive), os.O_WRONLY, 0)
			if err != nil {
				t.Fatal(err)
			}
			return f
		}
		time.Sleep(10 * time.Millisecond)
	}
}
