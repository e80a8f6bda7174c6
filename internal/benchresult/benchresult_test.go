package benchresult

import (
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"
)

func TestWriteReadBack(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "results")
	a := Result{Benchmark: "BenchmarkScale/size=16", Runs: 2, Date: time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC),
		Machine: Machine{CPU: "cpu", Cores: 2, Kernel: "Linux 6.1 x86_64", Nodes: 3}, Command: "go test ...",
		Metrics: map[string]float64{"s/up": 1.5}}
	b := a
	b.Benchmark, b.Metrics = "BenchmarkFloor", map[string]float64{"s/floor": 0.9}
	for _, r := range []Result{a, b} {
		if err := Write(dir, r); err != nil {
			t.Fatal(err)
		}
	}
	// A later run of the same benchmark replaces the earlier one.
	a.Metrics = map[string]float64{"s/up": 2.5}
	if err := Write(dir, a); err != nil {
		t.Fatal(err)
	}
	got, err := ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	if want := []Result{b, a}; !reflect.DeepEqual(got, want) {
		t.Fatalf("read back %+v, want %+v", got, want)
	}
}

func TestReadDirNamesABadFile(t *testing.T) {
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "x.json"), []byte(`{"benchmark": "B"}`), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := ReadDir(dir); err == nil || !strings.Contains(err.Error(), "x.json: a benchmark result needs") {
		t.Fatalf("err = %v, want one naming x.json", err)
	}
}

func TestThisMachine(t *testing.T) {
	m := ThisMachine()
	if m.CPU == "" || m.Cores < 1 || m.Kernel == "" {
		t.Fatalf("machine %+v lacks a field", m)
	}
}
