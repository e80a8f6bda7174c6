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
// `flux job submit` inside the lead in the same run (the floor: what the server runs), and
// `flux submit` there. Each submit runs `true` on one core.
func BenchmarkAPI(b *testing.B) {
	const serial, clients, perClient = 200, 16, 10
	ns := newNamespace(b, "bench-api")
	r := newRelease(b, ns, "flux-sample", helm4)
	r.install("--set", "size=2", "--set", "maxSize=2", "--set", "api.enabled=true")
	pods := waitFluxUp(b, ns, r.name, 2, 2, wiringTimeout)
	c := forwardAPI(b, r, 5000, "http")
	c.waitAnswers()
	submit := func() time.Duration {
		start := time.Now()
		status, _, body := c.call("POST", "/v1/jobs/submit", "application/x-www-form-urlencoded", "command=true", true)
		if status != http.StatusOK {
			b.Fatalf("submit: %d %s", status, body)
		}
		return time.Since(start)
	}
	// In the lead, timed there: the same jobspec (`flux submit --dry-run`) by `flux job submit`,
	// the C command the server runs for each request (nanoseconds a line), then 16 such loops
	// at once (total nanoseconds); and `flux submit`, what a user types, one at a time.
	inPod := func(script string) []time.Duration {
		out, stderr, err := execInWithin(10*time.Minute, ns, pods[0].Name, "flux", "sh", "-c",
			// flux-core's own flux, as the server runs it (not the chart's kubectl-exec wrapper).
			`. /minicluster/scripts/env.sh && flux=$(real_flux) && $flux submit --dry-run true >/tmp/spec.json && `+script)
		if err != nil {
			b.Fatalf("in the lead: %v: %s", err, stderr)
		}
		var d []time.Duration
		for _, l := range strings.Fields(out) {
			n, err := strconv.ParseInt(l, 10, 64)
			if err != nil {
				b.Fatalf("in the lead: %q is not a number of nanoseconds", l)
			}
			d = append(d, time.Duration(n))
		}
		return d
	}
	timedLoop := func(n int, cmd string) string {
		return fmt.Sprintf(`i=0; while [ $i -lt %d ]; do s=$(date +%%s%%N); %s >/dev/null || exit 1; e=$(date +%%s%%N); echo $((e - s)); i=$((i + 1)); done`, n, cmd)
	}
	// Each figure is the mean over the iterations, as the report says of it (b.N runs).
	sums := map[string]float64{}
	var units []string
	add := func(unit string, v float64) {
		if _, ok := sums[unit]; !ok {
			units = append(units, unit)
		}
		sums[unit] += v
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

		pod := inPod(timedLoop(serial, "$flux job submit /tmp/spec.json"))
		total := inPod(fmt.Sprintf(`s=$(date +%%s%%N); for c in $(seq %d); do (for i in $(seq %d); do $flux job submit /tmp/spec.json >/dev/null; done) & done; wait; e=$(date +%%s%%N); echo $((e - s))`, clients, perClient))
		cli := inPod(timedLoop(20, "$flux submit true"))
		if len(pod) != serial || len(total) != 1 || len(cli) != 20 {
			b.Fatalf("in the lead: %d, %d and %d timings", len(pod), len(total), len(cli))
		}
		podRate := float64(clients*perClient) / total[0].Seconds()

		add("ms/api-p50", quantile(api, 0.5).Seconds()*1000)
		add("ms/api-p99", quantile(api, 0.99).Seconds()*1000)
		add("ms/job-submit-p50", quantile(pod, 0.5).Seconds()*1000)
		add("ms/job-submit-p99", quantile(pod, 0.99).Seconds()*1000)
		add("ms/flux-submit-p50", quantile(cli, 0.5).Seconds()*1000)
		add("jobs/s-api", apiRate)
		add("jobs/s-job-submit", podRate)
		b.Logf("API: p50 %v p99 %v, %.1f jobs/s with %d clients; flux job submit in the lead: p50 %v p99 %v, %.1f jobs/s; flux submit p50 %v",
			quantile(api, 0.5), quantile(api, 0.99), apiRate, clients, quantile(pod, 0.5), quantile(pod, 0.99), podRate, quantile(cli, 0.5))
	}
	for _, unit := range units {
		metric(b, sums[unit]/float64(b.N), unit)
	}
}

// quantile is the q-quantile of d (nearest rank).
func quantile(d []time.Duration, q float64) time.Duration {
	s := append([]time.Duration(nil), d...)
	sort.Slice(s, func(i, j int) bool { return s[i] < s[j] })
	i := int(q*float64(len(s))+0.999999) - 1
	return s[max(0, min(i, len(s)-1))]
}
