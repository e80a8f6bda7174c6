//go:build e2e && extra

package e2e

import (
	"testing"
	"time"
)

// Deleting the namespace of a running MiniCluster of 64 (make e2e-extra: 64 brokers take the
// whole of a small machine) finishes within two minutes, or within 30 s of a plain Job of 64
// pods whose namespace is deleted at the same moment when that one itself takes longer; every
// broker's keys container ends with exit 79.
func TestNamespaceDeletedAt64(t *testing.T) {
	const size = 64
	// The floor's 64 pods first: started beside 64 brokers on a small machine, they took more
	// than the floor's own wait to run.
	floor := newFloorNamespace(t, size)
	ns := newNamespace(t, "nsdel64")
	r := newRelease(t, ns, "flux-sample", helm4)
	start := time.Now()
	r.install("--set", "size=64,maxSize=64,flux.view.mode=image")
	waitFluxUp(t, ns, r.name, size, size, 10*time.Minute)
	t.Logf("64 brokers up in %.1f s", time.Since(start).Seconds())
	checkNamespaceDeleted(t, r, floor, 2*time.Minute)
}
