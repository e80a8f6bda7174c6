//go:build e2e

package e2e

import (
	"fmt"
	"os"
	"regexp"
	"strconv"
	"strings"
	"testing"
)

// BenchmarkTuning: Flux's own start-up and job throughput with each overlay shape and tuning
// (BENCH_TUNINGS) at each size (BENCH_TUNING_SIZES), in `flux start --test-size` in one pod (Flux
// alone: what each knob does to Flux, without the spread of Kubernetes' own start-up). A tuning is
// broker settings joined by "+": an overlay shape (kary:K, flat, binomial, mincrit, mincrit:K;
// kary:8 where none is named), zmq-io-threads=N (tbon.zmq_io_threads), content=MODULE
// (content.backing-module: content-sqlite, Flux's default, or content-files; flux-core 0.88's rc1
// refuses none), tcp (tbon.prefertcp: the brokers talk over TCP on the loopback device, as a
// MiniCluster's do between pods, in place of Unix sockets) and validators=chart (the default),
// flux (flux-core's feasibility alone) or jobspec (no validator but the jobspec's own check, as
// the Flux Operator's MiniCluster). Each iteration runs every tuning once, starting with the next
// one, so that a slow spell of the machine does not fall on one tuning.
func BenchmarkTuning(b *testing.B) {
	tunings := strings.Split(envOr("BENCH_TUNINGS", defaultTunings), ",")
	options := map[string][]string{}
	for _, t := range tunings {
		opts, err := tuningOptions(t)
		if err != nil {
			b.Fatalf("BENCH_TUNINGS=%q: %v", os.Getenv("BENCH_TUNINGS"), err)
		}
		options[t] = opts
	}
	jobs := throughputJobs(b)
	for _, size := range benchSizes(b, "BENCH_TUNING_SIZES", "16,64") {
		b.Run(fmt.Sprintf("size=%d", size), func(b *testing.B) {
			sum := map[string]map[string]float64{}
			iteration := 0
			for b.Loop() {
				for i := range tunings {
					t := tunings[(i+iteration)%len(tunings)]
					if sum[t] == nil {
						sum[t] = map[string]float64{}
					}
					for k, v := range tuningRun(b, size, jobs, options[t]) {
						sum[t][k] += v
					}
				}
				iteration++
			}
			n := float64(b.N)
			for _, t := range tunings {
				name := tuningUnit(t)
				metric(b, sum[t]["up"]/n, "s/up-"+name)
				metric(b, sum[t]["cc"]/n, "jobs/s-cc-"+name)
				metric(b, sum[t]["run"]/n, "jobs/s-run-"+name)
				fmt.Printf("size %d, %s: up %.2f s, flux submit --cc %.1f jobs/s, flux run %.2f jobs/s (mean of %d)\n",
					size, t, sum[t]["up"]/n, sum[t]["cc"]/n, sum[t]["run"]/n, b.N)
			}
		})
	}
}

const defaultTunings = "kary:8,flat,kary:2,kary:4,binomial,mincrit:2,zmq-io-threads=2,content=content-files"

// tuningOptions turns a tuning into `flux start` broker options.
func tuningOptions(tuning string) ([]string, error) {
	topo, opts := "kary:8", []string(nil)
	for _, part := range strings.Split(tuning, "+") {
		switch k, v, _ := strings.Cut(part, "="); {
		case k == "zmq-io-threads":
			if n, err := strconv.Atoi(v); err != nil || n < 1 {
				return nil, fmt.Errorf("%q: want zmq-io-threads=N, N of 1 or more", part)
			}
			opts = append(opts, "-Stbon.zmq_io_threads="+v)
		case k == "content":
			opts = append(opts, "-Scontent.backing-module="+v)
		case part == "tcp":
			opts = append(opts, "-Stbon.prefertcp=1")
		case k == "validators":
			if aloneValidators[v] == "" {
				return nil, fmt.Errorf("%q: want validators=chart, flux or jobspec", part)
			}
			opts = append(opts, part)
		case part == "flat":
			topo = "kary:0"
		case regexp.MustCompile(`^(kary:[0-9]+|mincrit(:[0-9]+)?|binomial)$`).MatchString(part):
			topo = part
		default:
			return nil, fmt.Errorf("%q: want an overlay shape (kary:K, flat, binomial, mincrit[:K]), zmq-io-threads=N, content=MODULE, tcp or validators=NAME", part)
		}
	}
	return append([]string{"-Stbon.topo=" + topo}, opts...), nil
}

// tuningUnit is a tuning as part of a metric's unit (no spaces).
func tuningUnit(t string) string { return strings.NewReplacer(" ", "", "=", ":").Replace(t) }

// tuningRun starts Flux alone with options at size on a node of the cluster's and returns the
// seconds to its initial program ("up"), and jobs per second of `flux submit --cc` ("cc", jobs
// jobs) and of `flux run` one at a time ("run", a tenth as many).
func tuningRun(b *testing.B, size, jobs int, options []string) map[string]float64 {
	ns := newNamespace(b, "tuning")
	defer deleteNamespace(b, ns)
	nodes := schedulableNodes(b)
	if len(nodes) == 0 {
		b.Fatal("no schedulable node for flux start")
	}
	script := fmt.Sprintf(`set -e; t() { date +%%s%%N; }; echo "up $(($(t) - START))"; n=%d
s=$(t); flux submit --cc=1-$n --quiet --wait true; e=$(t); echo "cc $((e - s))"
s=$(t); i=0; while [ $i -lt $((n / 10)) ]; do flux run true; i=$((i + 1)); done; e=$(t); echo "run $((e - s))"
`, jobs)
	out, err := runPodToEnd(b, ns, alonePod(b, nodes[0], size, script, options...))
	if err != nil {
		b.Fatalf("flux start --test-size=%d %s: %v\n%s", size, strings.Join(options, " "), err, out)
	}
	return parseRates(b, out, jobs, "up", "cc", "run")
}
