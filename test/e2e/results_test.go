//go:build e2e

package e2e

import (
	"context"
	"flag"
	"fmt"
	"os"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/minicluster/minicluster/internal/benchresult"
)

// With BENCH_RESULTS set (make bench-e2e sets it), every figure a benchmark reports is also
// written there, one file a benchmark, for the report ci/report makes (docs/performance.md).
var results = struct {
	sync.Mutex
	by map[string]*benchresult.Result
}{by: map[string]*benchresult.Result{}}

// metric reports a figure of b (as b.ReportMetric does) and records it.
func metric(b *testing.B, value float64, unit string) {
	b.ReportMetric(value, unit)
	record(b, b.Name(), b.N, value, unit)
}

// record records a figure under a name of its own (a benchmark that measures several sizes in
// one loop gives each its own name, as a sub-benchmark would have), of runs runs.
func record(b *testing.B, name string, runs int, value float64, unit string) {
	dir := os.Getenv("BENCH_RESULTS")
	if dir == "" {
		return
	}
	results.Lock()
	defer results.Unlock()
	r := results.by[name]
	if r == nil {
		m := benchresult.ThisMachine()
		if nodes, err := kube.CoreV1().Nodes().List(context.Background(), metav1.ListOptions{}); err == nil {
			m.Nodes = len(nodes.Items)
		}
		r = &benchresult.Result{Benchmark: name, Date: time.Now().UTC().Truncate(time.Second), Machine: m,
			Command: benchCommand(), Metrics: map[string]float64{}}
		results.by[name] = r
	}
	r.Runs = runs
	r.Metrics[unit] = value
	if err := benchresult.Write(dir, *r); err != nil {
		b.Fatalf("BENCH_RESULTS: %v", err)
	}
}

// benchCommand is the command that runs this benchmark again from the repository's root: the
// settings it ran with (BENCH_* but BENCH_RESULTS) and the go test flags that pick it.
func benchCommand() string {
	var env []string
	for _, kv := range os.Environ() {
		if strings.HasPrefix(kv, "BENCH_") && !strings.HasPrefix(kv, "BENCH_RESULTS=") {
			k, v, _ := strings.Cut(kv, "=")
			env = append(env, k+"="+shellQuote(v))
		}
	}
	sort.Strings(env)
	flagValue := func(name string) string {
		if f := flag.Lookup(name); f != nil {
			return f.Value.String()
		}
		return ""
	}
	cmd := fmt.Sprintf("go test -tags e2e -run '^$' -bench %s -benchtime %s ./test/e2e/",
		shellQuote(flagValue("test.bench")), flagValue("test.benchtime"))
	return strings.TrimSpace(strings.Join(env, " ") + " " + cmd)
}

// shellQuote quotes s for bash when it has anything but plain characters.
func shellQuote(s string) string {
	if s != "" && strings.Trim(s, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789,._=/:-") == "" {
		return s
	}
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}
