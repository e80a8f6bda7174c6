//go:build e2e

package e2e

import (
	"context"
	"fmt"
	"regexp"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// tenantCommand lists the brokers' full host names, then runs MPICH's ring and allreduce across
// all four.
const tenantCommand = "flux exec -r all hostname -f && " +
	"flux run -N 4 -n 4 --env=LD_PRELOAD=/usr/local/lib/mpich-ucx-finalize.so mpi-hello-mpich"

// Ten MiniClusters of 4 in five namespaces, installed at the same time on the 3-node cluster,
// two per namespace under the same two release names in each (so that only the namespace tells
// their brokers apart): each runs MPI across its own four brokers, by their own host names. In
// one of them, interactive, a broker given another release's certificate is refused by the lead
// (the CURVE handshake fails, and the lead logs it) and never joins. Uninstalling all leaves
// nothing.
func TestManyTenants(t *testing.T) {
	t.Parallel()
	var tenants []*release
	for range 5 {
		ns := newNamespace(t, "tenants")
		for _, name := range []string{"mc-a", "mc-b"} {
			tenants = append(tenants, newRelease(t, ns, name, helm4))
		}
	}
	interactive := tenants[1] // mc-b of the first namespace; its mc-a lends the foreign certificate

	var wg sync.WaitGroup
	errs := make([]error, len(tenants))
	start := time.Now()
	for i, r := range tenants {
		set := "image=" + mpiImage + ",size=4,maxSize=5"
		if r != interactive {
			set += ",command=" + tenantCommand
		}
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
		if r == interactive {
			continue
		}
		waitJobComplete(t, r, 8*time.Minute)
		checkTenantLog(t, r, leadLog(t, r))
	}
	t.Logf("10 MiniClusters of 4 completed %.1fs after the installs began", time.Since(start).Seconds())

	pods := waitFluxUp(t, interactive.ns, interactive.name, 4, 5, 4*time.Minute)
	lead := pods[0].Name
	out, stderr, err := execIn(interactive.ns, lead, "flux", "/bin/sh", "-c", tenantCommand)
	if err != nil {
		t.Fatalf("%s: %v\n%s%s", tenantCommand, err, out, stderr)
	}
	checkTenantLog(t, interactive, out)
	foreignBrokerRefused(t, interactive, tenants[0])

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

// foreignBrokerRefused gives the release's certificate Secret another release's certificate
// and grows the release by one: the new broker starts with the foreign certificate, the lead
// (which holds its own) refuses its handshake and logs it, and Flux never counts it up.
func foreignBrokerRefused(t *testing.T, r, other *release) {
	t.Helper()
	ctx := context.Background()
	foreign := other.curveSecret()
	own := r.curveSecret()
	if foreign == nil || own == nil {
		t.Fatalf("certificate Secrets of %s and %s: %v, %v", other.name, r.name, foreign != nil, own != nil)
	}
	if string(foreign.Data["curve.cert"]) == string(own.Data["curve.cert"]) {
		t.Fatalf("%s and %s share a certificate", other.name, r.name)
	}
	own.Data["curve.cert"] = foreign.Data["curve.cert"]
	if _, err := kube.CoreV1().Secrets(r.ns).Update(ctx, own, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := r.upgrade("--set", "size=5"); err != nil {
		t.Fatalf("helm upgrade --set size=5: %v", err)
	}
	pods, _, err := brokerPods(r.ns, r.name)
	if err != nil {
		t.Fatal(err)
	}
	lead := pods[0].Name
	eventually(t, 3*time.Minute, "the lead logs the refused handshake", func() (bool, string) {
		out, _, err := fluxIn(r.ns, lead, "dmesg")
		if err != nil {
			return false, err.Error()
		}
		return strings.Contains(out, "overlay auth No access"), "no 'overlay auth No access' in flux dmesg yet"
	})
	// It keeps trying; give it the time a broker takes to join, then it must still be out.
	time.Sleep(15 * time.Second)
	out, stderr, err := fluxIn(r.ns, lead, "resource", "list", "-s", "up", "-no", "{nnodes} {nodelist}")
	if err != nil {
		t.Fatalf("flux resource list: %v\n%s", err, stderr)
	}
	if strings.TrimSpace(out) != fmt.Sprintf("4 %s-[0-3]", r.name) {
		t.Errorf("up with a foreign certificate in the instance: flux resource list -s up says %q, want 4 %s-[0-3]", strings.TrimSpace(out), r.name)
	}
}
