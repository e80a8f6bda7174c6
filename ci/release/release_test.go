// Package release tests ci/release.sh (make release) end to end: a clean clone of this
// repository is released to the real registry of ci/registry/up.sh and read back with both helm
// CLIs and go-containerregistry.
package release

import (
	"archive/tar"
	"compress/gzip"
	"errors"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-containerregistry/pkg/name"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	"github.com/google/go-containerregistry/pkg/v1/remote/transport"
	"sigs.k8s.io/yaml"

	"github.com/minicluster/minicluster/internal/helmtest"
	"github.com/minicluster/minicluster/internal/registrytest"
	"github.com/minicluster/minicluster/internal/repo"
	"github.com/minicluster/minicluster/internal/tooltest"
)

// repoRoot is the repository this test belongs to (the test runs in ci/release).
func repoRoot(t *testing.T) string {
	t.Helper()
	root, err := repo.Root()
	if err != nil {
		t.Fatal(err)
	}
	return root
}

// helmCLIs are the two helm CLIs that `make tools` builds ($HELM3 and $HELM4 if set).
func helmCLIs(t *testing.T) map[string]string {
	t.Helper()
	return map[string]string{"helm3": helmtest.HelmCLI(t, 3), "helm4": helmtest.HelmCLI(t, 4)}
}

// run runs a command in dir with extra environment and returns its combined output.
func run(dir string, env []string, name string, args ...string) (string, error) {
	cmd := exec.Command(name, args...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), env...)
	out, err := cmd.CombinedOutput()
	return string(out), err
}

func must(t *testing.T, dir string, env []string, name string, args ...string) string {
	t.Helper()
	out, err := run(dir, env, name, args...)
	if err != nil {
		t.Fatalf("%s %s: %v\n%s", name, strings.Join(args, " "), err, out)
	}
	return out
}

// testKey makes a throwaway GnuPG signing key (no passphrase) and returns the key's name, the
// secret keyring helm package --sign reads and the public keyring helm --verify reads.
func testKey(t *testing.T) (key, secring, pubring string) {
	t.Helper()
	tooltest.Command(t, "gpg", "apt-get install gnupg (make deps does it)")
	// A short home: gpg-agent's socket path must stay under the sun_path limit.
	home, err := os.MkdirTemp("", "gpg")
	if err != nil {
		t.Fatal(err)
	}
	env := []string{"GNUPGHOME=" + home}
	t.Cleanup(func() {
		_, _ = run(home, env, "gpgconf", "--kill", "all") // the agent gpg started for this home
		os.RemoveAll(home)
	})
	if err := os.Chmod(home, 0o700); err != nil {
		t.Fatal(err)
	}
	key = "minicluster release test <release-test@example.invalid>"
	must(t, home, env, "gpg", "--batch", "--pinentry-mode", "loopback", "--passphrase", "", "--quick-gen-key", key, "ed25519", "sign", "1d")
	dir := t.TempDir()
	secring, pubring = filepath.Join(dir, "secring.gpg"), filepath.Join(dir, "pubring.gpg")
	for path, export := range map[string]string{secring: "--export-secret-keys", pubring: "--export"} {
		data := must(t, home, env, "gpg", "--batch", export)
		if err := os.WriteFile(path, []byte(data), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	return key, secring, pubring
}

// chartMeta is what the test reads of a Chart.yaml.
type chartMeta struct {
	Version     string            `json:"version"`
	AppVersion  string            `json:"appVersion"`
	KubeVersion string            `json:"kubeVersion"`
	Annotations map[string]string `json:"annotations"`
}

type ahImage struct {
	Name  string `json:"name"`
	Image string `json:"image"`
}

func (m chartMeta) images(t *testing.T) []ahImage {
	t.Helper()
	var imgs []ahImage
	if err := yaml.Unmarshal([]byte(m.Annotations["artifacthub.io/images"]), &imgs); err != nil {
		t.Fatalf("artifacthub.io/images: %v", err)
	}
	return imgs
}

// chartYAMLOf reads minicluster/Chart.yaml from a chart archive.
func chartYAMLOf(t *testing.T, tgz string) chartMeta {
	t.Helper()
	f, err := os.Open(tgz)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	zr, err := gzip.NewReader(f)
	if err != nil {
		t.Fatal(err)
	}
	tr := tar.NewReader(zr)
	for {
		h, err := tr.Next()
		if err != nil {
			t.Fatalf("%s: no minicluster/Chart.yaml (%v)", tgz, err)
		}
		if h.Name != "minicluster/Chart.yaml" {
			continue
		}
		data, err := io.ReadAll(tr)
		if err != nil {
			t.Fatal(err)
		}
		var m chartMeta
		if err := yaml.Unmarshal(data, &m); err != nil {
			t.Fatalf("%s: Chart.yaml: %v", tgz, err)
		}
		return m
	}
}

// headStatus is the registry's answer to an OCI HEAD of ref: nil when it exists.
func headStatus(ref string) error {
	tag, err := name.NewTag(ref, name.Insecure)
	if err != nil {
		return err
	}
	_, err = remote.Head(tag)
	return err
}

func isNotFound(err error) bool {
	var terr *transport.Error
	return errors.As(err, &terr) && terr.StatusCode == http.StatusNotFound
}

// TestReleaseToRealRegistry bumps the version in a clone of the committed tree the way a
// maintainer does (VERSION, make version's go run ./ci/version, a commit), releases it to a real
// registry (signed with a throwaway key, without the Flux images: MINICLUSTER_FLUX_DIR is unset),
// pulls the chart back with helm 3 and helm 4 (plain and --verify), checks the flux-keygen index,
// and that releasing another version than the commit's, the same version again and from a dirty
// tree are refused.
func TestReleaseToRealRegistry(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: builds images and talks to a registry")
	}
	clis := helmCLIs(t)
	addr := registrytest.Start(t).Addr
	key, secring, pubring := testKey(t)

	clone := filepath.Join(t.TempDir(), "minicluster")
	must(t, "", nil, "git", "clone", "-q", repoRoot(t), clone)
	t.Logf("released tree: %s", strings.TrimSpace(must(t, clone, nil, "git", "log", "--oneline", "-1")))

	const version = "9.8.7-rc.1"
	registry := addr + "/minicluster/test"
	env := func(v string) []string {
		// E2E=0: no cluster here; test/e2e's TestInstallFromRegistry runs the release's
		// end-to-end step against a cluster.
		return []string{"E2E=0", "VERSION=" + v, "REGISTRY=" + registry, "HELM=" + clis["helm3"], "HELM4=" + clis["helm4"],
			"SIGN_KEY=" + key, "KEYRING=" + secring, "VERIFY_KEYRING=" + pubring}
	}
	// The Flux images need a long flux-core build: without MINICLUSTER_FLUX_DIR ci/images skips them.
	t.Setenv("MINICLUSTER_FLUX_DIR", "")
	os.Unsetenv("MINICLUSTER_FLUX_DIR")

	// A version other than the commit's: refused, nothing pushed.
	out, err := run(clone, env(version), "bash", "ci/release.sh")
	if err == nil || !strings.Contains(out, "VERSION="+version+", but this commit's ./VERSION is") || !strings.Contains(out, "run make version") {
		t.Errorf("a release of another version than ./VERSION was not refused clearly (err %v):\n%s", err, out)
	}
	if err := headStatus(registry + "/flux-keygen:" + version); !isNotFound(err) {
		t.Errorf("flux-keygen:%s after the refused release: want 404, got %v", version, err)
	}
	// The bump.
	if err := os.WriteFile(filepath.Join(clone, "VERSION"), []byte(version+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	must(t, clone, nil, "go", "run", "./ci/version")
	for _, f := range []string{"charts/minicluster/Chart.yaml", "postrender/plugin/plugin.yaml", "values/mpich.yaml"} {
		if data, err := os.ReadFile(filepath.Join(clone, f)); err != nil || !strings.Contains(string(data), version) {
			t.Errorf("make version did not write %s into %s (%v)", version, f, err)
		}
	}
	must(t, clone, nil, "git", "-c", "user.name=release test", "-c", "user.email=release@test.invalid", "commit", "-q", "-a", "-m", "version "+version)

	start := time.Now()
	out, err = run(clone, env(version), "bash", "ci/release.sh")
	t.Logf("ci/release.sh (%s):\n%s", time.Since(start).Round(time.Millisecond), out)
	if err != nil {
		t.Fatalf("ci/release.sh: %v", err)
	}
	for _, want := range []string{"released minicluster " + version, registry + "/flux-keygen:" + version + "@sha256:",
		"oci://" + registry + "/charts/minicluster:" + version + "@sha256:", "provenance", "NOT pushed: the flux, flux-view and app images", "NOT tested end to end (E2E=0)",
		"flux-keygen-" + version + "-linux-arm64", "flux-keygen-" + version + "-darwin-amd64",
		"minicluster-" + version + "-linux-amd64", "minicluster-" + version + "-darwin-arm64"} {
		if !strings.Contains(out, want) {
			t.Errorf("ci/release.sh's output lacks %q", want)
		}
	}
	if strings.Contains(out, registry+"/pause:") {
		t.Errorf("the release pushed the local cluster's pause image")
	}
	if st := must(t, clone, nil, "git", "status", "--porcelain", "--untracked-files=all"); st != "" {
		t.Errorf("the release left the clone dirty:\n%s", st)
	}

	chartRef := "oci://" + registry + "/charts/minicluster"
	for _, which := range []string{"helm3", "helm4"} {
		for _, verify := range []bool{false, true} {
			dir := t.TempDir()
			args := []string{"pull", chartRef, "--version", version, "--plain-http", "-d", dir}
			if verify {
				args = append(args, "--verify", "--keyring", pubring)
			}
			pulled := must(t, "", nil, clis[which], args...)
			if verify && !strings.Contains(pulled, "Signed by: "+key) {
				t.Errorf("%s pull --verify did not report the signer:\n%s", which, pulled)
			}
			m := chartYAMLOf(t, filepath.Join(dir, "minicluster-"+version+".tgz"))
			if m.Version != version || m.AppVersion != version {
				t.Errorf("%s pull: Chart.yaml version %q appVersion %q, want %q for both", which, m.Version, m.AppVersion, version)
			}
			if m.KubeVersion == "" {
				t.Errorf("%s pull: Chart.yaml lost kubeVersion", which)
			}
			found := false
			for _, img := range m.images(t) {
				found = found || img.Image == "ghcr.io/minicluster/flux-keygen:"+version
			}
			if !found {
				t.Errorf("%s pull: artifacthub.io/images lacks ghcr.io/minicluster/flux-keygen:%s: %v", which, version, m.images(t))
			}
		}
	}
	// A wrong keyring must fail the verification: --verify really checks.
	if out, err := run("", nil, clis["helm4"], "pull", chartRef, "--version", version, "--plain-http", "-d", t.TempDir(),
		"--verify", "--keyring", filepath.Join(repoRoot(t), "VERSION")); err == nil {
		t.Errorf("helm pull --verify with a keyring without the key succeeded:\n%s", out)
	}

	tag, err := name.NewTag(registry+"/flux-keygen:"+version, name.Insecure)
	if err != nil {
		t.Fatal(err)
	}
	idx, err := remote.Index(tag)
	if err != nil {
		t.Fatalf("flux-keygen:%s is not an index: %v", version, err)
	}
	im, err := idx.IndexManifest()
	if err != nil {
		t.Fatal(err)
	}
	var platforms []string
	for _, d := range im.Manifests {
		if d.Platform != nil {
			platforms = append(platforms, d.Platform.String())
		}
	}
	if strings.Join(platforms, ",") != "linux/amd64,linux/arm64" {
		t.Errorf("flux-keygen:%s platforms %v, want linux/amd64 and linux/arm64", version, platforms)
	}

	// The same version again: refused before anything is built or pushed.
	out, err = run(clone, env(version), "bash", "ci/release.sh")
	if err == nil || !strings.Contains(out, "version "+version+" is already released at "+registry) {
		t.Errorf("a second release of %s was not refused clearly (err %v):\n%s", version, err, out)
	}

	// A dirty tree (an untracked file is enough): refused, and nothing of that version pushed.
	const other = "9.8.8"
	if err := os.WriteFile(filepath.Join(clone, "stray.txt"), []byte("not committed\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	out, err = run(clone, env(other), "bash", "ci/release.sh")
	if err == nil || !strings.Contains(out, "the git tree is dirty") || !strings.Contains(out, "stray.txt") {
		t.Errorf("a release from a dirty tree was not refused clearly (err %v):\n%s", err, out)
	}
	for _, ref := range []string{registry + "/flux-keygen:" + other, registry + "/charts/minicluster:" + other} {
		if err := headStatus(ref); !isNotFound(err) {
			t.Errorf("%s after the refused release: want 404, got %v", ref, err)
		}
	}
}

// TestVersionInOnePlace: ./VERSION is the version; the tree's Chart.yaml (version, appVersion,
// the flux-keygen image of artifacthub.io/images) and plugin.yaml agree with it (make version
// writes it there; ci/release.sh releases the commit as it is), and artifacthub.io/images lists
// exactly the images the chart renders with its default values.
func TestVersionInOnePlace(t *testing.T) {
	root := repoRoot(t)
	data, err := os.ReadFile(filepath.Join(root, "VERSION"))
	if err != nil {
		t.Fatal(err)
	}
	version := strings.TrimSpace(string(data))
	if version == "" || strings.ContainsAny(version, " \n+") {
		t.Fatalf("VERSION %q: want one x.y.z line", data)
	}
	var m chartMeta
	if data, err = os.ReadFile(filepath.Join(root, "charts/minicluster/Chart.yaml")); err != nil {
		t.Fatal(err)
	}
	if err := yaml.Unmarshal(data, &m); err != nil {
		t.Fatal(err)
	}
	if m.Version != version || m.AppVersion != version {
		t.Errorf("Chart.yaml version %q appVersion %q, VERSION says %q", m.Version, m.AppVersion, version)
	}
	var plugin struct {
		Version string `json:"version"`
	}
	if data, err = os.ReadFile(filepath.Join(root, "postrender/plugin/plugin.yaml")); err != nil {
		t.Fatal(err)
	}
	if err := yaml.Unmarshal(data, &plugin); err != nil {
		t.Fatal(err)
	}
	if plugin.Version != version {
		t.Errorf("plugin.yaml version %q, VERSION says %q", plugin.Version, version)
	}
	if lic := m.Annotations["artifacthub.io/license"]; lic != "Apache-2.0" {
		t.Errorf("artifacthub.io/license is %q, want Apache-2.0 (the LICENSE file)", lic)
	}
	if raw, err := os.ReadFile(filepath.Join(repoRoot(t), "LICENSE")); err != nil || !strings.Contains(string(raw), "Apache License") {
		t.Errorf("LICENSE: %v (want the Apache License 2.0 text)", err)
	}
	for _, k := range []string{"artifacthub.io/images", "artifacthub.io/links", "artifacthub.io/changes"} {
		if m.Annotations[k] == "" {
			t.Errorf("Chart.yaml: no %s annotation", k)
		}
	}

	listed := map[string]bool{}
	for _, img := range m.images(t) {
		listed[img.Image] = true
	}
	rendered := map[string]bool{}
	out := must(t, "", nil, helmCLIs(t)["helm3"], "template", "x", filepath.Join(root, "charts/minicluster"), "--kube-version", "1.30.0")
	for _, line := range strings.Split(out, "\n") {
		if img, ok := strings.CutPrefix(strings.TrimSpace(line), "image: "); ok {
			rendered[strings.Trim(img, `"'`)] = true
		}
	}
	for img := range rendered {
		if !listed[img] {
			t.Errorf("the chart renders image %s, artifacthub.io/images does not list it", img)
		}
	}
	for img := range listed {
		if !rendered[img] {
			t.Errorf("artifacthub.io/images lists %s, the chart does not render it", img)
		}
	}
}
