// Command testrun runs `go test -json ...`, prints its output as `go test -v` would, and ends with
// the failed tests again, each with its own output only: in a long run of parallel end-to-end
// tests a failure's messages sit hundreds of lines above the end, between other tests' lines,
// where a log cut to its head and tail loses them. With --failures FILE it also writes that
// digest to FILE (emptied when nothing failed), so that a script can print it last.
//
//	go run ./ci/testrun [--failures FILE] -- go test -json -tags e2e ./test/e2e/...
//
// It exits with the command's status, and 1 when the command exited 0 yet a test failed.
package main

import (
	"bufio"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
)

// maxLines is how many of a failed test's last lines the digest keeps: enough for its error and
// what it logged just before, few enough that several failures fit in a log's tail.
const maxLines = 60

// maxCalls is how many log and error calls the digest names from the lines it leaves out.
const maxCalls = 30

func main() {
	failures := flag.String("failures", "", "also write the failed tests' digest to this file (emptied when none failed)")
	flag.Usage = func() {
		fmt.Fprintln(os.Stderr, "usage: testrun [--failures FILE] -- go test -json [flags] [packages]")
		flag.PrintDefaults()
	}
	flag.Parse()
	if flag.NArg() == 0 {
		flag.Usage()
		os.Exit(2)
	}
	os.Exit(run(flag.Args(), os.Stdout, *failures))
}

// run starts the command, relays its events and returns the exit code.
func run(args []string, out io.Writer, failuresFile string) int {
	cmd := exec.Command(args[0], args[1:]...)
	cmd.Stdin, cmd.Stderr = os.Stdin, os.Stderr
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		fmt.Fprintf(os.Stderr, "testrun: %v\n", err)
		return 2
	}
	if err := cmd.Start(); err != nil {
		fmt.Fprintf(os.Stderr, "testrun: %s: %v\n", args[0], err)
		return 2
	}
	log := newLog()
	relayErr := log.relay(stdout, out)
	if relayErr != nil {
		io.Copy(out, stdout) // the rest as it is, so that the command does not block writing it
	}
	waitErr := cmd.Wait()

	digest := log.digest()
	fmt.Fprint(out, digest)
	if failuresFile != "" {
		err := os.MkdirAll(filepath.Dir(failuresFile), 0o755)
		if err == nil {
			err = os.WriteFile(failuresFile, []byte(digest), 0o644)
		}
		if err != nil {
			fmt.Fprintf(os.Stderr, "testrun: %v\n", err)
		}
	}
	if relayErr != nil {
		fmt.Fprintf(os.Stderr, "testrun: reading %s's output: %v\n", args[0], relayErr)
	}
	var exit *exec.ExitError
	switch {
	case errors.As(waitErr, &exit):
		return exit.ExitCode()
	case waitErr != nil:
		fmt.Fprintf(os.Stderr, "testrun: %v\n", waitErr)
		return 2
	case relayErr != nil || digest != "":
		return 1
	}
	return 0
}

// event is the part of a test2json event used here (go doc test2json).
type event struct {
	Action     string
	Package    string
	ImportPath string // a build's events name the package here, as "pkg [pkg.test]"
	Test       string
	Output     string
}

// key names a test (Test empty: the package's own lines, such as a panic or a timeout).
type key struct{ pkg, test string }

type testLog struct {
	lines    map[key][]string
	failed   []key       // tests and packages that failed or panicked, in the order they did
	panicked map[key]int // where a test's or package's panic starts in its lines
}

func newLog() *testLog { return &testLog{lines: map[key][]string{}, panicked: map[key]int{}} }

// relay prints each event's output as it comes and keeps it by test. A line that is not JSON
// (the command was not given -json, or wrote to stdout itself) is printed only.
func (l *testLog) relay(r io.Reader, out io.Writer) error {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 0, 64*1024), 16*1024*1024)
	for sc.Scan() {
		var e event
		if err := json.Unmarshal(sc.Bytes(), &e); err != nil || e.Action == "" {
			fmt.Fprintln(out, sc.Text())
			continue
		}
		k := key{e.Package, e.Test}
		if k.pkg == "" {
			k.pkg, _, _ = strings.Cut(e.ImportPath, " ")
		}
		switch e.Action {
		case "output", "build-output":
			fmt.Fprint(out, e.Output)
			l.keep(k, e.Output)
		case "fail", "build-fail":
			l.fail(k)
		}
	}
	return sc.Err()
}

func (l *testLog) keep(k key, text string) {
	// The lines that only mark where a test runs, pauses or goes on say nothing of its failure.
	for _, marker := range []string{"=== RUN", "=== PAUSE", "=== CONT", "=== NAME"} {
		if strings.HasPrefix(text, marker) {
			return
		}
	}
	// A panic, a timeout's too, is written as the output of the test that was running, which
	// then never fails: it counts as failed here.
	if _, seen := l.panicked[k]; !seen && strings.HasPrefix(text, "panic: ") {
		l.panicked[k] = len(l.lines[k])
		l.fail(k)
	}
	l.lines[k] = append(l.lines[k], text)
}

func (l *testLog) fail(k key) {
	if !slices.Contains(l.failed, k) {
		l.failed = append(l.failed, k)
	}
}

// digest is what each failed test or package wrote of its own, or "" when nothing failed: its
// last lines, or those from a little before its panic on (a timeout lists the tests it stopped
// there, before the goroutines' stacks). A test that only failed because its subtests did, or
// a package because its tests did, adds nothing and is left out.
func (l *testLog) digest() string {
	if len(l.failed) == 0 {
		return ""
	}
	var shown []key
	for _, k := range l.failed {
		samePackage := func(s key) bool { return s.pkg == k.pkg }
		if l.ownLines(k) || k.test == "" && !slices.ContainsFunc(shown, samePackage) {
			shown = append(shown, k)
		}
	}
	var b strings.Builder
	fmt.Fprintf(&b, "\n==== testrun: %d failed (each one's own output, %d lines at most):\n", len(shown), maxLines)
	for _, k := range shown {
		name := k.test
		if name == "" {
			name = "package " + k.pkg
		}
		fmt.Fprintf(&b, "\n---- %s (%s)\n", name, k.pkg)
		lines := l.lines[k]
		from := max(0, len(lines)-maxLines)
		if p, ok := l.panicked[k]; ok {
			from = max(0, p-10)
		}
		to := min(len(lines), from+maxLines)
		if from > 0 {
			// An error is often followed by more than maxLines of diagnostics: what the cut
			// lines logged is kept as each log or error call's first line.
			calls := callLines(lines[:from])
			fmt.Fprintf(&b, "    [... %d lines; the first line of %d of their log and error calls:]\n", from, len(calls))
			for _, line := range calls {
				b.WriteString(line)
			}
			b.WriteString("    [...]\n")
		}
		for _, line := range lines[from:to] {
			b.WriteString(line)
		}
		if to < len(lines) {
			fmt.Fprintf(&b, "    [... %d lines]\n", len(lines)-to)
		}
	}
	return b.String()
}

// callLine matches the first line of what t.Log or t.Error wrote: its file and line, indented.
var callLine = regexp.MustCompile(`^ {4,}[\w./-]+\.go:\d+: `)

// callLines is the first line of each log and error call in lines, the first and last
// maxCalls/2 of them when there are more, each cut to 300 characters.
func callLines(lines []string) []string {
	var calls []string
	for _, line := range lines {
		if callLine.MatchString(line) {
			if len(line) > 300 {
				line = line[:300] + " [...]\n"
			}
			calls = append(calls, line)
		}
	}
	if len(calls) > maxCalls {
		// The first ones are where a test went wrong, the last ones what it did after.
		calls = append(calls[:maxCalls/2], calls[len(calls)-maxCalls/2:]...)
	}
	return calls
}

// ownLines reports whether k wrote anything besides go test's verdicts on it.
func (l *testLog) ownLines(k key) bool {
	for _, line := range l.lines[k] {
		if !strings.HasPrefix(line, "--- FAIL") && !strings.HasPrefix(line, "FAIL") {
			return true
		}
	}
	return false
}
