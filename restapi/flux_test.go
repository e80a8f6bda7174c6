package restapi

import (
	"errors"
	"testing"
)

// The texts are what flux-core 0.88 wrote for an unknown job on the local cluster.
func TestFluxErrorUnknownJob(t *testing.T) {
	for _, stderr := range []string{"flux-jobs: JobID 1099511627776 unknown", "flux-job: unknown job id", "flux-job: job 1099511627776 not found"} {
		if err := fluxError([]string{"jobs"}, stderr, errors.New("exit status 1")); !errors.Is(err, ErrNotFound) {
			t.Errorf("%q: %v, want ErrNotFound", stderr, err)
		}
	}
	if err := fluxError([]string{"jobs"}, "flux-job: eventlog path guest.output not found", errors.New("exit status 1")); errors.Is(err, ErrNotFound) {
		t.Errorf("a missing output eventlog alone is not an unknown job: %v", err)
	}
}
