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
