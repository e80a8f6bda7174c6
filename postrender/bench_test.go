package postrender_test

import (
	"fmt"
	"testing"

	"github.com/minicluster/minicluster/internal/helmtest"
	"github.com/minicluster/minicluster/postrender"
)

var benchSizes = []int{6, 1000, 10000}

func benchOptions(size int) helmtest.Options {
	return helmtest.Options{Set: []string{fmt.Sprintf("size=%d,maxSize=%d", size, size)}}
}

// BenchmarkPostRender post-renders the chart's output (hooks included, as Helm 4 passes them)
// at 6, 1,000 and 10,000 brokers: the hostlist keeps the work independent of size.
func BenchmarkPostRender(b *testing.B) {
	for _, size := range benchSizes {
		in, err := helmtest.Template(benchOptions(size))
		if err != nil {
			b.Fatal(err)
		}
		for _, c := range []struct{ name, in string }{
			{"unmodified", in},
			// A Job resized outside maxSize's hosts is not possible; a resize within it is the
			// common edit: size changes, broker.toml stays.
			{"resized", resize(b, in, size)},
		} {
			b.Run(fmt.Sprintf("size=%d/%s", size, c.name), func(b *testing.B) {
				b.ReportAllocs()
				b.SetBytes(int64(len(c.in)))
				for b.Loop() {
					if _, err := postrender.Render([]byte(c.in), postrender.Options{}); err != nil {
						b.Fatal(err)
					}
				}
			})
		}
		b.Run(fmt.Sprintf("size=%d/kustomize-rename", size), func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				if _, err := postrender.Render([]byte(in), postrender.Options{KustomizeDir: kustomization("rename")}); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// resize sets the Job's completions and parallelism to size-1 (or keeps 1).
func resize(b *testing.B, in string, size int) string {
	n := fmt.Sprint(max(size-1, 1))
	out := edit(b, in, "Job", "flux-sample", set(b, n, "spec", "completions"))
	return edit(b, out, "Job", "flux-sample", set(b, n, "spec", "parallelism"))
}

// BenchmarkHelmTemplate renders the same values with the Helm SDK (helm template, in
// process), so the post-renderer's cost reads as a fraction of Helm's.
func BenchmarkHelmTemplate(b *testing.B) {
	for _, size := range benchSizes {
		b.Run(fmt.Sprintf("size=%d", size), func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				if _, err := helmtest.Template(benchOptions(size)); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
