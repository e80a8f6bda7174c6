package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/minicluster/minicluster/internal/helmtest"
	"github.com/minicluster/minicluster/internal/repo"
	"github.com/minicluster/minicluster/internal/tooltest"
	"github.com/minicluster/minicluster/internal/valuesdoc"
)

// helmDocs is $HELM_DOCS (the Makefile exports it), else where `make tools` puts the version the
// Makefile names.
func helmDocs(t *testing.T) string {
	t.Helper()
	if p := os.Getenv("HELM_DOCS"); p != "" {
		return tooltest.File(t, p, "run `make tools`")
	}
	version, err := repo.MakefileVar("HELM_DOCS_VERSION")
	if err != nil || version == "" || strings.ContainsAny(version, " \t") {
		t.Fatalf("HELM_DOCS_VERSION in the Makefile: %q %v, want one word", version, err)
	}
	return tooltest.File(t, filepath.Join(helmtest.Root(), "bin", "tools", "helm-docs-"+version, "helm-docs"),
		"run `make tools` to build helm-docs, or set HELM_DOCS")
}

// chart writes a chart into a new directory: the real README.md.gotmpl unless files has one.
func chart(t *testing.T, files map[string]string) string {
	t.Helper()
	dir := t.TempDir()
	tmpl, err := os.ReadFile(filepath.Join(helmtest.ChartDir(), "README.md.gotmpl"))
	if err != nil {
		t.Fatal(err)
	}
	all := map[string]string{"Chart.yaml": "apiVersion: v2\nname: c\nversion: 0.1.0\n", "README.md.gotmpl": string(tmpl)}
	for name, s := range files {
		all[name] = s
	}
	for name, s := range all {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(s), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

const values = `# -- Broker port | TCP.
port: 8050
flux:
  # -- No limit
  # when null.
  deadline: null
  # -- Options.
  # @default -- none
  options: [a]
`

const schema = `{
  "properties": {
    "port": {},
    "flux": {
      "properties": {
        "deadline": {},
        "options": {}
      }
    }
  }
}
`

// The chart's template makes one row per value: `|` escaped, null as null, @default as written.
func TestTable(t *testing.T) {
	dir := chart(t, map[string]string{"values.yaml": values})
	got, err := render(helmDocs(t), dir)
	if err != nil {
		t.Fatal(err)
	}
	for _, row := range []string{
		"| key | default | description |\n|---|---|---|\n",
		"| `port` | `8050` | Broker port \\| TCP. |\n",
		"| `flux.deadline` | `null` | No limit when null. |\n",
		"| `flux.options` | none | Options. |\n",
	} {
		if !strings.Contains(string(got), row) {
			t.Errorf("no row %q in\n%s", row, got)
		}
	}
}

// --check names the stale files and the fix; a hand edit of README.md is stale too.
func TestCheck(t *testing.T) {
	bin := helmDocs(t)
	dir := chart(t, map[string]string{"values.yaml": values, "values.schema.json": schema, "README.md": "old\n"})
	readme, json := filepath.Join(dir, "README.md"), filepath.Join(dir, "values.schema.json")
	err := run(bin, dir, true)
	if want := "stale: " + readme + ", " + json + ": run make docs (it writes README.md from " + filepath.Join(dir, "README.md.gotmpl") + ": edits of README.md belong there)"; err == nil || err.Error() != want {
		t.Fatalf("check before writing = %v, want %q", err, want)
	}
	if err := run(bin, dir, false); err != nil {
		t.Fatal(err)
	}
	if err := run(bin, dir, true); err != nil {
		t.Fatalf("check after writing: %v", err)
	}
	b, _ := os.ReadFile(json)
	if !strings.Contains(string(b), `"description": "Options."`) {
		t.Errorf("schema without descriptions:\n%s", b)
	}
	if err := os.WriteFile(json, []byte(schema), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := run(bin, dir, true); err == nil || err.Error() != "stale: "+json+": run make docs" {
		t.Errorf("check with a stale schema = %v", err)
	}
}

// helm-docs exits 0 after a template error, with a warning and part of the README: that fails.
func TestRenderFailsOnWarning(t *testing.T) {
	dir := chart(t, map[string]string{"values.yaml": values, "README.md.gotmpl": "# c\n{{ .NoSuchField }}\n"})
	_, err := render(helmDocs(t), dir)
	if err == nil || !strings.Contains(err.Error(), "can't evaluate field NoSuchField") {
		t.Fatalf("render = %v, want helm-docs' warning", err)
	}
}

// The schema's descriptions (valuesdoc.Parse) are word for word the README's (helm-docs) for
// every key of the chart's values.yaml.
func TestDescriptionsAgree(t *testing.T) {
	src, err := os.ReadFile(filepath.Join(helmtest.ChartDir(), "values.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	dir := chart(t, map[string]string{
		"values.yaml":      string(src),
		"README.md.gotmpl": "{{ range .Values }}{{ .Key }}\t{{ .AutoDescription }}\n{{ end }}",
	})
	out, err := render(helmDocs(t), dir)
	if err != nil {
		t.Fatal(err)
	}
	ours, err := valuesdoc.Parse(src)
	if err != nil {
		t.Fatal(err)
	}
	theirs := strings.Split(strings.TrimSuffix(string(out), "\n"), "\n")
	if len(theirs) != len(ours) {
		t.Fatalf("helm-docs has %d values, valuesdoc %d", len(theirs), len(ours))
	}
	for i, v := range ours {
		if want := v.Key() + "\t" + v.Description; theirs[i] != want {
			t.Errorf("helm-docs:  %q\nvaluesdoc: %q", theirs[i], want)
		}
	}
}
