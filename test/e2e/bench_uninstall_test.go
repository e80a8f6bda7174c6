//go:build e2e

package e2e

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	"sigs.k8s.io/yaml"
)

// BenchmarkUninstall: a running MiniCluster (interactive, Flux up on every broker) removed with
// `helm uninstall`, at sizes 6 and 16 (BENCH_UNINSTALL_SIZES), next to two floors of the same
// run, in rotating order:
//   - job: a bare indexed Job of pods that end at once on SIGTERM and its headless Service,
//     deleted as Helm deletes them;
//   - objects: the chart's own manifest, every object, volume and the keys sidecar as they are,
//     with only the broker container's command replaced by one that ends at once on SIGTERM,
//     installed and uninstalled with the same helm: Flux's stop is the only difference.
//
// For each: how long the uninstall command takes (what the user waits for) and how long until
// nothing is left.
func BenchmarkUninstall(b *testing.B) {
	sizes := benchSizes(b, "BENCH_UNINSTALL_SIZES", "6,16")
	warmUp(b, helm4, "--set", "size=2", "--set-string", "command=flux run -N 2 true")
	for _, size := range sizes {
		b.Run(fmt.Sprintf("size=%d", size), func(b *testing.B) {
			sides := []string{"chart", "objects", "job"}
			times := map[string][]removal{}
			for i := 0; b.Loop(); i++ {
				// Rotate who goes first: a side must not always find the disk or the
				// controllers busy with the one before it.
				for j := range sides {
					side := sides[(i+j)%len(sides)]
					times[side] = append(times[side], removeRunning(b, side, size))
				}
			}
			reportUninstall(b, size, sides, times)
		})
	}
}

// removal: the remove command's time and the time until nothing is left.
type removal struct{ command, gone time.Duration }

func removeRunning(b *testing.B, side string, size int) removal {
	ns := newNamespace(b, "rm-"+side)
	defer func() {
		// A release's Job left to the namespace's deletion hangs it (see the chart's README).
		if b.Failed() {
			_ = exec.Command(helm4, "uninstall", benchJob, "--namespace", ns, "--ignore-not-found").Run()
		}
		deleteNamespace(b, ns)
	}()
	var remove func() time.Duration
	switch side {
	case "chart":
		r := newRelease(b, ns, benchJob, helm4)
		r.install("--set", fmt.Sprintf("size=%d,maxSize=%d", size, size))
		waitFluxUpEvery(b, ns, benchJob, size, size, 5*time.Minute, 200*time.Millisecond)
		remove = func() time.Duration { return timed(b, "", helm4, "uninstall", benchJob, "--namespace", ns) }
	case "objects":
		chart := fluxlessChart(b, ns, size)
		timed(b, "", helm4, "install", benchJob, chart, "--namespace", ns)
		waitRunning(b, ns, size)
		remove = func() time.Duration { return timed(b, "", helm4, "uninstall", benchJob, "--namespace", ns) }
	case "job":
		createFloor(b, ns, benchJob, size)
		waitRunning(b, ns, size)
		remove = func() time.Duration {
			start := time.Now()
			deleteJobAndService(b, ns, benchJob)
			return time.Since(start)
		}
	}
	time.Sleep(5 * time.Second) // what starting left behind settles, alike for every side
	settleDisk()
	start := time.Now()
	var r removal
	r.command = remove()
	waitEmpty(b, ns)
	r.gone = time.Since(start)
	return r
}

// waitRunning waits until size pods of the bench's Job run and its Service lists them.
func waitRunning(b *testing.B, ns string, size int) {
	waitFloorReady(b, ns, benchJob, size, 5*time.Minute)
}

// fluxlessChart writes a chart whose one template is the chart's manifest for this install
// (helm template, the same values) with the broker container's command replaced by one that
// ends at once on SIGTERM, and returns its directory.
func fluxlessChart(b *testing.B, ns string, size int) string {
	args := slices.Concat([]string{"template", benchJob, chartDir, "--namespace", ns}, testImages,
		[]string{"--set", fmt.Sprintf("size=%d,maxSize=%d", size, size)})
	var out, stderr bytes.Buffer
	cmd := exec.Command(helm4, args...)
	cmd.Stdout, cmd.Stderr = &out, &stderr
	if err := cmd.Run(); err != nil {
		b.Fatalf("helm template: %v\n%s", err, stderr.String())
	}
	var docs []string
	replaced := 0
	for _, doc := range strings.Split(out.String(), "\n---\n") {
		var head struct {
			Kind     string
			Metadata struct{ Name string }
		}
		if err := yaml.Unmarshal([]byte(doc), &head); err != nil {
			b.Fatalf("helm template output: %v", err)
		}
		switch {
		case head.Kind == "" || head.Kind == "Pod": // nothing, or the helm test hook
			continue
		case head.Kind == "Job" && head.Metadata.Name == benchJob:
			var job batchv1.Job
			if err := yaml.UnmarshalStrict([]byte(doc), &job); err != nil {
				b.Fatalf("the broker Job: %v", err)
			}
			for i, c := range job.Spec.Template.Spec.Containers {
				if c.Name == "flux" {
					c.Command, c.Args = []string{"/bin/sh", "-c", "trap 'exit 0' TERM; sleep 3600 & wait"}, nil
					job.Spec.Template.Spec.Containers[i] = c
					replaced++
				}
			}
			text, err := yaml.Marshal(job)
			if err != nil {
				b.Fatal(err)
			}
			doc = string(text)
		}
		docs = append(docs, doc)
	}
	if replaced != 1 {
		b.Fatalf("helm template: %d broker containers named flux, want 1", replaced)
	}
	// The manifest is final: escape what Helm would read as template actions.
	return writeChart(b, "fluxless", strings.ReplaceAll(strings.Join(docs, "\n---\n"), "{{", `{{ "{{" }}`))
}

// writeChart writes a chart of one template and returns its directory.
func writeChart(b *testing.B, name, template string) string {
	dir := b.TempDir()
	if err := os.MkdirAll(filepath.Join(dir, "templates"), 0o755); err != nil {
		b.Fatal(err)
	}
	for file, text := range map[string]string{
		"Chart.yaml":         fmt.Sprintf("apiVersion: v2\nname: %s\nversion: 0.1.0\n", name),
		"templates/all.yaml": template,
	} {
		if err := os.WriteFile(filepath.Join(dir, file), []byte(text), 0o644); err != nil {
			b.Fatal(err)
		}
	}
	return dir
}

func reportUninstall(b *testing.B, size int, sides []string, times map[string][]removal) {
	command := func(r removal) time.Duration { return r.command }
	gone := func(r removal) time.Duration { return r.gone }
	var line []string
	for _, side := range sides {
		metric(b, median(times[side], command).Seconds(), "s/command-"+side)
		metric(b, median(times[side], gone).Seconds(), "s/gone-"+side)
		var runs []string
		for _, r := range times[side] {
			runs = append(runs, fmt.Sprintf("%.2f/%.2f", r.command.Seconds(), r.gone.Seconds()))
		}
		line = append(line, fmt.Sprintf("%s %.2f/%.2f (%s)", side, median(times[side], command).Seconds(), median(times[side], gone).Seconds(), strings.Join(runs, " ")))
	}
	chart, objects := median(times["chart"], gone).Seconds(), median(times["objects"], gone).Seconds()
	fmt.Printf("uninstall of a running MiniCluster of %d, medians of %d, command/nothing left in s: %s; Flux's stop adds %.2f s to nothing left\n",
		size, len(times["chart"]), strings.Join(line, "; "), chart-objects)
}
