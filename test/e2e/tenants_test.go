//go:build e2e && extra

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

// A broker given another release's certificate never joins: release mc-a's certificate Secret
// is given mc-b's and mc-a grows by one, so that its new broker starts with the foreign
// certificate. Its CURVE handshake with the lead fails (the lead logs it with logging.zeromq),
// and the lead's Flux never counts it up.
func TestForeignCertificateRefused(t *testing.T) {
	t.Parallel()
	ns := newNamespace(t, "foreign")
	r, other := newRelease(t, ns, "mc-a", helm4), newRelease(t, ns, "mc-b", helm4)
	r.install("--set", "size=2,maxSize=3,logging.zeromq=true")
	other.install("--set", "size=1")
	waitFluxUp(t, ns, r.name, 2, 3, wiringTimeout)
	waitFluxUp(t, ns, other.name, 1, 16, wiringTimeout)
	ctx := context.Background()
	own, foreign := r.curveSecret(), other.curveSecret()
	if own == nil || foreign == nil || string(own.Data["curve.cert"]) == string(foreign.Data["curve.cert"]) {
		t.Fatalf("want two releases with certificates of their own (%s: %v, %s: %v)", r.name, own != nil, other.name, foreign != nil)
	}
	own.Data["curve.cert"] = foreign.Data["curve.cert"]
	if _, err := kube.CoreV1().Secrets(ns).Update(ctx, own, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := r.upgrade("--set", "size=3"); err != nil {
		t.Fatalf("helm upgrade --set size=3: %v", err)
	}
	pods, _, err := brokerPods(ns, r.name)
	if err != nil {
		t.Fatal(err)
	}
	lead := pods[0].Name
	eventually(t, 3*time.Minute, "the lead logs a failed handshake", func() (bool, string) {
		out, _, err := fluxIn(ns, lead, "dmesg")
		if err != nil {
			return false, err.Error()
		}
		return strings.Contains(out, "handshake failed"), "no 'handshake failed' in flux dmesg yet"
	})
	// The broker keeps trying; give it the time a broker takes to join, then it must still be out.
	time.Sleep(15 * time.Second)
	out, stderr, err := fluxIn(ns, lead, "resource", "list", "-s", "up", "-no", "{nnodes} {nodelist}")
	if err != nil {
		t.Fatalf("flux resource list: %v\n%s", err, stderr)
	}
	if strings.TrimSpace(out) != fmt.Sprintf("2 %s-[0-1]", r.name) {
		t.Errorf("a broker with a foreign certificate joined: flux resource list -s up says %q, want 2 %s-[0-1]", strings.TrimSpace(out), r.name)
	}
	dmesg, _, _ := fluxIn(ns, lead, "dmesg")
	for _, l := range strings.Split(dmesg, "\n") {
		if strings.Contains(l, "handshake failed") {
			t.Logf("the lead: %s", l)
			break
		}
	}
	r.uninstall()
	other.uninstall()
	waitNothingLeft(t, ns, r.name, 2*time.Minute)
	waitNothingLeft(t, ns, other.name, 2*time.Minute)
}
