//go:build e2e

package e2e

import (
	"fmt"
	"net/http"
	"sort"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
)

// BenchmarkAPI: submit latency (median and 99th percentile of 200 submits, one at a time) and
// throughput (16 clients at once) through the API and a port-forward, next to the same work by
// `flux submit` inside the lead in the same run. Each submit runs `true` on one core.
func BenchmarkAPI(b *testing.B) {
	const serial, clients, perClient = 200, 16, 10
	ns := newNamespace(b, "bench-api")
	r := newRelease(b, ns, "flux-sample", helm4)
	r.install("--set", "size=2", "--set", "maxSize=2", "--set", "api.enabled=true")
	pods := waitFluxUp(b, ns, r.name, 2, 2, wiringTimeout)
	c := forwardAPI(b, r, 5000, "http")
	eventually(b, time.Minute, "the API answers", func() (bool, string) {
		status, _, body := c.call("GET", "/v1/nodes", "", "", true)
		return status == 200, fmt.Sprintf("%d %s", status, body)
	})
	submit := func() time.Duration {
		start := time.Now()
		status, _, body := c.call("POST", "/v1/jobs/submit", "application/x-www-form-urlencoded", "command=true", true)
		if status != http.StatusOK {
			b.Fatalf("submit: %d %s", status, body)
		}
		return time.Since(start)
	}
	// In the lead: the same submits by flux submit, timed there (nanoseconds per line), then
	// 16 loops at once (total seconds).
	inPod := func(script string) string {
		out, stderr, err := execIn(ns, pods[0].Name, "flux", "sh", "-c", script)
		if err != nil {
			b.Fatalf("in the lead: %v: %s", err, stderr)
		}
		return out
	}
	for i := 0; i < b.N; i++ {
		var api []time.Duration
		for range serial {
			api = append(api, submit())
		}
		var wg sync.WaitGroup
		start := time.Now()
		for range clients {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for range perClient {
					submit()
				}
			}()
		}
		wg.Wait()
		apiRate := float64(clients*perClient) / time.Since(start).Seconds()

		var pod []time.Duration
		for _, l := range strings.Fields(inPod(fmt.Sprintf(`i=0; while [ $i -lt %d ]; do s=$(date +%%s%%N); flux submit --quiet true >/dev/null; e=$(date +%%s%%N); echo $((e - s)); i=$((i + 1)); done`, serial))) {
			n, err := strconv.ParseInt(l, 10, 64)
			if err != nil {
				b.Fatalf("in-pod timing %q", l)
			}
			pod = append(pod, time.Duration(n))
		}
		total := inPod(fmt.Sprintf(`s=$(date +%%s%%N); for c in $(seq %d); do (for i in $(seq %d); do flux submit --quiet true >/dev/null; done) & done; wait; e=$(date +%%s%%N); echo $((e - s))`, clients, perClient))
		nanos, err := strconv.ParseInt(strings.TrimSpace(total), 10, 64)
		if err != nil {
			b.Fatalf("in-pod total %q", total)
		}
		podRate := float64(clients*perClient) / time.Duration(nanos).Seconds()

		b.ReportMetric(quantile(api, 0.5).Seconds()*1000, "ms/submit-api-p50")
		b.ReportMetric(quantile(api, 0.99).Seconds()*1000, "ms/submit-api-p99")
		b.ReportMetric(quantile(pod, 0.5).Seconds()*1000, "ms/submit-pod-p50")
		b.ReportMetric(quantile(pod, 0.99).Seconds()*1000, "ms/submit-pod-p99")
		b.ReportMetric(apiRate, "jobs/s-api")
		b.ReportMetric(podRate, "jobs/s-pod")
		b.Logf("API: p50 %v p99 %v, %.1f jobs/s with %d clients; flux submit in the lead: p50 %v p99 %v, %.1f jobs/s",
			quantile(api, 0.5), quantile(api, 0.99), apiRate, clients, quantile(pod, 0.5), quantile(pod, 0.99), podRate)
	}
}

// quantile is the q-quantile of d (nearest rank).
func quantile(d []time.Duration, q float64) time.Duration {
	s := append([]time.Duration(nil), d...)
	sort.Slice(s, func(i, j int) bool { return s[i] < s[j] })
	i := int(q*float64(len(s))+0.999999) - 1
	return s[max(0, min(i, len(s)-1))]
}
