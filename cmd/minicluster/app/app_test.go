package app

import (
	"bytes"
	"strings"
	"testing"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/kubernetes/fake"
	"k8s.io/utils/ptr"
)

// run runs the minicluster command against a fake API server holding objs.
func run(t *testing.T, stdin string, objs []runtime.Object, args ...string) (code int, stdout, stderr string) {
	t.Helper()
	var client kubernetes.Interface
	if objs != nil {
		client = fake.NewClientset(objs...)
	}
	var out, errb bytes.Buffer
	e := Env{Stdin: strings.NewReader(stdin), Stdout: &out, Stderr: &errb,
		Getenv: func(string) string { return "" },
		NewClient: func(string) (kubernetes.Interface, error) {
			if client == nil {
				t.Fatal("the command connected to the API server")
			}
			return client, nil
		}}
	code = Run(args, e, "1.2.3")
	return code, out.String(), errb.String()
}

func readyRelease() []runtime.Object {
	labels := map[string]string{"app.kubernetes.io/instance": "mc", "batch.kubernetes.io/job-name": "mc"}
	job := &batchv1.Job{ObjectMeta: metav1.ObjectMeta{Name: "mc", Namespace: "hpc", Labels: map[string]string{
		"app.kubernetes.io/instance": "mc", "app.kubernetes.io/component": "broker"}}, Spec: batchv1.JobSpec{Parallelism: ptr.To[int32](1)}}
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "mc-0", Namespace: "hpc", Labels: labels},
		Status: corev1.PodStatus{Conditions: []corev1.PodCondition{{Type: corev1.PodReady, Status: corev1.ConditionTrue}}}}
	return []runtime.Object{job, pod}
}

// TestWait: the release as an argument (or as the old --release), the namespace with -n; a
// call without a release, or with two, is a usage error that reaches no API server.
func TestWait(t *testing.T) {
	for _, args := range [][]string{
		{"wait", "mc", "-n", "hpc", "--timeout", "5s"},
		{"wait", "--release", "mc", "--namespace", "hpc", "--timeout", "5s"},
		{"wait", "mc", "--release", "mc", "-n", "hpc"},
	} {
		code, stdout, stderr := run(t, "", readyRelease(), args...)
		if code != exitOK || !strings.Contains(stdout, "1 of 1 broker pods ready") || stderr != "" {
			t.Errorf("%v: exit %d, stdout %q, stderr %q", args, code, stdout, stderr)
		}
	}
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"wait", "-n", "hpc"}, "no release to wait for (usage: minicluster wait RELEASE [flags])"},
		{[]string{"wait", "mc", "--release", "other", "-n", "hpc"}, "give the release once"},
		{[]string{"wait", "a", "b"}, "accepts at most 1 arg"},
		{[]string{"wait", "mc", "--timeout", "soon"}, `invalid argument "soon"`},
		{[]string{"waitt"}, `unknown command "waitt"`},
	} {
		code, _, stderr := run(t, "", nil, tc.args...)
		if code != exitUsage || !strings.HasPrefix(stderr, "minicluster: ") || !strings.Contains(stderr, tc.want) {
			t.Errorf("%v: exit %d, stderr %q, want exit 2 and %q", tc.args, code, stderr, tc.want)
		}
	}
}

// TestConvert: the values of a Flux Operator MiniCluster on stdout; a refusal writes nothing.
func TestConvert(t *testing.T) {
	const mc = "apiVersion: flux-framework.org/v1alpha2\nkind: MiniCluster\nmetadata:\n  name: flux-sample\n" +
		"spec:\n  size: 2\n  containers:\n    - image: ubuntu:noble\n      command: echo hello world\n"
	code, stdout, stderr := run(t, mc, nil, "convert", "--image", "ubuntu:noble=reg/app:1")
	if code != exitOK || !strings.Contains(stdout, "image: reg/app:1\n") || !strings.Contains(stdout, "size: 2\n") {
		t.Errorf("convert: exit %d, stdout %q, stderr %q", code, stdout, stderr)
	}
	code, stdout, stderr = run(t, strings.Replace(mc, "size: 2", "size: 2\n  minSize: 1", 1), nil, "convert", "-")
	if code != exitFailure || stdout != "" || !strings.Contains(stderr, "stdin: cannot convert") {
		t.Errorf("refused: exit %d, stdout %q, stderr %q", code, stdout, stderr)
	}
	if code, _, stderr = run(t, "", nil, "convert", "--image", "noequals"); code != exitUsage {
		t.Errorf("bad --image: exit %d, stderr %q", code, stderr)
	}
}

// TestRoot: no verb lists the verbs; --version is the build's.
func TestRoot(t *testing.T) {
	code, stdout, _ := run(t, "", nil)
	if code != exitOK || !strings.Contains(stdout, "minicluster wait RELEASE") || !strings.Contains(stdout, "convert") {
		t.Errorf("no verb: exit %d, stdout %q", code, stdout)
	}
	if code, stdout, _ = run(t, "", nil, "--version"); code != exitOK || !strings.Contains(stdout, "1.2.3") {
		t.Errorf("--version: exit %d, stdout %q", code, stdout)
	}
}
