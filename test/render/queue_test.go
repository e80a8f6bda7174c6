package render

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	batchv1 "k8s.io/api/batch/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/yaml"

	"github.com/minicluster/minicluster/internal/helmtest"
)

const queueLabel = "kueue.x-k8s.io/queue-name"

// With queue.name the broker Job alone is Kueue's: created suspended, with the queue label and as
// an elastic Job; the keygen Job, which the brokers wait for, is neither labelled nor suspended.
// Without it nothing mentions Kueue.
func TestQueueNameQueuesTheBrokerJobOnly(t *testing.T) {
	objs := render(t, helmtest.Options{Set: []string{"size=6", "queue.name=brokers"}})
	job := get[*batchv1.Job](t, objs, "Job", "flux-sample")
	assert.Equal(t, "brokers", job.Labels[queueLabel])
	assert.Equal(t, "true", job.Annotations["kueue.x-k8s.io/elastic-job"])
	assert.Equal(t, ptr.To(true), job.Spec.Suspend)
	assert.Equal(t, ptr.To(int32(6)), job.Spec.Parallelism, "one Workload of size pods")
	assert.NotContains(t, job.Spec.Template.Labels, queueLabel, "the label belongs on the Job, not its pods")
	keygen := get[*batchv1.Job](t, objs, "Job", "flux-sample-keygen")
	assert.NotContains(t, keygen.Labels, queueLabel)
	assert.Nil(t, keygen.Spec.Suspend)
	for _, o := range objs {
		if o.Kind != "Job" || o.Name != "flux-sample" {
			assert.NotContainsf(t, o.Object.(interface{ GetLabels() map[string]string }).GetLabels(), queueLabel, "%s %s", o.Kind, o.Name)
		}
	}

	plain := get[*batchv1.Job](t, render(t, helmtest.Options{}), "Job", "flux-sample")
	assert.NotContains(t, plain.Labels, queueLabel)
	assert.NotContains(t, plain.Annotations, "kueue.x-k8s.io/elastic-job")
	assert.Nil(t, plain.Spec.Suspend)
}

func TestQueueNameMustBeADNSLabel(t *testing.T) {
	for _, name := range []string{"Brokers", "my_queue", "-q", "q-", "q.x", "q" + strings.Repeat("0", 63)} {
		_, err := helmtest.Template(helmtest.Options{Namespace: "hpc", Set: []string{"queue.name=" + name}})
		if assert.Errorf(t, err, "queue.name=%q", name) {
			assert.Contains(t, err.Error(), `queue.name="`+name+`" is not a DNS label`)
			assert.Contains(t, err.Error(), "kubectl get localqueues -n hpc")
		}
	}
	for _, name := range []string{"q", "0q", "brokers-2", "q" + strings.Repeat("0", 62)} {
		_, err := helmtest.Template(helmtest.Options{Set: []string{"queue.name=" + name}})
		assert.NoErrorf(t, err, "queue.name=%q", name)
	}
}

// An upgrade renders suspend as the live Job has it: a resize of an admitted MiniCluster must not
// suspend it again (the Job controller would delete every broker), and one still waiting stays
// suspended. The queue cannot change on a running MiniCluster.
func TestQueueOnUpgrade(t *testing.T) {
	base := []string{"size=6", "command=hostname", "queue.name=brokers"}
	job, cert := liveRelease(t, base...)
	for _, tc := range []struct {
		name        string
		liveSuspend bool
	}{{"admitted", false}, {"waiting", true}} {
		t.Run(tc.name, func(t *testing.T) {
			live := job.DeepCopy()
			live.Spec.Suspend = ptr.To(tc.liveSuspend)
			out, err := helmtest.TemplateWithLive(helmtest.Options{Set: append(append([]string{}, base...), "size=4")}, toObjects(t, []any{live, cert})...)
			require.NoError(t, err)
			var got batchv1.Job
			require.NoError(t, yaml.Unmarshal([]byte(out["minicluster/templates/broker-job.yaml"]), &got))
			assert.Equal(t, ptr.To(tc.liveSuspend), got.Spec.Suspend)
			assert.Equal(t, ptr.To(int32(4)), got.Spec.Parallelism)
		})
	}
	for _, tc := range []struct {
		name  string
		set   []string
		want  string
		liveQ string
	}{
		{"queue changed", []string{"queue.name=other"}, `queue.name="other" differs from the running MiniCluster's queue "brokers"`, "brokers"},
		{"queue removed", []string{"queue.name="}, `queue.name="" differs from the running MiniCluster's queue "brokers"`, "brokers"},
		{"queue added", []string{"queue.name=brokers"}, `queue.name="brokers" differs from the running MiniCluster's queue ""`, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			live := job.DeepCopy()
			if tc.liveQ == "" {
				delete(live.Labels, queueLabel)
			}
			set := append([]string{"size=6", "command=hostname"}, tc.set...)
			_, err := helmtest.TemplateWithLive(helmtest.Options{Set: set}, toObjects(t, []any{live, cert})...)
			if assert.Error(t, err) {
				assert.Contains(t, err.Error(), tc.want)
				assert.Contains(t, err.Error(), "helm uninstall flux-sample -n default")
			}
		})
	}
}
