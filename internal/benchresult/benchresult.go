// Package benchresult is what one benchmark run leaves for the performance report: its figures
// with the command that made them, how many runs they are of, when and on what machine. The
// end-to-end benchmarks write one file a benchmark into a directory (BENCH_RESULTS); ci/report
// reads them back and writes docs/performance.md.
package benchresult

import (
	"bufio"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"runtime"
	"sort"
	"strings"
	"time"
)

// Result is one benchmark's (or sub-benchmark's) figures from one invocation.
type Result struct {
	// Benchmark is the full name, sub-benchmark included: BenchmarkScale/size=16.
	Benchmark string `json:"benchmark"`
	// Runs is how many runs each figure is the mean or median of (the benchmark's b.N).
	Runs    int       `json:"runs"`
	Date    time.Time `json:"date"`
	Machine Machine   `json:"machine"`
	// Command reproduces the run from the repository's root, settings (BENCH_*) included.
	Command string `json:"command"`
	// Metrics are the figures by unit, as the benchmark reports them (s/floor, s/up...).
	Metrics map[string]float64 `json:"metrics"`
}

// Machine says where a result was measured.
type Machine struct {
	CPU    string `json:"cpu"`    // the model name of /proc/cpuinfo
	Cores  int    `json:"cores"`  // logical CPUs
	Kernel string `json:"kernel"` // uname -srm
	Nodes  int    `json:"nodes"`  // the cluster's Nodes, simulated ones included
}

func (m Machine) String() string {
	nodes := ""
	if m.Nodes > 0 {
		nodes = fmt.Sprintf(", %d Kubernetes nodes", m.Nodes)
	}
	return fmt.Sprintf("%s, %d cores, %s%s", m.CPU, m.Cores, m.Kernel, nodes)
}

// fileName is where a benchmark's result goes in a directory: one file a benchmark, so that a
// later run of it replaces the earlier one.
var unsafe = regexp.MustCompile(`[^A-Za-z0-9_.=-]+`)

func fileName(benchmark string) string {
	return unsafe.ReplaceAllString(strings.ReplaceAll(benchmark, "/", "--"), "_") + ".json"
}

// Write stores r in dir (made if missing), replacing an earlier result of the same benchmark.
func Write(dir string, r Result) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	data, err := json.MarshalIndent(r, "", "  ")
	if err != nil {
		return err
	}
	return os.WriteFile(filepath.Join(dir, fileName(r.Benchmark)), append(data, '\n'), 0o644)
}

// ReadDir returns the results in dir, sorted by benchmark name. A file that is not a result
// is an error naming it.
func ReadDir(dir string) ([]Result, error) {
	files, err := filepath.Glob(filepath.Join(dir, "*.json"))
	if err != nil {
		return nil, err
	}
	var out []Result
	for _, f := range files {
		data, err := os.ReadFile(f)
		if err != nil {
			return nil, err
		}
		var r Result
		if err := json.Unmarshal(data, &r); err != nil {
			return nil, fmt.Errorf("%s: not a benchmark result: %w", f, err)
		}
		if r.Benchmark == "" || r.Runs < 1 || r.Date.IsZero() || r.Command == "" {
			return nil, fmt.Errorf("%s: a benchmark result needs benchmark, runs, date and command", f)
		}
		out = append(out, r)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Benchmark < out[j].Benchmark })
	return out, nil
}

// ThisMachine describes the machine it runs on, nodes left to the caller.
func ThisMachine() Machine {
	return Machine{CPU: cpuModel(), Cores: runtime.NumCPU(), Kernel: kernel()}
}

func cpuModel() string {
	f, err := os.Open("/proc/cpuinfo")
	if err != nil {
		return runtime.GOARCH
	}
	defer f.Close()
	s := bufio.NewScanner(f)
	for s.Scan() {
		if k, v, ok := strings.Cut(s.Text(), ":"); ok && strings.TrimSpace(k) == "model name" {
			return strings.Join(strings.Fields(v), " ")
		}
	}
	return runtime.GOARCH
}
