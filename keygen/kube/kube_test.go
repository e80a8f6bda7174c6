package kube

// These tests hold the API-call logic (create, fill, keep, refuse) against client-go's
// fake clientset, which answers Create with AlreadyExists like the API server but checks no
// RBAC. Against a real API server, test/e2e runs the keygen Job in the chart: the Secret it creates
// holds a valid certificate with Helm's ownership (install_test.go), Helm keeps it on upgrade
// (resize_test.go) and deletes it on uninstall, also after a failed install (fault_test.go);
// and kube_e2e_test.go (build tag e2e) runs create/keep/refuse here as the keygen Job's service
// account with exactly the chart's Role.

import (
	"bytes"
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"

	"github.com/minicluster/minicluster/keygen"
)

const ns = "team-a"

func opts(mod func(*Options)) Options {
	o := Options{Release: "flux-sample", Namespace: ns, Hostname: "flux-sample-keygen-abcde", Version: "1.2.3",
		Now: func() time.Time { return time.Date(2026, 11, 23, 10, 0, 0, 0, time.UTC) }}
	if mod != nil {
		mod(&o)
	}
	return o
}

func run(t *testing.T, client *fake.Clientset, o Options) ([]Result, string, error) {
	t.Helper()
	var log bytes.Buffer
	res, err := Run(context.Background(), client, o, &log)
	return res, log.String(), err
}

// onlyCreateAndGet asserts the least-privilege contract of the keygen Job's Role.
func onlyCreateAndGet(t *testing.T, client *fake.Clientset) {
	t.Helper()
	for _, a := range client.Actions() {
		if v := a.GetVerb(); v != "create" && v != "get" {
			t.Errorf("unexpected API call %s %s", v, a.GetResource().Resource)
		}
	}
}

func wantOwnership(t *testing.T, m metav1.ObjectMeta, component string) {
	t.Helper()
	for k, v := range map[string]string{
		"app.kubernetes.io/managed-by": "Helm", "app.kubernetes.io/name": "minicluster",
		"app.kubernetes.io/instance": "flux-sample", "app.kubernetes.io/component": component,
	} {
		if m.Labels[k] != v {
			t.Errorf("%s: label %s=%q, want %q", m.Name, k, m.Labels[k], v)
		}
	}
	if m.Annotations["meta.helm.sh/release-name"] != "flux-sample" || m.Annotations["meta.helm.sh/release-namespace"] != ns {
		t.Errorf("%s: Helm ownership annotations %v", m.Name, m.Annotations)
	}
}

func TestCreatesSecretAndMunge(t *testing.T) {
	client := fake.NewClientset()
	res, log, err := run(t, client, opts(func(o *Options) { o.Munge = true }))
	if err != nil {
		t.Fatal(err)
	}
	if len(res) != 2 || res[0].Action != "created" || res[1].Action != "created" {
		t.Fatalf("results %+v", res)
	}
	s, err := client.CoreV1().Secrets(ns).Get(context.Background(), "flux-sample-curve", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if s.Type != corev1.SecretTypeOpaque || len(s.Data) != 1 {
		t.Fatalf("curve Secret type %q data keys %d", s.Type, len(s.Data))
	}
	c, err := keygen.Parse(s.Data[CertKey])
	if err != nil {
		t.Fatalf("stored certificate: %v", err)
	}
	if v, _ := c.MetaValue("name"); v != "flux-sample" {
		t.Errorf("certificate name %q, want the release", v)
	}
	if v, _ := c.MetaValue("keygen.hostname"); v != "flux-sample-keygen-abcde" {
		t.Errorf("keygen.hostname %q", v)
	}
	wantOwnership(t, s.ObjectMeta, "curve")
	m, err := client.CoreV1().Secrets(ns).Get(context.Background(), "flux-sample-munge", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if len(m.Data[MungeKey]) != MungeKeySize || bytes.Equal(m.Data[MungeKey], make([]byte, MungeKeySize)) {
		t.Fatalf("munge key of %d bytes (or all zero)", len(m.Data[MungeKey]))
	}
	wantOwnership(t, m.ObjectMeta, "munge")
	if !strings.Contains(log, "created Secret team-a/flux-sample-curve (curve.cert, public key "+c.PublicText()+")") ||
		!strings.Contains(log, "created Secret team-a/flux-sample-munge (munge.key, 1024 random bytes)") {
		t.Errorf("log:\n%s", log)
	}
	onlyCreateAndGet(t, client)
}

// TestRerunKeepsKeys is the retried hook: the second run must keep both objects byte for byte.
func TestRerunKeepsKeys(t *testing.T) {
	client := fake.NewClientset()
	o := opts(func(o *Options) { o.Munge = true })
	if _, _, err := run(t, client, o); err != nil {
		t.Fatal(err)
	}
	before, _ := client.CoreV1().Secrets(ns).List(context.Background(), metav1.ListOptions{})
	client.ClearActions()
	res, log, err := run(t, client, o)
	if err != nil {
		t.Fatal(err)
	}
	onlyCreateAndGet(t, client)
	if res[0].Action != "kept" || res[1].Action != "kept" {
		t.Fatalf("results %+v", res)
	}
	after, _ := client.CoreV1().Secrets(ns).List(context.Background(), metav1.ListOptions{})
	for i := range before.Items {
		for k, v := range before.Items[i].Data {
			if !bytes.Equal(after.Items[i].Data[k], v) {
				t.Errorf("%s/%s changed on the second run", before.Items[i].Name, k)
			}
		}
	}
	if strings.Count(log, "kept Secret") != 2 || !strings.Contains(log, "not overwritten") {
		t.Errorf("log:\n%s", log)
	}
}

func TestConfigMapStorage(t *testing.T) {
	client := fake.NewClientset()
	o := opts(func(o *Options) { o.Storage = StorageConfigMap })
	if _, _, err := run(t, client, o); err != nil {
		t.Fatal(err)
	}
	cm, err := client.CoreV1().ConfigMaps(ns).Get(context.Background(), "flux-sample-curve", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := keygen.Parse([]byte(cm.Data[CertKey])); err != nil {
		t.Fatalf("certificate in the ConfigMap: %v", err)
	}
	wantOwnership(t, cm.ObjectMeta, "curve")
	if s, _ := client.CoreV1().Secrets(ns).List(context.Background(), metav1.ListOptions{}); len(s.Items) != 0 {
		t.Fatalf("ConfigMap storage also made %d Secrets", len(s.Items))
	}
	res, log, err := run(t, client, o)
	if err != nil || res[0].Action != "kept" || !strings.Contains(log, "kept ConfigMap team-a/flux-sample-curve") {
		t.Fatalf("second run: %+v %v\n%s", res, err, log)
	}
}

func TestSkipCurve(t *testing.T) {
	client := fake.NewClientset()
	res, _, err := run(t, client, opts(func(o *Options) { o.SkipCurve, o.Munge, o.MungeName = true, true, "m" }))
	if err != nil || len(res) != 1 || res[0].Name != "m" {
		t.Fatalf("results %+v, %v", res, err)
	}
	if _, err := client.CoreV1().Secrets(ns).Get(context.Background(), "flux-sample-curve", metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Fatalf("--skip-curve still made the certificate (err %v)", err)
	}
}

// TestRefusesInvalidExisting: what is there is never overwritten; the error says what is
// wrong and how to recover.
func TestRefusesInvalidExisting(t *testing.T) {
	owned := objectMeta(opts(nil), "flux-sample-curve", "curve")
	mungeMeta := objectMeta(opts(nil), "flux-sample-munge", "munge")
	good, _ := keygen.GenerateKeyPair()
	goodData, _ := good.Encode()
	broken := strings.Replace(string(goodData), "public-key", "publik-key", 1)
	for _, tc := range []struct {
		name     string
		existing runtime.Object
		o        Options
		want     []string
	}{
		{"corrupt certificate", &corev1.Secret{ObjectMeta: owned, Data: map[string][]byte{CertKey: []byte(broken)}}, opts(nil),
			[]string{"is not a valid certificate", `unknown key "publik-key"`, "never overwritten",
				"kubectl delete secret flux-sample-curve -n team-a", "helm uninstall flux-sample -n team-a"}},
		{"wrong Secret type", &corev1.Secret{ObjectMeta: owned, Type: corev1.SecretTypeBasicAuth, Data: map[string][]byte{CertKey: goodData}}, opts(nil),
			[]string{"type kubernetes.io/basic-auth, the chart needs Opaque"}},
		{"another release's object", &corev1.Secret{ObjectMeta: objectMeta(opts(func(o *Options) { o.Release = "other" }), "flux-sample-curve", "curve"),
			Data: map[string][]byte{CertKey: goodData}}, opts(nil),
			[]string{`belongs to release "other"`, "install under another release name"}},
		{"object without Helm metadata", &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "flux-sample-curve", Namespace: ns},
			Data: map[string][]byte{CertKey: goodData}}, opts(nil),
			[]string{"has no Helm ownership annotations"}},
		{"corrupt ConfigMap", &corev1.ConfigMap{ObjectMeta: owned, Data: map[string]string{CertKey: "curve\n"}},
			opts(func(o *Options) { o.Storage = StorageConfigMap }),
			[]string{"ConfigMap team-a/flux-sample-curve", "the curve section has no public-key", "kubectl delete configmap"}},
		{"short munge key", &corev1.Secret{ObjectMeta: mungeMeta, Data: map[string][]byte{MungeKey: []byte("short")}},
			opts(func(o *Options) { o.SkipCurve, o.Munge = true, true }),
			[]string{"munge.key is 5 bytes, want 1024"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			client := fake.NewClientset(tc.existing)
			_, _, err := run(t, client, tc.o)
			if err == nil {
				t.Fatal("accepted an invalid existing object")
			}
			for _, w := range tc.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q does not say %q", err, w)
				}
			}
			if strings.Contains(err.Error(), "\n") {
				t.Errorf("error is not one line: %q", err)
			}
			onlyCreateAndGet(t, client)
		})
	}
}

// TestFillsChartObjects: the keygen Job finds the chart's data-less
// objects (with the ownership annotations Helm sets); it writes the keys into them, and a
// re-run keeps them.
func TestFillsChartObjects(t *testing.T) {
	for _, storage := range []string{StorageSecret, StorageConfigMap} {
		t.Run(storage, func(t *testing.T) {
			o := opts(func(o *Options) { o.Storage, o.Munge = storage, true })
			curve := objectMeta(o, "flux-sample-curve", "curve")
			var rendered runtime.Object = &corev1.Secret{ObjectMeta: curve, Type: corev1.SecretTypeOpaque}
			if storage == StorageConfigMap {
				rendered = &corev1.ConfigMap{ObjectMeta: curve}
			}
			munge := &corev1.Secret{ObjectMeta: objectMeta(o, "flux-sample-munge", "munge"), Type: corev1.SecretTypeOpaque}
			client := fake.NewClientset(rendered, munge)
			res, log, err := run(t, client, o)
			if err != nil {
				t.Fatal(err)
			}
			if len(res) != 2 || res[0].Action != "filled" || res[1].Action != "filled" {
				t.Fatalf("results %+v", res)
			}
			if !strings.Contains(log, "filled "+storage+" team-a/flux-sample-curve") {
				t.Errorf("log does not say what was filled: %q", log)
			}
			var cert []byte
			if storage == StorageConfigMap {
				cm, err := client.CoreV1().ConfigMaps(ns).Get(context.Background(), "flux-sample-curve", metav1.GetOptions{})
				if err != nil {
					t.Fatal(err)
				}
				cert = []byte(cm.Data[CertKey])
			} else {
				s, err := client.CoreV1().Secrets(ns).Get(context.Background(), "flux-sample-curve", metav1.GetOptions{})
				if err != nil {
					t.Fatal(err)
				}
				cert = s.Data[CertKey]
			}
			if _, err := keygen.Parse(cert); err != nil {
				t.Fatalf("filled certificate does not parse: %v", err)
			}
			m, _ := client.CoreV1().Secrets(ns).Get(context.Background(), "flux-sample-munge", metav1.GetOptions{})
			if len(m.Data[MungeKey]) != MungeKeySize {
				t.Fatalf("munge key has %d bytes", len(m.Data[MungeKey]))
			}
			res, _, err = run(t, client, o)
			if err != nil || res[0].Action != "kept" || res[1].Action != "kept" {
				t.Fatalf("re-run: %+v, %v", res, err)
			}
		})
	}
}

// TestFillConflictIsAnError: if the object changed between get and update (another writer),
// the update fails and nothing is overwritten.
func TestFillConflictIsAnError(t *testing.T) {
	o := opts(nil)
	client := fake.NewClientset(&corev1.Secret{ObjectMeta: objectMeta(o, "flux-sample-curve", "curve"), Type: corev1.SecretTypeOpaque})
	client.PrependReactor("update", "secrets", func(k8stesting.Action) (bool, runtime.Object, error) {
		return true, nil, apierrors.NewConflict(corev1.Resource("secrets"), "flux-sample-curve", errors.New("changed"))
	})
	_, _, err := run(t, client, o)
	if err == nil || !strings.Contains(err.Error(), "exists without data but writing the key into it failed") || !apierrors.IsConflict(err) {
		t.Fatalf("err = %v", err)
	}
}

func TestCreateErrorIsReported(t *testing.T) {
	client := fake.NewClientset()
	client.PrependReactor("create", "secrets", func(k8stesting.Action) (bool, runtime.Object, error) {
		return true, nil, apierrors.NewForbidden(corev1.Resource("secrets"), "flux-sample-curve", errors.New("RBAC says no"))
	})
	_, _, err := run(t, client, opts(nil))
	if err == nil || !strings.Contains(err.Error(), "creating Secret team-a/flux-sample-curve") || !apierrors.IsForbidden(err) {
		t.Fatalf("err = %v", err)
	}
}

func TestValidateOptions(t *testing.T) {
	for _, tc := range []struct {
		mod  func(*Options)
		want string
	}{
		{func(o *Options) { o.Release = "" }, "--release is empty"},
		{func(o *Options) { o.Release = "Bad_Name" }, `--release "Bad_Name" is not a valid name`},
		{func(o *Options) { o.Namespace = "" }, "POD_NAMESPACE"},
		{func(o *Options) { o.Storage = "Vault" }, `--storage "Vault": want Secret or ConfigMap`},
		{func(o *Options) { o.SkipCurve = true }, "nothing to do"},
	} {
		o := opts(tc.mod)
		if err := o.Validate(); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("Validate: %v, want %q", err, tc.want)
		}
	}
	o := opts(nil)
	if err := o.Validate(); err != nil || o.CurveName != "flux-sample-curve" || o.MungeName != "flux-sample-munge" || o.Storage != "Secret" {
		t.Fatalf("defaults: %+v, %v", o, err)
	}
}

// TestAPICredentials: --api-name fills the chart's data-less Secret with a user and random token
// and secret key, marks it as filled here (the chart then renders no data), and a re-run keeps
// them.
func TestAPICredentials(t *testing.T) {
	empty := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "flux-sample-api", Namespace: ns,
		Annotations: map[string]string{"meta.helm.sh/release-name": "flux-sample", "meta.helm.sh/release-namespace": ns}}, Type: corev1.SecretTypeOpaque}
	client := fake.NewClientset(empty)
	o := opts(func(o *Options) { o.SkipCurve = true; o.APIName = "flux-sample-api" })
	res, log, err := run(t, client, o)
	if err != nil || len(res) != 1 || res[0].Action != "filled" {
		t.Fatalf("results %v, %v\n%s", res, err, log)
	}
	get := func() *corev1.Secret {
		s, err := client.CoreV1().Secrets(ns).Get(context.Background(), "flux-sample-api", metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		return s
	}
	first := get()
	if string(first.Data["user"]) != "flux" || len(first.Data["token"]) != 40 || len(first.Data["secret-key"]) != 64 {
		t.Fatalf("data %q", first.Data)
	}
	if first.Annotations[FilledBy] != "flux-keygen" {
		t.Errorf("annotations %v: want %s", first.Annotations, FilledBy)
	}
	if strings.Contains(log, string(first.Data["token"])) || strings.Contains(log, string(first.Data["secret-key"])) {
		t.Errorf("the log shows a credential: %s", log)
	}
	if res, _, err := run(t, client, o); err != nil || res[0].Action != "kept" {
		t.Fatalf("re-run: %v %v", res, err)
	}
	if again := get(); string(again.Data["token"]) != string(first.Data["token"]) || string(again.Data["secret-key"]) != string(first.Data["secret-key"]) {
		t.Error("a re-run changed the credentials")
	}
	// Two releases never share credentials.
	other := fake.NewClientset()
	if _, _, err := run(t, other, o); err != nil {
		t.Fatal(err)
	}
	s, _ := other.CoreV1().Secrets(ns).Get(context.Background(), "flux-sample-api", metav1.GetOptions{})
	if string(s.Data["token"]) == string(first.Data["token"]) {
		t.Error("the same token twice")
	}
}
