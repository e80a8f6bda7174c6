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

func generate(t *testing.T, dir string) string {
	t.Helper()
	out := filepath.Join(t.TempDir(), "performance.md")
	if err := run(dir, out, false); err != nil {
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
		// A comparison without results says so, with the command that measures it.
		"*Not measured in this report.* `go test -tags e2e -run '^$' -bench Uninstall",
	)

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
	if !strings.Contains(report, "## Where the time goes") {
		t.Error("the prose is missing")
	}
}

func TestCheck(t *testing.T) {
	dir := sample(t, result("BenchmarkHPC", 2, map[string]float64{"s/lammps-loop": 17}))
	out := filepath.Join(t.TempDir(), "performance.md")
	if err := run(dir, out, false); err != nil {
		t.Fatal(err)
	}
	if err := run(dir, out, true); err != nil {
		t.Fatalf("check of a fresh report: %v", err)
	}
	// A figure edited by hand is stale.
	data, _ := os.ReadFile(out)
	if err := os.WriteFile(out, []byte(strings.Replace(string(data), "17.00", "12.00", 1)), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := run(dir, out, true); err == nil || !strings.Contains(err.Error(), "stale: "+out) {
		t.Fatalf("check of an edited report: %v, want stale", err)
	}
	// And so is the report once a new result comes in.
	if err := run(dir, out, false); err != nil {
		t.Fatal(err)
	}
	if err := benchresult.Write(dir, result("BenchmarkKueue", 3, map[string]float64{"s/floor-admit": 0.06})); err != nil {
		t.Fatal(err)
	}
	if err := run(dir, out, true); err == nil {
		t.Fatal("check passed with a result the report does not show")
	}
}

func TestBadResultIsNamed(t *testing.T) {
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "BenchmarkX.json"), []byte("{"), 0o644); err != nil {
		t.Fatal(err)
	}
	err := run(dir, filepath.Join(t.TempDir(), "p.md"), false)
	if err == nil || !strings.Contains(err.Error(), "BenchmarkX.json: not a benchmark result") {
		t.Fatalf("err = %v", err)
	}
}
