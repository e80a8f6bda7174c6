//go:build e2e && extra

package e2e

import (
	"fmt"
	"regexp"
	"slices"
	"sync"
	"testing"
	"time"
)

// tenantCommand lists the four brokers' full host names, then runs MPICH's ring and allreduce
// across them.
const tenantCommand = "flux exec -r 0-3 hostname -f && " +
	"flux run -N 4 -n 4 --env=LD_PRELOAD=/usr/local/lib/mpich-ucx-finalize.so mpi-hello-mpich"

// Ten MiniClusters of 4 in five namespaces, installed at the same time on the 3-node cluster
// (make e2e-extra: forty brokers at once take minutes on a small machine), two per namespace
// under the same two release names in each (so that only the namespace tells their brokers
// apart): each runs MPI across its own four brokers, by their own host names. Uninstalling all
// leaves nothing.
func TestManyTenants(t *testing.T) {
	t.Parallel()
	var tenants []*release
	for range 5 {
		ns := newNamespace(t, "tenants")
		for _, name := range []string{"mc-a", "mc-b"} {
			tenants = append(tenants, newRelease(t, ns, name, helm4))
		}
	}
	var wg sync.WaitGroup
	errs := make([]error, len(tenants))
	start := time.Now()
	for i, r := range tenants {
		set := "image=" + mpiImage + ",size=4,maxSize=4,command=" + tenantCommand
		wg.Go(func() { _, errs[i] = r.tryInstall("--set", set) })
	}
	wg.Wait()
	for i, err := range errs {
		if err != nil {
			t.Fatalf("helm install %s/%s: %v", tenants[i].ns, tenants[i].name, err)
		}
	}
	t.Logf("10 installs at once took %.1fs", time.Since(start).Seconds())

	for _, r := range tenants {
		waitJobComplete(t, r, 8*time.Minute)
		checkTenantLog(t, r, leadLog(t, r))
	}
	t.Logf("10 MiniClusters of 4 completed %.1fs after the installs began", time.Since(start).Seconds())

	for _, r := range tenants {
		r.uninstall()
	}
	for _, r := range tenants {
		waitNothingLeft(t, r.ns, r.name, 2*time.Minute)
	}
}

// checkTenantLog: the four host names are the release's own in its namespace, and MPI ran on
// its four brokers.
func checkTenantLog(t *testing.T, r *release, log string) {
	t.Helper()
	var want []string
	for i := range 4 {
		want = append(want, fmt.Sprintf("%s-%d.%s.%s.svc.cluster.local", r.name, i, r.name, r.ns))
	}
	got := regexp.MustCompile(`(?m)^mc-[ab]-\d+\.\S+$`).FindAllString(log, -1)
	slices.Sort(got)
	if !slices.Equal(got, want) {
		t.Errorf("%s/%s: the brokers' host names are %v, want %v:\n%s", r.ns, r.name, got, want, indentAll(log))
	}
	checkMPIHello(t, log, 4, 4, "MPICH Version:")
}
