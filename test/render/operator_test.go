package render

import (
	"testing"

	"github.com/stretchr/testify/assert"
	batchv1 "k8s.io/api/batch/v1"

	"github.com/minicluster/minicluster/internal/helmtest"
)

// The Flux Operator's logging, commands and batch settings (values logging, commands, batch):
// the values the chart takes. What the broker's supervisor makes of them: package supervisor.

func TestOperatorValuesRejected(t *testing.T) {
	for _, set := range []string{"jobLabels.team=1", "automountServiceAccountToken=maybe", "shareProcessNamespace=yes", "logging.quite=true", "commands.preRun=x", "batch.outputDir=relative", "logging.quiet=yes"} {
		_, err := helmtest.Template(helmtest.Options{Set: []string{"command=x", set}})
		assert.Error(t, err, set)
	}
}

func TestOperatorPodValues(t *testing.T) {
	pod := brokerPod(t, helmtest.Options{})
	assert.Equal(t, ptrBool(false), pod.AutomountServiceAccountToken, "the chart's own account: no token")
	assert.Nil(t, pod.ShareProcessNamespace)

	pod = brokerPod(t, helmtest.Options{Set: []string{"serviceAccountName=mine"}})
	assert.Equal(t, ptrBool(false), pod.AutomountServiceAccountToken, "a user's account: no token either")

	pod = brokerPod(t, helmtest.Options{Set: []string{"automountServiceAccountToken=true", "shareProcessNamespace=true"}})
	assert.Equal(t, ptrBool(true), pod.AutomountServiceAccountToken)
	assert.Equal(t, ptrBool(true), pod.ShareProcessNamespace)
	pod = brokerPod(t, helmtest.Options{Set: []string{"serviceAccountName=mine", "automountServiceAccountToken=false"}})
	assert.Equal(t, ptrBool(false), pod.AutomountServiceAccountToken)

	job := get[*batchv1.Job](t, render(t, helmtest.Options{Set: []string{"jobLabels.team=hpc"}}), "Job", "flux-sample")
	assert.Equal(t, "hpc", job.Labels["team"])
	assert.NotContains(t, job.Spec.Template.Labels, "team", "jobLabels stay on the Job")
}

func ptrBool(b bool) *bool { return &b }
