//go:build e2e

package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/cache"

	"github.com/minicluster/minicluster/keygen/sidecar"
	mcwait "github.com/minicluster/minicluster/wait"
)

// The control plane at scale on simulated nodes (ci/kwok: `make kwok-up`): pods there turn
// Running with an IP and never start a process, so the brokers cost the API server, etcd, the
// scheduler and the controllers what real ones would, and nothing else.

// kwokLabel labels (and taints) the simulated nodes that ci/kwok/up.sh makes.
const kwokLabel = "minicluster.dev/kwok"

// requireKwokEnv makes a cluster without simulated nodes a failure instead of a skip
// (`make e2e-kwok` sets it after starting them).
const requireKwokEnv = "MINICLUSTER_REQUIRE_KWOK"

// kwokNodes returns the Ready simulated nodes and how many pods they hold in all, or ends the
// test: a skip naming the fix, or a failure under MINICLUSTER_REQUIRE_KWOK=1.
func kwokNodes(t testing.TB) (nodes []corev1.Node, capacity int) {
	t.Helper()
	list, err := kube.CoreV1().Nodes().List(context.Background(), metav1.ListOptions{LabelSelector: kwokLabel + "=true"})
	if err != nil {
		t.Fatalf("listing the simulated nodes: %v", err)
	}
	for _, n := range list.Items {
		if !nodeReady(n) {
			continue
		}
		nodes = append(nodes, n)
		capacity += int(n.Status.Allocatable.Pods().Value())
	}
	if len(nodes) == 0 {
		msg := fmt.Sprintf("no Ready simulated node (label %s=true) in this cluster: start them with `make kwok-up KWOK_NODES=10`", kwokLabel)
		if os.Getenv(requireKwokEnv) == "1" {
			t.Fatal(msg)
		}
		t.Skipf("%s (skipped; %s=1 makes it a failure)", msg, requireKwokEnv)
	}
	return nodes, capacity
}

func nodeReady(n corev1.Node) bool {
	for _, c := range n.Status.Conditions {
		if c.Type == corev1.NodeReady {
			return c.Status == corev1.ConditionTrue
		}
	}
	return false
}

// kwokToleration lets a pod onto the simulated nodes.
var kwokToleration = corev1.Toleration{Key: kwokLabel, Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoSchedule}

// kwokValues writes a values file that puts the brokers (not the keygen Job, which must really
// run) on the simulated nodes, and returns its path; extra lines are added as they are.
func kwokValues(t testing.TB, extra ...string) string {
	t.Helper()
	values := strings.Join(append([]string{
		"nodeSelector: {" + kwokLabel + `: "true"}`,
		"tolerations: [{key: " + kwokLabel + ", operator: Exists, effect: NoSchedule}]",
	}, extra...), "\n") + "\n"
	path := filepath.Join(t.TempDir(), "kwok-values.yaml")
	if err := os.WriteFile(path, []byte(values), 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

// scaleView watches one namespace's pods and EndpointSlices (an informer each): at 1,000 pods a
// list every poll would cost the API server more than what is measured.
type scaleView struct {
	pods, slices cache.Store
	stop         chan struct{}
}

func watchNamespace(t testing.TB, ns string) *scaleView {
	t.Helper()
	f := informers.NewSharedInformerFactoryWithOptions(kube, 0, informers.WithNamespace(ns))
	v := &scaleView{
		pods:   f.Core().V1().Pods().Informer().GetStore(),
		slices: f.Discovery().V1().EndpointSlices().Informer().GetStore(),
		stop:   make(chan struct{}),
	}
	f.Start(v.stop)
	t.Cleanup(func() { close(v.stop); f.Shutdown() })
	for typ, ok := range f.WaitForCacheSync(v.stop) {
		if !ok {
			t.Fatalf("watching %v in %s: the cache did not sync", typ, ns)
		}
	}
	return v
}

// jobPods counts the pods of Job job: running (and not being deleted), and all.
func (v *scaleView) jobPods(job string) (running, total int) {
	for _, o := range v.pods.List() {
		p := o.(*corev1.Pod)
		if p.Labels["job-name"] != job {
			continue
		}
		total++
		if p.Status.Phase == corev1.PodRunning && p.DeletionTimestamp == nil {
			running++
		}
	}
	return running, total
}

// listed returns the hostnames that the EndpointSlices of service list with an address, and
// how many slices there are.
func (v *scaleView) listed(service string) (hosts map[string]bool, nslices int) {
	hosts = map[string]bool{}
	for _, o := range v.slices.List() {
		s := o.(*discoveryv1.EndpointSlice)
		if s.Labels[discoveryv1.LabelServiceName] != service {
			continue
		}
		nslices++
		for _, e := range s.Endpoints {
			if e.Hostname != nil && len(e.Addresses) > 0 {
				hosts[*e.Hostname] = true
			}
		}
	}
	return hosts, nslices
}

// ready: exactly size pods of job, all Running, and the Service's EndpointSlices list exactly
// the hostnames job-0 ... job-(size-1).
func (v *scaleView) ready(job, service string, size int) (bool, string) {
	running, total := v.jobPods(job)
	hosts, nslices := v.listed(service)
	state := fmt.Sprintf("%d of %d pods running (%d in all), %d hostnames in %d EndpointSlices", running, size, total, len(hosts), nslices)
	if running != size || total != size || len(hosts) != size {
		return false, state
	}
	for i := range size {
		if h := job + "-" + strconv.Itoa(i); !hosts[h] {
			return false, state + "; " + h + " is not listed"
		}
	}
	return true, state
}

// gone: no pod of job and no EndpointSlice of service is left.
func (v *scaleView) gone(job, service string) (bool, string) {
	_, total := v.jobPods(job)
	_, nslices := v.listed(service)
	return total == 0 && nslices == 0, fmt.Sprintf("%d pods, %d EndpointSlices left", total, nslices)
}

// chartObjects lists the objects of a release other than pods and EndpointSlices (which the
// cluster makes for it) as kind/name, their size in bytes (each object as JSON, less what the
// API server adds: status and server-set metadata), and all of them as one text with what
// differs from one install to the next made the same: the Jobs' controller-uid, the keys
// (random; their lengths stay).
func chartObjects(t testing.TB, ns, release string) (names []string, size int, text string) {
	t.Helper()
	ctx := context.Background()
	byRelease := metav1.ListOptions{LabelSelector: "app.kubernetes.io/instance=" + release}
	c, rbac := kube.CoreV1(), kube.RbacV1()
	var texts []string
	for _, l := range []struct {
		kind string
		list func() (runtime.Object, error)
	}{
		{"ConfigMap", func() (runtime.Object, error) { return c.ConfigMaps(ns).List(ctx, byRelease) }},
		{"Secret", func() (runtime.Object, error) { return c.Secrets(ns).List(ctx, byRelease) }},
		{"Service", func() (runtime.Object, error) { return c.Services(ns).List(ctx, byRelease) }},
		{"ServiceAccount", func() (runtime.Object, error) { return c.ServiceAccounts(ns).List(ctx, byRelease) }},
		{"Role", func() (runtime.Object, error) { return rbac.Roles(ns).List(ctx, byRelease) }},
		{"RoleBinding", func() (runtime.Object, error) { return rbac.RoleBindings(ns).List(ctx, byRelease) }},
		{"Job", func() (runtime.Object, error) { return kube.BatchV1().Jobs(ns).List(ctx, byRelease) }},
	} {
		list, err := l.list()
		if err != nil {
			t.Fatalf("listing the %ss of %s: %v", l.kind, release, err)
		}
		items, err := meta.ExtractList(list)
		if err != nil {
			t.Fatal(err)
		}
		for _, item := range items {
			u, err := runtime.DefaultUnstructuredConverter.ToUnstructured(item)
			if err != nil {
				t.Fatal(err)
			}
			delete(u, "status")
			md, _ := u["metadata"].(map[string]any)
			for _, k := range []string{"uid", "resourceVersion", "generation", "creationTimestamp", "managedFields"} {
				delete(md, k)
			}
			data, err := json.Marshal(u)
			if err != nil {
				t.Fatal(err)
			}
			names = append(names, l.kind+"/"+md["name"].(string))
			size += len(data)
			texts = append(texts, l.kind+" "+sameAcrossInstalls(string(data)))
		}
	}
	slices.Sort(names)
	slices.Sort(texts)
	return names, size, strings.Join(texts, "\n")
}

// sameAcrossInstalls blanks what differs between two installs of the same values: the Jobs'
// controller-uid (in their selector and pod labels) and the bytes of the keys.
func sameAcrossInstalls(json string) string {
	json = regexp.MustCompile(`"(batch\.kubernetes\.io/)?controller-uid":"[^"]*"`).ReplaceAllString(json, `"$1controller-uid":"UID"`)
	return regexp.MustCompile(`"(curve\.cert|munge\.key)":"([^"]*)"`).ReplaceAllStringFunc(json, func(m string) string {
		k, v, _ := strings.Cut(m, `":"`)
		return fmt.Sprintf(`%s":"<%d bytes>"`, k, len(v)-1)
	})
}

// kwokSize is the size TestKwokScale installs: E2E_KWOK_SIZE, or 1,000.
func kwokSize(t testing.TB) int {
	t.Helper()
	s := envOr("E2E_KWOK_SIZE", "1000")
	n, err := strconv.Atoi(s)
	if err != nil || n < 2 {
		t.Fatalf("E2E_KWOK_SIZE=%q: give a number of brokers >= 2, e.g. 1000", s)
	}
	return n
}

// requireCapacity ends the test when the simulated nodes hold fewer than size pods.
func requireCapacity(t testing.TB, size int) {
	t.Helper()
	nodes, capacity := kwokNodes(t)
	if capacity < size {
		msg := fmt.Sprintf("the %d simulated nodes hold %d pods, fewer than %d: start more with `make kwok-up KWOK_NODES=%d`", len(nodes), capacity, size, (size+109)/110)
		if os.Getenv(requireKwokEnv) == "1" {
			t.Fatal(msg)
		}
		t.Skip(msg)
	}
}

// sizeFields are what the chart renders from size and maxSize: the host list, the size, the
// Job's counts. normalized puts placeholders there (and for the namespace).
var sizeFields = []struct{ re, with string }{
	{`-\[0-[0-9]+\]`, "-[0-MAX]"},
	{`"maxSize":[0-9]+`, `"maxSize":MAX`},
	{`max-size: "[0-9]+"`, `max-size: "MAX"`},
	{`size: "[0-9]+"`, `size: "SIZE"`},
	{`(completions|parallelism): [0-9]+`, "$1: SIZE"},
	// The same in JSON, as the API server returns the objects.
	{`max-size":"[0-9]+"`, `max-size":"MAX"`},
	{`"size":"[0-9]+"`, `"size":"SIZE"`},
	{`\\"maxSize\\":[0-9]+`, `\"maxSize\":MAX`},
	{`"(completions|parallelism)":[0-9]+`, `"$1":SIZE`},
}

func normalized(manifest, ns string) string {
	manifest = strings.ReplaceAll(manifest, ns, "NAMESPACE")
	for _, f := range sizeFields {
		manifest = regexp.MustCompile(f.re).ReplaceAllString(manifest, f.with)
	}
	return manifest
}

// TestKwokScale: a MiniCluster of 1,000 brokers (E2E_KWOK_SIZE) on simulated nodes. Install
// until every pod runs and the Service's EndpointSlices (split by Kubernetes at 100 endpoints
// each) list all 1,000 hostnames; the keys container's wait for its parent finds a host in
// every slice, as the brokers' service account; the chart's objects are the same in number and
// the same but for the size fields as at size 10; resize 1,000 -> 500 -> 1,000 with helm
// upgrade; uninstall leaves nothing (pods, Jobs, ConfigMaps, Secrets, Service, EndpointSlices).
func TestKwokScale(t *testing.T) {
	size := kwokSize(t)
	requireCapacity(t, size)
	values := kwokValues(t)
	within := time.Duration(size/5+120) * time.Second // the Job controller makes about 20 pods a second; an uninstall removes about 10

	// The reference: size 10.
	nsSmall := newNamespace(t, "kwok-s") // as long as the other: the same bytes
	small := newRelease(t, nsSmall, "flux-sample", helm4)
	small.install("-f", values, "--set", "size=10")
	vs := watchNamespace(t, nsSmall)
	eventually(t, 2*time.Minute, "10 brokers running and listed", func() (bool, string) { return vs.ready(small.name, small.name, 10) })
	waitKeys(t, small)
	smallNames, smallBytes, smallText := chartObjects(t, nsSmall, small.name)
	smallManifest, err := small.run("get", "manifest", small.name)
	if err != nil {
		t.Fatal(err)
	}
	small.uninstall()

	ns := newNamespace(t, "kwok-l")
	v := watchNamespace(t, ns)
	r := newRelease(t, ns, "flux-sample", helm4)
	start := time.Now()
	r.install("-f", values, "--set", fmt.Sprintf("size=%d", size))
	eventually(t, within, fmt.Sprintf("%d brokers running and listed", size), func() (bool, string) { return v.ready(r.name, r.name, size) })
	_, nslices := v.listed(r.name)
	t.Logf("install: %d brokers running and listed in %d EndpointSlices after %.1fs", size, nslices, time.Since(start).Seconds())
	// The EndpointSlice controller puts at most 100 endpoints in a slice (its default
	// --max-endpoints-per-slice): fewer slices than that allows would mean hosts not listed.
	if want := (size + 99) / 100; nslices < want {
		t.Errorf("%d endpoints in %d EndpointSlices, want at least %d: Kubernetes puts at most 100 in a slice", size, nslices, want)
	}
	checkParentWait(t, v, ns, r.name)

	waitKeys(t, r)
	names, bytes, text := chartObjects(t, ns, r.name)
	t.Logf("the chart's objects (pods and EndpointSlices aside): %d at size 10, %d bytes; %d at size %d, %d bytes: %v", len(smallNames), smallBytes, len(names), size, bytes, names)
	if !slices.Equal(names, smallNames) {
		t.Errorf("the chart made other objects at size %d than at size 10:\n%v\n%v", size, names, smallNames)
	}
	manifest, err := r.run("get", "manifest", r.name)
	if err != nil {
		t.Fatal(err)
	}
	if a, b := normalized(smallManifest, nsSmall), normalized(manifest, ns); a != b {
		t.Errorf("the manifests at size 10 and %d differ in more than the host list and the size fields:\n%s", size, lineDiff(a, b))
	}
	if a, b := normalized(smallText, nsSmall), normalized(text, ns); a != b {
		t.Errorf("the live objects at size 10 and %d differ in more than the host list and the size fields:\n%s", size, lineDiff(a, b))
	}

	hosts := r.brokerConfig()["hosts"]
	for _, n := range []int{size / 2, size} {
		start := time.Now()
		if _, err := r.upgrade("--set", fmt.Sprintf("size=%d", n)); err != nil {
			t.Fatalf("resize to %d: %v", n, err)
		}
		eventually(t, within, fmt.Sprintf("exactly %d brokers running and listed", n), func() (bool, string) { return v.ready(r.name, r.name, n) })
		t.Logf("resize to %d: done after %.1fs", n, time.Since(start).Seconds())
		if got := r.brokerConfig()["hosts"]; got != hosts {
			t.Errorf("resize to %d changed the host list: %q, was %q", n, got, hosts)
		}
	}

	start = time.Now()
	r.uninstall()
	eventually(t, within, "nothing left", func() (bool, string) {
		if ok, why := v.gone(r.name, r.name); !ok {
			return false, why
		}
		left, err := leftovers(ns, r.name)
		return err == nil && len(left) == 0, fmt.Sprintf("left: %v %v", left, err)
	})
	t.Logf("uninstall: nothing left after %.1fs", time.Since(start).Seconds())
}

// waitKeys waits until the keygen Job (on a real node) has filled the certificate Secret.
func waitKeys(t testing.TB, r *release) {
	t.Helper()
	eventually(t, 2*time.Minute, "the keygen Job fills "+r.name+"-curve", func() (bool, string) {
		s := r.curveSecret()
		return s != nil && len(s.Data["curve.cert"]) > 0, "empty"
	})
}

// checkParentWait runs the keys container's wait for a parent (flux-keygen sidecar's
// parent wait) against the live Service, as the brokers' service account, for the first host
// of every EndpointSlice: a host in the tenth slice is found as one in the first.
func checkParentWait(t *testing.T, v *scaleView, ns, release string) {
	t.Helper()
	cfg := rest.CopyConfig(restConfig)
	cfg.Impersonate = rest.ImpersonationConfig{UserName: fmt.Sprintf("system:serviceaccount:%s:%s-broker", ns, release)}
	client, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	for _, o := range v.slices.List() {
		s := o.(*discoveryv1.EndpointSlice)
		if s.Labels[discoveryv1.LabelServiceName] != release || len(s.Endpoints) == 0 || s.Endpoints[0].Hostname == nil {
			continue
		}
		host := *s.Endpoints[0].Hostname
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		var log strings.Builder
		err := sidecar.Fetch(ctx, client, sidecar.Options{Namespace: ns, CurveName: release + "-curve", Out: t.TempDir(), Service: release, Host: host}, &log)
		cancel()
		if err != nil {
			t.Errorf("the parent wait for %s (EndpointSlice %s, %d endpoints): %v", host, s.Name, len(s.Endpoints), err)
		}
	}
}

// lineDiff lists the lines of a and b that differ, by line number.
func lineDiff(a, b string) string {
	al, bl := strings.Split(a, "\n"), strings.Split(b, "\n")
	var out strings.Builder
	for i := range max(len(al), len(bl)) {
		var x, y string
		if i < len(al) {
			x = al[i]
		}
		if i < len(bl) {
			y = bl[i]
		}
		if x != y {
			fmt.Fprintf(&out, "%d: - %s\n%d: + %s\n", i+1, x, i+1, y)
		}
	}
	return out.String()
}

// TestKwokNoNodeFits: a MiniCluster larger than its node holds (all brokers pinned to one
// simulated node, two more than it has room for) leaves pods Pending, and `flux-keygen kube
// wait` says that no node fits them, with the scheduler's reason, on its log and in its error.
func TestKwokNoNodeFits(t *testing.T) {
	nodes, _ := kwokNodes(t)
	node := nodes[0]
	on, err := kube.CoreV1().Pods("").List(context.Background(), metav1.ListOptions{FieldSelector: "spec.nodeName=" + node.Name})
	if err != nil {
		t.Fatal(err)
	}
	room := int(node.Status.Allocatable.Pods().Value()) - len(on.Items)
	size := room + 2
	pin := filepath.Join(t.TempDir(), "pin.yaml")
	if err := os.WriteFile(pin, []byte("nodeSelector: {kubernetes.io/hostname: "+node.Name+"}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	ns := newNamespace(t, "kwok-nofit")
	r := newRelease(t, ns, "flux-sample", helm4)
	r.install("-f", kwokValues(t), "-f", pin, "--set", fmt.Sprintf("size=%d", size))

	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	var log strings.Builder
	err = mcwait.Release(ctx, kube, mcwait.Options{Namespace: ns, Release: r.name}, &log)
	t.Logf("kube wait: %v\n%s", err, log.String())
	for _, want := range []string{
		fmt.Sprintf("%d of %d broker pods ready", room, size),
		"2 broker pods Pending because no node fits them", "Too many pods", "or resize to fewer brokers",
	} {
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("kube wait's error lacks %q", want)
		}
	}
	if !strings.Contains(log.String(), "no node fits") {
		t.Errorf("kube wait did not say on its log that no node fits")
	}
	r.uninstallToNothing()
}
