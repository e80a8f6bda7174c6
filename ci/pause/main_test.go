package main

import (
	"os/exec"
	"path/filepath"
	"syscall"
	"testing"
	"time"
)

// TestStopsOnSignal runs the built program: it keeps running until signalled, then exits 0.
func TestStopsOnSignal(t *testing.T) {
	bin := filepath.Join(t.TempDir(), "pause")
	if out, err := exec.Command("go", "build", "-o", bin, ".").CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	for _, sig := range []syscall.Signal{syscall.SIGTERM, syscall.SIGINT} {
		cmd := exec.Command(bin)
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		done := make(chan error, 1)
		go func() { done <- cmd.Wait() }()
		select {
		case err := <-done:
			t.Fatalf("pause exited on its own: %v", err)
		case <-time.After(300 * time.Millisecond):
		}
		start := time.Now()
		cmd.Process.Signal(sig)
		select {
		case err := <-done:
			if err != nil {
				t.Fatalf("after %v: exit %v, want 0", sig, err)
			}
			t.Logf("%v: exited 0 after %v", sig, time.Since(start))
		case <-time.After(5 * time.Second):
			cmd.Process.Kill()
			t.Fatalf("still running 5s after %v", sig)
		}
	}
}
