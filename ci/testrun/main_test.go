package main

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// A module whose tests pass, fail in parallel beside each other, fail in a subtest, and log a
// line a digest must not hold (a passing test's).
const sample = `package sample

import "testing"

func TestPasses(t *testing.T) {
	t.Parallel()
	t.Log("passing-line")
}

func TestFails(t *testing.T) {
	t.Parallel()
	t.Log("context-before-failure")
	t.Fatal("first-failure")
}

func TestParent(t *testing.T) {
	t.Run("ok", func(t *testing.T) { t.Log("sub-passing-line") })
	t.Run("bad", func(t *testing.T) { t.Error("sub-failure") })
}
`

func writeModule(t *testing.T, test string) string {
	dir := t.TempDir()
	for name, text := range map[string]string{
		"go.mod":         "module sample\n\ngo 1.24\n",
		"sample_test.go": test,
	} {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

func TestDigestHoldsOnlyFailedTests(t *testing.T) {
	dir := writeModule(t, sample)
	failures := filepath.Join(t.TempDir(), "failures.txt")
	var out bytes.Buffer
	code := run([]string{"go", "-C", dir, "test", "-json", "./..."}, &out, failures)
	if code != 1 {
		t.Errorf("exit code %d, want go test's 1", code)
	}
	text := out.String()
	// The run is printed as go test -v prints it.
	for _, want := range []string{"=== RUN   TestPasses", "passing-line", "--- FAIL: TestFails", "FAIL\tsample"} {
		if !strings.Contains(text, want) {
			t.Errorf("output lacks %q:\n%s", want, text)
		}
	}
	digest, err := os.ReadFile(failures)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasSuffix(text, string(digest)) {
		t.Errorf("the digest is not the output's end:\n%s", digest)
	}
	d := string(digest)
	for _, want := range []string{"2 failed", "---- TestFails (sample)", "context-before-failure", "first-failure",
		"---- TestParent/bad (sample)", "sub-failure"} {
		if !strings.Contains(d, want) {
			t.Errorf("digest lacks %q:\n%s", want, d)
		}
	}
	// Nor the parent that failed only with its subtest, nor the package with its tests.
	for _, unwanted := range []string{"passing-line", "sub-passing-line", "=== RUN", "=== CONT", "---- TestParent (", "---- package"} {
		if strings.Contains(d, unwanted) {
			t.Errorf("digest holds %q:\n%s", unwanted, d)
		}
	}
}

func TestNothingFailed(t *testing.T) {
	dir := writeModule(t, "package sample\n\nimport \"testing\"\n\nfunc TestPasses(t *testing.T) { t.Log(\"fine\") }\n")
	failures := filepath.Join(t.TempDir(), "failures.txt")
	os.WriteFile(failures, []byte("stale"), 0o644)
	var out bytes.Buffer
	if code := run([]string{"go", "-C", dir, "test", "-json", "./..."}, &out, failures); code != 0 {
		t.Errorf("exit code %d, want 0:\n%s", code, out.String())
	}
	if !strings.Contains(out.String(), "ok  \tsample") || strings.Contains(out.String(), "testrun:") {
		t.Errorf("output:\n%s", out.String())
	}
	if b, _ := os.ReadFile(failures); len(b) != 0 {
		t.Errorf("failures file holds %q, want it emptied", b)
	}
}

func TestTimeoutKeepsPanicHead(t *testing.T) {
	dir := writeModule(t, `package sample

import (
	"testing"
	"time"
)

func TestHangs(t *testing.T) { time.Sleep(time.Minute) }
`)
	var out bytes.Buffer
	code := run([]string{"go", "-C", dir, "test", "-json", "-timeout", "1s", "./..."}, &out, "")
	if code == 0 {
		t.Fatalf("exit code 0 for a test that timed out:\n%s", out.String())
	}
	d := digestOf(t, out.String())
	for _, want := range []string{"1 failed", "---- TestHangs (sample)", "panic: test timed out after 1s", "running tests:", "\t\tTestHangs ("} {
		if !strings.Contains(d, want) {
			t.Errorf("digest lacks %q:\n%s", want, d)
		}
	}
}

func TestBuildFailure(t *testing.T) {
	dir := writeModule(t, "package sample\n\nimport \"testing\"\n\nfunc TestX(t *testing.T) { undefinedName() }\n")
	var out bytes.Buffer
	if code := run([]string{"go", "-C", dir, "test", "-json", "./..."}, &out, ""); code == 0 {
		t.Fatalf("exit code 0 for a test that does not build:\n%s", out.String())
	}
	d := digestOf(t, out.String())
	for _, want := range []string{"1 failed", "---- package sample (sample)", "undefined: undefinedName", "[build failed]"} {
		if !strings.Contains(d, want) {
			t.Errorf("digest lacks %q:\n%s", want, d)
		}
	}
}

// digestOf is the output from the digest's heading on.
func digestOf(t *testing.T, out string) string {
	i := strings.Index(out, "==== testrun")
	if i < 0 {
		t.Fatalf("no digest in the output:\n%s", out)
	}
	return out[i:]
}

// An error followed by more diagnostics than the digest keeps is still named in it.
func TestErrorBeforeLongDiagnostics(t *testing.T) {
	dir := writeModule(t, `package sample

import "testing"

func TestDiagnoses(t *testing.T) {
	t.Log("installed")
	t.Error("the-real-error")
	for i := range 100 {
		t.Logf("diagnostic %d\nsecond line of diagnostic %d", i, i)
	}
}
`)
	var out bytes.Buffer
	run([]string{"go", "-C", dir, "test", "-json", "./..."}, &out, "")
	d := digestOf(t, out.String())
	for _, want := range []string{"sample_test.go:7: the-real-error", "sample_test.go:6: installed", "diagnostic 99", "second line of diagnostic 99"} {
		if !strings.Contains(d, want) {
			t.Errorf("digest lacks %q:\n%s", want, d)
		}
	}
	if strings.Contains(d, "second line of diagnostic 0\n") {
		t.Errorf("digest holds a continuation line of a call it cut:\n%s", d)
	}
}
