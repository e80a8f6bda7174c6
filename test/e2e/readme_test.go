//go:build e2e

package e2e

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"
)

// readmeMark marks the README's quick start for "your cluster": the fenced block after it is
// what this test runs, verbatim.
const readmeMark = "<!-- README test: your cluster"

// TestReadmeQuickStart runs the README's quick start for "your cluster" verbatim in bash against
// this cluster, with the two variables the README tells a user to set (REGISTRY, NAMESPACE) set
// to this cluster's registry and a new namespace: install, kube wait, flux resource list in the
// lead, resize, uninstall. It must succeed, say what the README's comments promise, and leave
// nothing of the release behind, so that the README's first screen never lies.
func TestReadmeQuickStart(t *testing.T) {
	raw, err := os.ReadFile(filepath.Join(repoRoot, "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	readme := string(raw)
	script, err := markedBlock(readme, readmeMark)
	if err != nil {
		t.Fatal(err)
	}
	// The variables the script uses are the ones the README has the user export.
	for _, v := range []string{"REGISTRY", "NAMESPACE"} {
		if !strings.Contains(readme, "export "+v+"=") {
			t.Fatalf("README.md does not show the user setting %s (export %s=...), which its quick start uses", v, v)
		}
	}
	if imagePrefix == "localhost/minicluster/" {
		skipUnlessRequired(t, "no CLUSTER_REGISTRY: the README's quick start pulls flux-keygen from a registry (make e2e sets it on the local cluster)")
	}
	ns := newNamespace(t, "readme")
	t.Cleanup(func() { // only if the script failed before its uninstall
		_ = exec.Command(helm4, "uninstall", "flux-sample", "-n", ns, "--ignore-not-found", "--kubeconfig", kubeconfig).Run()
	})

	// The user's helm, kubectl and the flux-keygen of `make build`. This cluster reaches no public
	// registry, so the helm on PATH installs with this project's images in place of the public
	// ubuntu and flux-view ones (the brokers' images, which the README leaves at their defaults);
	// every argument the README gives passes through as it is.
	dir := t.TempDir()
	wrapper := "#!/bin/bash\nif [[ ${1-} == install ]]; then exec " + helm4 + ` "$@" --set image=` + appImage +
		",flux.view.image=" + viewImage + "\nfi\nexec " + helm4 + " \"$@\"\n"
	if err := os.WriteFile(filepath.Join(dir, "helm"), []byte(wrapper), 0o755); err != nil {
		t.Fatal(err)
	}
	clusterBin := filepath.Join(envOr("CLUSTER_DIR", filepath.Join(repoRoot, ".cluster")), "bin")
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, "bash", "-euo", "pipefail", "-c", script)
	cmd.Dir = repoRoot
	cmd.Env = append(os.Environ(), "KUBECONFIG="+kubeconfig, "NAMESPACE="+ns,
		"REGISTRY="+strings.TrimSuffix(imagePrefix, "/"),
		"PATH="+dir+":"+clusterBin+":"+os.Getenv("PATH"))
	out, err := cmd.CombinedOutput()
	t.Logf("README quick start:\n%s\n%s", indent(script), indent(string(out)))
	if err != nil {
		t.Fatalf("the README's quick start failed: %v", err)
	}
	for _, want := range []*regexp.Regexp{
		regexp.MustCompile(`wait: release ` + ns + `/flux-sample: 3 of 3 broker pods ready`),
		regexp.MustCompile(`(?m)^\s*free\s+3\s`), // flux resource list: 3 nodes up and free
		regexp.MustCompile(`wait: release ` + ns + `/flux-sample: 4 of 4 broker pods ready`),
		regexp.MustCompile(`release "flux-sample" uninstalled`),
	} {
		if !want.MatchString(string(out)) {
			t.Errorf("the quick start's output does not match %s", want)
		}
	}
	waitNothingLeft(t, ns, "flux-sample", 2*time.Minute)
}

// markedBlock returns the fenced code block that follows the line starting with mark.
func markedBlock(doc, mark string) (string, error) {
	_, after, ok := strings.Cut(doc, "\n"+mark)
	if !ok {
		return "", fmt.Errorf("README.md has no line %q before its quick start", mark)
	}
	lines := strings.Split(after, "\n")[1:]
	if len(lines) == 0 || !strings.HasPrefix(lines[0], "```") {
		return "", fmt.Errorf("the line after %q in README.md is not a fenced code block", mark)
	}
	for i, l := range lines[1:] {
		if strings.HasPrefix(l, "```") {
			return strings.Join(lines[1:i+1], "\n") + "\n", nil
		}
	}
	return "", fmt.Errorf("the code block after %q in README.md does not end", mark)
}
