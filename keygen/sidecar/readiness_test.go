package sidecar

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"testing"
	"time"
)

func TestServeReadinessFollowsTheOnlineFile(t *testing.T) {
	dir := t.TempDir()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- ServeReadiness(ctx, ln, dir) }()
	status := func() int {
		for range 50 {
			resp, err := http.Get(fmt.Sprintf("http://%s/readyz", addr))
			if err == nil {
				resp.Body.Close()
				return resp.StatusCode
			}
			time.Sleep(20 * time.Millisecond)
		}
		t.Fatal("the readiness server does not answer")
		return 0
	}
	if s := status(); s != http.StatusServiceUnavailable {
		t.Errorf("before %s: %d, want 503", Online, s)
	}
	if err := os.WriteFile(filepath.Join(dir, Online), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	if s := status(); s != http.StatusOK {
		t.Errorf("with %s: %d, want 200", Online, s)
	}
	if err := os.Remove(filepath.Join(dir, Online)); err != nil {
		t.Fatal(err)
	}
	if s := status(); s != http.StatusServiceUnavailable {
		t.Errorf("after %s is removed: %d, want 503", Online, s)
	}
	cancel()
	if err := <-done; err != nil {
		t.Errorf("ServeReadiness after its context ended: %v", err)
	}
}

func TestServeReadinessHoldsUntilOnline(t *testing.T) {
	dir := t.TempDir()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go func() { _ = ServeReadiness(ctx, ln, dir) }()
	get := func(query string) (int, time.Duration) {
		start := time.Now()
		resp, err := http.Get(fmt.Sprintf("http://%s/readyz?%s", ln.Addr(), query))
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		return resp.StatusCode, time.Since(start)
	}
	online := filepath.Join(dir, Online)

	// Nothing changes: the answer of the moment, after the hold.
	if s, took := get("hold=300ms"); s != http.StatusServiceUnavailable || took < 300*time.Millisecond {
		t.Errorf("offline, hold=300ms: %d after %v, want 503 after 300ms", s, took)
	}
	// The broker comes online during the hold: 200 at once, not at the hold's end.
	go func() {
		time.Sleep(300 * time.Millisecond)
		_ = os.WriteFile(online, nil, 0o644)
	}()
	if s, took := get("hold=20s"); s != http.StatusOK || took > 5*time.Second {
		t.Errorf("online during hold=20s: %d after %v, want 200 soon after 300ms", s, took)
	}
	// An online broker is answered at once, hold or not.
	if s, took := get("hold=20s"); s != http.StatusOK || took > 5*time.Second {
		t.Errorf("online, hold=20s: %d after %v, want 200 at once", s, took)
	}
	for _, bad := range []string{"hold=20", "hold=-1s", "hold=2m"} {
		if s, _ := get(bad); s != http.StatusBadRequest {
			t.Errorf("%s: %d, want 400", bad, s)
		}
	}
}
