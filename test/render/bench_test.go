package render

import (
	"fmt"
	"testing"

	corev1 "k8s.io/api/core/v1"

	"github.com/minicluster/minicluster/internal/helmtest"
)

// BenchmarkTemplate renders the chart (helm template, in process) at 6, 1,000 and 10,000 brokers.
// The hostlist keeps broker.toml the same size at every size, so time and memory should not grow
// with size; the broker.toml-bytes metric shows it.
func BenchmarkTemplate(b *testing.B) {
	for _, size := range []int{6, 1000, 10000} {
		b.Run(fmt.Sprintf("size=%d", size), func(b *testing.B) {
			opts := helmtest.Options{Set: []string{fmt.Sprintf("size=%d,maxSize=%d", size, size)}}
			var tomlBytes int
			b.ReportAllocs()
			for b.Loop() {
				out, err := helmtest.Template(opts)
				if err != nil {
					b.Fatal(err)
				}
				tomlBytes = brokerTomlBytes(b, out)
			}
			b.ReportMetric(float64(tomlBytes), "broker.toml-bytes")
		})
	}
}

func brokerTomlBytes(b *testing.B, rendered string) int {
	objs, err := helmtest.DecodeAll(rendered)
	if err != nil {
		b.Fatal(err)
	}
	o, ok := helmtest.Find(objs, "ConfigMap", "flux-sample-broker")
	if !ok {
		b.Fatal("no broker ConfigMap rendered")
	}
	return len(o.Object.(*corev1.ConfigMap).Data["broker.toml"])
}
