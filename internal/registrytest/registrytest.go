// Package registrytest starts the real OCI registry the project's scripts run (ci/registry:
// Debian's docker-registry, the CNCF distribution registry) for a test, on a free loopback port.
package registrytest

import (
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/minicluster/minicluster/internal/repo"
	"github.com/minicluster/minicluster/internal/tooltest"
)

// Binary is the registry ci/registry/up.sh runs.
const Binary = "/usr/bin/docker-registry"

// Registry is one started registry: its address and the state directory its scripts use.
type Registry struct {
	Addr, State string
}

// Start runs ci/registry/up.sh on a free loopback port with a state directory of the test's
// own, and down.sh when the test ends (which must say the registry stopped).
func Start(t testing.TB) Registry {
	t.Helper()
	tooltest.File(t, Binary, "install Debian's registry (apt-get install docker-registry; make deps does it)")
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	r := Registry{Addr: l.Addr().String(), State: t.TempDir()}
	l.Close()
	t.Log(strings.TrimSpace(r.Script(t, "up.sh")))
	t.Cleanup(func() {
		if out := r.Script(t, "down.sh"); !strings.Contains(out, "stopped") {
			t.Errorf("ci/registry/down.sh did not stop the registry: %s", out)
		}
	})
	return r
}

// Script runs ci/registry/<which> for this registry and returns its output.
func (r Registry) Script(t testing.TB, which string) string {
	t.Helper()
	root, err := repo.Root()
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command("bash", filepath.Join(root, "ci", "registry", which))
	cmd.Env = append(os.Environ(), "REGISTRY_ADDR="+r.Addr, "CLUSTER_DIR="+r.State)
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("ci/registry/%s: %v\n%s", which, err, out)
	}
	return string(out)
}
