package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/minicluster/minicluster/internal/benchresult"
)

var machine = benchresult.Machine{CPU: "Test CPU", Cores: 2, Kernel: "Linux 6.1.0 x86_64", Nodes: 3}

func result(name string, runs int, metrics map[string]float64) benchresult.Result {
	return benchresult.Result{Benchmark: name, Runs: runs, Date: time.Date(2026, 3, 4, 5, 6, 0, 0, time.UTC),
		Machine: machine, Command: "go test -bench " + name, Metrics: metrics}
}

// sample writes result files as the benchmarks do and returns their directory.
func sample(t *testing.T, rs ...benchresult.Result) string {
	t.Helper()
	dir := t.TempDir()
	for _, r := range rs {
		if err := benchresult.Write(dir, r); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

// makefile writes a Makefile whose bench-e2e recipe runs the benchmarks patterns match, and
// returns its path.
func makefile(t *testing.T, patterns ...string) string {
	t.Helper()
	text := "report:\n\tgo run ./ci/report\n\nbench-e2e: build ## timings\n\tbash ci/operator/build.sh\n"
	for _, p := range patterns {
		text += "\tgo test -tags e2e -run '^$$' -bench '" + p + "' -benchtime 3x ./test/e2e/...\n"
	}
	text += "\nbench: ## Go benchmarks\n\tgo test -run='^$$' -bench 'Kueue' ./...\n"
	path := filepath.Join(t.TempDir(), "Makefile")
	if err := os.WriteFile(path, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

func generate(t *testing.T, dir string) string {
	t.Helper()
	out := filepath.Join(t.TempDir(), "performance.md")
	if err := run(dir, out, makefile(t, "Floor|MiniCluster|Uninstall", "Scale|Topology"), false); err != nil {
		t.Fatal(err)
	}
	data, err := os.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	return string(data)
}

// section is the report's text from the heading up to the next heading.
func section(report, heading string) string {
	_, rest, ok := strings.Cut(report, "## "+heading+"\n")
	if !ok {
		return ""
	}
	if i := strings.Index(rest, "\n## "); i >= 0 {
		rest = rest[:i]
	}
	return rest
}

// contains fails the test for each of wants that text, the named part of the report, lacks.
func contains(t *testing.T, what, text string, wants ...string) {
	t.Helper()
	for _, want := range wants {
		if !strings.Contains(text, want) {
			t.Errorf("%s lacks %q:\n%s", what, want, text)
		}
	}
}

func TestTablesFromResults(t *testing.T) {
	dir := sample(t,
		result("BenchmarkMiniCluster", 3, map[string]float64{"s/floor": 1.234, "s/ephemeral-install-to-lead-succeeded": 6.5}),
		result("BenchmarkScale/size=16", 1, map[string]float64{"s/up": 6.57, "s/up-floor": 2.46}),
		result("BenchmarkScale/size=6", 1, map[string]float64{"s/up": 3.34, "s/up-floor": 0.97}),
		result("BenchmarkOperator/size=6", 3, map[string]float64{"s/floor-ephemeral": 2.81, "s/operator-ephemeral": 28.81, "s/chart-ephemeral": 4.94, "s/chart-copy-ephemeral": 25.87}),
	)
	report := generate(t, dir)

	floors := section(report, "Next to the floors")
	contains(t, "the floors' section", floors,
		"| step | seconds |",
		"| floor: a bare indexed Job of 6 and its headless Service → every pod running and listed | 1.23 |",
		"| ephemeral install (`flux run -N 6 hostname`) → lead Succeeded | 6.50 |",
		"| interactive install → Flux counts 6 brokers online | – |", // not reported by that run
		"Measured 2026-03-04 05:06 UTC on Test CPU, 2 cores, Linux 6.1.0 x86_64, 3 Kubernetes nodes, the mean of 3 runs: `go test -bench BenchmarkMiniCluster`.",
		// A comparison without results says so, with the command that measures it and whether
		// make bench-e2e runs it.
		"*Not measured in this report.* `go test -tags e2e -run '^$' -bench Uninstall -benchtime 3x ./test/e2e/` measures it (`make bench-e2e` runs it).",
	)
	contains(t, "the Kueue section", section(report, "Queued by Kueue"), "measures it (`make bench-e2e` does not run it).")

	// Sizes are columns in the order of their numbers; columns of different runs each say theirs.
	contains(t, "the size section", section(report, "By size"),
		"| step | size 6 | size 16 |",
		"| install → Flux counts every broker up | 3.34 | 6.57 |",
		"- size 6: measured 2026-03-04 05:06 UTC on Test CPU, 2 cores, Linux 6.1.0 x86_64, 3 Kubernetes nodes, 1 run: `go test -bench BenchmarkScale/size=6`.",
	)

	op := section(report, "Next to the Flux Operator")
	contains(t, "the operator section", op,
		"| size 6, seconds | floor | Flux Operator | chart | chart, view copied |",
		"| ephemeral create → lead Succeeded | 2.81 | 28.81 | 4.94 | 25.87 |",
		"the median of 3 runs",
	)
	for _, s := range []string{"Simulated scale", "HPC", "Queued by Kueue"} {
		if !strings.Contains(section(report, s), "*Not measured in this report.*") {
			t.Errorf("section %s, without results, does not say so", s)
		}
	}
	if !strings.Contains(report, "(performance-traced.md)") {
		t.Error("the report does not point to where the time goes")
	}
}

func TestCheck(t *testing.T) {
	// A result for every comparison but HPC's and Kueue's: the report is written, but the check
	// names the two comparisons without figures and how to measure them.
	var rs []benchresult.Result
	for _, s := range specs {
		if s.key != "hpc" && s.key != "kueue" {
			rs = append(rs, result(s.bench, 1, map[string]float64{"s/x": 1}))
		}
	}
	dir := sample(t, rs...)
	out := filepath.Join(t.TempDir(), "performance.md")
	mk := makefile(t, "HPC")
	if err := run(dir, out, mk, false); err != nil {
		t.Fatal(err)
	}
	err := run(dir, out, mk, true)
	if err == nil || !strings.Contains(err.Error(), "comparisons without figures: run BenchmarkHPC (`go test -tags e2e -run '^$' -bench HPC -benchtime 3x ./test/e2e/`); BenchmarkKueue (`make kueue-up") {
		t.Fatalf("check of a report with holes: %v, want one naming HPC and Kueue", err)
	}
	if err := benchresult.Write(dir, result("BenchmarkHPC", 2, map[string]float64{"s/lammps-loop": 17})); err != nil {
		t.Fatal(err)
	}
	if err := benchresult.Write(dir, result("BenchmarkKueue", 3, map[string]float64{"s/floor-admit": 0.06})); err != nil {
		t.Fatal(err)
	}
	if err := run(dir, out, mk, false); err != nil {
		t.Fatal(err)
	}
	if err := run(dir, out, mk, true); err != nil {
		t.Fatalf("check of a fresh report: %v", err)
	}
	// A figure edited by hand is stale.
	data, _ := os.ReadFile(out)
	if err := os.WriteFile(out, []byte(strings.Replace(string(data), "17.00", "12.00", 1)), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := run(dir, out, mk, true); err == nil || !strings.Contains(err.Error(), "stale: "+out) {
		t.Fatalf("check of an edited report: %v, want stale", err)
	}
	// And so is the report once a new result comes in.
	if err := run(dir, out, mk, false); err != nil {
		t.Fatal(err)
	}
	if err := benchresult.Write(dir, result("BenchmarkKueue", 4, map[string]float64{"s/floor-admit": 0.07})); err != nil {
		t.Fatal(err)
	}
	if err := run(dir, out, mk, true); err == nil {
		t.Fatal("check passed with a result the report does not show")
	}
}

func TestBadResultIsNamed(t *testing.T) {
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "BenchmarkX.json"), []byte("{"), 0o644); err != nil {
		t.Fatal(err)
	}
	err := run(dir, filepath.Join(t.TempDir(), "p.md"), makefile(t, "X"), false)
	if err == nil || !strings.Contains(err.Error(), "BenchmarkX.json: not a benchmark result") {
		t.Fatalf("err = %v", err)
	}
}

// A figure in the prose, with no result behind it, fails the report; a setting written as one
// passes, and says why.
func TestProseFigures(t *testing.T) {
	for _, c := range []struct{ prose, want string }{
		{"Uninstall.\nThe brokers stop, 8 s more on this machine.\n", `line 2: "8 s"`},
		{"helm returns in a few tenths of a second.\n", `line 1: "tenths of a second"`},
		{"Runs move by 10–40% here.\n", `"10–40%"`},
		{"It creates 20 pods a second.\n", `"20 pods a second"`},
		{"{{ table \"hpc\" }}\nKueue admits in well under a second.\n", `line 2: "under a second"`},
	} {
		_, _, err := render(c.prose, nil, nil)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("prose %q: err = %v, want one naming %s", c.prose, err, c.want)
		}
	}
	got, _, err := render("The kubelet relists every {{ setting \"1 s\" \"its relist period\" }}; 6 brokers, Kubernetes 1.35.\n", nil, nil)
	if err != nil || string(got) != "The kubelet relists every 1 s; 6 brokers, Kubernetes 1.35.\n" {
		t.Errorf("a setting: %q, %v", got, err)
	}
	if _, _, err := render(`every {{ setting "1 s" "" }}`, nil, nil); err == nil || !strings.Contains(err.Error(), `setting "1 s": say what sets it`) {
		t.Errorf("a setting without its reason: %v", err)
	}
}

// The report's own template holds no figure of its own.
func TestTemplateHasNoFigures(t *testing.T) {
	if found := proseFigures(reportTemplate); len(found) > 0 {
		t.Errorf("report.md.tmpl: figures without a result: %v", found)
	}
	if found := proseFigures(tracedTemplate); len(found) > 0 {
		t.Errorf("traced.md.tmpl: figures without a result: %v", found)
	}
}

// Which benchmarks make bench-e2e runs is read from its recipe alone.
func TestBenchE2E(t *testing.T) {
	patterns, err := benchE2E(makefile(t, "Floor|HPC", "Scale"))
	if err != nil {
		t.Fatal(err)
	}
	for bench, want := range map[string]bool{"BenchmarkHPC": true, "BenchmarkScale": true, "BenchmarkFloor": true, "BenchmarkKueue": false, "BenchmarkTuning": false} {
		if got := runsIn(bench, patterns); got != want {
			t.Errorf("runsIn(%s) = %v, want %v", bench, got, want)
		}
	}
	if _, err := benchE2E(filepath.Join(t.TempDir(), "none")); err == nil {
		t.Error("a missing Makefile passed")
	}
	empty := filepath.Join(t.TempDir(), "Makefile")
	if err := os.WriteFile(empty, []byte("bench-e2e:\n\ttrue\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := benchE2E(empty); err == nil || !strings.Contains(err.Error(), "no -bench") {
		t.Errorf("a recipe without -bench: %v", err)
	}
}
