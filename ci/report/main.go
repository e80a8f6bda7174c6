// Command report writes docs/performance.md from the results the end-to-end benchmarks leave in
// a directory (internal/benchresult): a table per comparison with the date, the machine, the
// command and the number of runs of its figures, between the fixed prose of report.md.tmpl that
// says where the time goes. A comparison with no result says so instead of a table, and whether
// `make bench-e2e` runs it (read from the Makefile). The prose holds no figure of its own
// (prose.go): one there fails the report. With --check it writes nothing and fails when the
// report differs from what it would write.
// make bench-e2e runs it at its end (make report alone); make lint runs --check.
package main

import (
	"bytes"
	_ "embed"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"text/template"

	"github.com/minicluster/minicluster/internal/benchresult"
)

//go:embed report.md.tmpl
var reportTemplate string

// tracedTemplate is the report's second page, where the time goes (tracedPage beside the report):
// prose held to the same rule, no figure without a result.
//
//go:embed traced.md.tmpl
var tracedTemplate string

const tracedPage = "performance-traced.md"

func main() {
	results := flag.String("results", "docs/results", "the directory of benchmark results (BENCH_RESULTS)")
	out := flag.String("out", "docs/performance.md", "the report")
	makefile := flag.String("makefile", "Makefile", "the Makefile whose bench-e2e recipe says which benchmarks it runs")
	check := flag.Bool("check", false, "write nothing; fail if the report is not what the results give, or its prose holds a figure")
	flag.Parse()
	if err := run(*results, *out, *makefile, *check); err != nil {
		fmt.Fprintln(os.Stderr, "report:", err)
		os.Exit(1)
	}
}

func run(dir, out, makefile string, check bool) error {
	var results []benchresult.Result
	if _, err := os.Stat(dir); err == nil {
		if results, err = benchresult.ReadDir(dir); err != nil {
			return err
		}
	}
	inBenchE2E, err := benchE2E(makefile)
	if err != nil {
		return err
	}
	report, missing, err := render(reportTemplate, results, inBenchE2E)
	if err != nil {
		return err
	}
	traced, _, err := render(tracedTemplate, results, inBenchE2E)
	if err != nil {
		return err
	}
	pages := []struct {
		path string
		text []byte
	}{{out, report}, {filepath.Join(filepath.Dir(out), tracedPage), traced}}
	if !check {
		if len(missing) > 0 {
			fmt.Fprintf(os.Stderr, "report: %s: no figures yet for %s\n", out, strings.Join(missing, "; "))
		}
		for _, p := range pages {
			if err := os.WriteFile(p.path, p.text, 0o644); err != nil {
				return err
			}
		}
		return nil
	}
	for _, p := range pages {
		old, err := os.ReadFile(p.path)
		if err != nil {
			return err
		}
		if !bytes.Equal(old, p.text) {
			return fmt.Errorf("stale: %s is not what the results in %s give: run make report (the figures come from make bench-e2e, the prose from ci/report/*.md.tmpl)", p.path, dir)
		}
	}
	if len(missing) > 0 {
		return fmt.Errorf("%s has comparisons without figures: run %s; then make report", out, strings.Join(missing, "; "))
	}
	return nil
}

// render is the report: the template text with each comparison's tables; inBenchE2E are the
// -bench patterns of make bench-e2e. missing names each comparison the results leave without
// figures, with the command that measures it.
func render(text string, results []benchresult.Result, inBenchE2E []*regexp.Regexp) (report []byte, missing []string, err error) {
	if figures := proseFigures(text); len(figures) > 0 {
		return nil, nil, fmt.Errorf("ci/report/report.md.tmpl: a figure in the prose has no result behind it: point to the table that shows it, or write a setting as {{ setting \"TEXT\" \"WHY\" }}; line %s",
			strings.Join(figures, "; line "))
	}
	tmpl, err := template.New("report").Funcs(template.FuncMap{
		"table": func(key string) (string, error) {
			for _, s := range specs {
				if s.key == key {
					if len(of(s.bench, results)) == 0 {
						missing = append(missing, fmt.Sprintf("%s (`%s`)", s.bench, s.run))
					}
					return tables(s, results, inBenchE2E), nil
				}
			}
			return "", fmt.Errorf("no comparison %q", key)
		},
		"setting": setting,
	}).Parse(text)
	if err != nil {
		return nil, nil, err
	}
	var b bytes.Buffer
	if err := tmpl.Execute(&b, nil); err != nil {
		return nil, nil, err
	}
	return b.Bytes(), missing, nil
}

// of returns the results of a benchmark and its sub-benchmarks, in the order of their sizes.
func of(bench string, results []benchresult.Result) []benchresult.Result {
	var out []benchresult.Result
	for _, r := range results {
		if r.Benchmark == bench || strings.HasPrefix(r.Benchmark, bench+"/") {
			out = append(out, r)
		}
	}
	sort.SliceStable(out, func(i, j int) bool { return lessName(sub(out[i]), sub(out[j])) })
	return out
}

// sub is a result's sub-benchmark name ("size=16"), empty for the benchmark itself.
func sub(r benchresult.Result) string {
	_, s, _ := strings.Cut(r.Benchmark, "/")
	return s
}

// lessName orders names with numbers by their number: size=6 before size=16.
func lessName(a, b string) bool {
	na, nb := number(a), number(b)
	if na != nb && na >= 0 && nb >= 0 {
		return na < nb
	}
	return a < b
}

func number(s string) int {
	digits := strings.TrimLeft(s, "abcdefghijklmnopqrstuvwxyz=_-")
	n := 0
	if digits == "" {
		return -1
	}
	for _, c := range digits {
		if c < '0' || c > '9' {
			return -1
		}
		n = n*10 + int(c-'0')
	}
	return n
}

// head is a column's heading for a sub-benchmark name: "size=16" → "size 16".
func head(name string) string {
	if name == "" {
		return "seconds"
	}
	if number(name) >= 0 && strings.Trim(name, "0123456789") == "" {
		return "size " + name
	}
	return strings.ReplaceAll(name, "=", " ")
}

// tables renders one comparison: its table(s) with where the figures come from, or that it was
// not measured.
func tables(s spec, results []benchresult.Result, inBenchE2E []*regexp.Regexp) string {
	rs := of(s.bench, results)
	if len(rs) == 0 {
		by := "`make bench-e2e` does not run it"
		if runsIn(s.bench, inBenchE2E) {
			by = "`make bench-e2e` runs it"
		}
		return fmt.Sprintf("*Not measured in this report.* `%s` measures it (%s).\n", s.run, by)
	}
	var b strings.Builder
	if s.sides != nil {
		for i, r := range rs {
			if i > 0 {
				b.WriteString("\n")
			}
			heads := []string{head(sub(r)) + ", seconds"}
			for _, sd := range s.sides {
				heads = append(heads, sd.head)
			}
			var cells [][]string
			for _, rw := range s.rows {
				line := []string{rw.label}
				for _, sd := range s.sides {
					line = append(line, value(r, "s/"+sd.name+"-"+rw.unit))
				}
				cells = append(cells, line)
			}
			writeTable(&b, heads, cells)
			b.WriteString("\n" + source(s, []benchresult.Result{r}) + "\n")
		}
		return b.String()
	}
	heads := []string{"step"}
	for _, r := range rs {
		if sub(r) == "" && s.figures != "" {
			heads = append(heads, s.figures)
			continue
		}
		heads = append(heads, head(sub(r)))
	}
	var cells [][]string
	for _, rw := range s.rows {
		line := []string{rw.label}
		for _, r := range rs {
			line = append(line, value(r, rw.unit))
		}
		cells = append(cells, line)
	}
	writeTable(&b, heads, cells)
	b.WriteString("\n" + source(s, rs) + "\n")
	return b.String()
}

// value is a figure with two decimals (a count of requests whole), or "–" where the run did
// not report it.
func value(r benchresult.Result, unit string) string {
	v, ok := r.Metrics[unit]
	if !ok {
		return "–"
	}
	if strings.HasSuffix(unit, "-requests") {
		return fmt.Sprintf("%.0f", v)
	}
	return fmt.Sprintf("%.2f", v)
}

func writeTable(b *strings.Builder, heads []string, cells [][]string) {
	b.WriteString("| " + strings.Join(heads, " | ") + " |\n|")
	b.WriteString(strings.Repeat("---|", len(heads)) + "\n")
	for _, c := range cells {
		b.WriteString("| " + strings.Join(c, " | ") + " |\n")
	}
}

// source says where a table's figures come from: when, on what, how many runs, the command;
// once for all its columns when they share it, else for each column.
func source(s spec, rs []benchresult.Result) string {
	say := func(r benchresult.Result) string {
		runs := "1 run"
		if r.Runs > 1 {
			runs = fmt.Sprintf("the mean of %d runs", r.Runs)
			if s.median {
				runs = fmt.Sprintf("the median of %d runs", r.Runs)
			}
		}
		return fmt.Sprintf("%s on %s, %s: `%s`", r.Date.UTC().Format("2006-01-02 15:04 UTC"), r.Machine, runs, r.Command)
	}
	first := say(rs[0])
	same := true
	for _, r := range rs[1:] {
		same = same && say(r) == first
	}
	if same {
		return "Measured " + first + "."
	}
	var lines []string
	for _, r := range rs {
		lines = append(lines, fmt.Sprintf("- %s: measured %s.", head(sub(r)), say(r)))
	}
	return strings.Join(lines, "\n")
}
