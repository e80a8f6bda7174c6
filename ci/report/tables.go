package main

// The comparisons of the report, one table each (or one a size where a benchmark measures sizes
// in one loop), with what each row is. The units are the benchmarks' own (b.ReportMetric).

// spec is one comparison: the results of one benchmark (and its sub-benchmarks).
type spec struct {
	key   string // the name the report's template places it by
	bench string // BenchmarkX: its results and those of BenchmarkX/...
	// sides: each result is a table of its own, a column per side, the unit of a cell
	// "s/<side>-<step>"; without sides, a column per result and the units as given.
	sides []side
	rows  []row
	// run is how to measure it, said where there is no result.
	run string
	// median: the figures are medians of the runs, not means.
	median bool
	// figures heads the column of a result without sub-benchmarks whose rows are not all in
	// seconds (each row's label then says its unit); default "seconds".
	figures string
}

type side struct{ name, head string }

type row struct{ label, unit string }

var specs = []spec{
	{key: "floors", bench: "BenchmarkMiniCluster", run: "go test -tags e2e -run '^$' -bench MiniCluster -benchtime 3x ./test/e2e/", rows: []row{
		{"floor: a bare indexed Job of 6 and its headless Service → every pod running and listed", "s/floor"},
		{"`helm install` returns", "s/helm-install-returned"},
		{"ephemeral install (`flux run -N 6 hostname`) → lead Succeeded", "s/ephemeral-install-to-lead-succeeded"},
		{"interactive install → Flux counts 6 brokers online", "s/interactive-install-to-all-up"},
		{"resize 2 → 4 → both new brokers online", "s/resize-2-to-4-up"},
		{"floor: the bare Job deleted → its pods gone", "s/floor-uninstall"},
		{"uninstall of a running MiniCluster → its brokers gone", "s/uninstall-running-to-brokers-gone"},
		{"uninstall of a running MiniCluster → nothing left", "s/uninstall-running-to-nothing-left"},
	}},
	{key: "uninstall", bench: "BenchmarkUninstall", median: true, run: "go test -tags e2e -run '^$' -bench Uninstall -benchtime 3x ./test/e2e/", rows: []row{
		{"chart: `helm uninstall` returns", "s/command-chart"},
		{"chart: → nothing left", "s/gone-chart"},
		{"the chart's objects without Flux: `helm uninstall` returns", "s/command-objects"},
		{"the chart's objects without Flux: → nothing left", "s/gone-objects"},
		{"bare Job: delete returns", "s/command-job"},
		{"bare Job: → nothing left", "s/gone-job"},
	}},
	{key: "operator", bench: "BenchmarkOperator", median: true, run: "bash ci/operator/build.sh && go test -tags e2e -run '^$' -bench Operator -benchtime 3x ./test/e2e/",
		sides: []side{{"floor", "floor"}, {"operator", "Flux Operator"}, {"chart", "chart"}, {"chart-copy", "chart, view copied"}},
		rows: []row{
			{"ephemeral create → lead Succeeded", "ephemeral"},
			{"ephemeral create → Job Complete (every broker ended)", "complete"},
			{"the create command (`helm install`, `kubectl apply`)", "create-command"},
			{"completed one removed → nothing left", "remove-completed"},
			{"the whole cycle: create → Job Complete → removed → nothing left", "cycle"},
			{"the remove command (`helm uninstall`, `kubectl delete`)", "remove-command"},
			{"interactive create → all up in Flux", "interactive"},
			{"resize half → full → the new brokers up in Flux", "resize"},
			{"the resize command (`helm upgrade`, `kubectl patch`)", "resize-command"},
			{"running one removed → nothing left", "remove-running"},
		}},
	{key: "scale", bench: "BenchmarkScale", run: "BENCH_SIZES=6,16,32,64 go test -tags e2e -run '^$' -bench Scale -benchtime 1x ./test/e2e/", rows: []row{
		{"install → Flux counts every broker up", "s/up"},
		{"floor: bare Job → all running and listed", "s/up-floor"},
		{"Flux's own bootstrap: `flux start --test-size` in one pod → every broker online", "s/up-flux-alone"},
		{"the rest: install → all up, less the floor and Flux's own bootstrap", "s/up-rest"},
		{"`flux run -N size hostname`", "s/launch"},
		{"resize to half and back → every broker up", "s/resize"},
		{"floor: the Job patched to half and back", "s/resize-floor"},
		{"uninstall → nothing left", "s/down"},
		{"floor: the Job deleted → no pod left", "s/down-floor"},
		{"CPU seconds used by install → all up, all of it", "cpu-s/up"},
		{"of which Kubernetes (kubelets, containerd, runc, CNI, the control plane)", "cpu-s/up-kubernetes"},
		{"of which Flux (the brokers, their rc1 and what they start)", "cpu-s/up-flux"},
		{"of which the pods' own processes other than Flux (the entrypoints, the keys sidecars, the keygen Job)", "cpu-s/up-chart"},
		{"of which `helm` and the benchmark", "cpu-s/up-client"},
		{"of which the rest of the machine (kernel threads, the sandbox's agents)", "cpu-s/up-other"},
		{"floor: CPU seconds used by the bare Job → all running and listed", "cpu-s/up-floor"},
		{"Flux's own bootstrap: CPU seconds of its processes", "cpu-s/up-flux-alone"},
	}},
	{key: "podcost", bench: "BenchmarkPodCost", run: "BENCH_POD_COST_SIZES=16,64 go test -tags e2e -run '^$' -bench PodCost -benchtime 1x ./test/e2e/",
		sides: []side{{"floor", "bare pod"}, {"container", "+ second container"}, {"configmaps", "+ ConfigMap volumes"}, {"subpaths", "+ subPath mounts"}, {"emptydirs", "+ emptyDirs"}, {"image", "+ image volume"}, {"probes", "+ probes"}, {"single", "one container"}, {"chart", "chart, real Flux"}},
		rows: []row{
			{"create → every pod Running, Ready and listed (chart: Flux counts every broker up), s", "up"},
			{"Kubernetes' CPU seconds in that time", "cpu"},
			{"of which the kubelets", "cpu-kubelet"},
			{"of which containerd, its shims, runc and pause", "cpu-runtime"},
			{"of which kube-apiserver and etcd", "cpu-apiserver"},
			{"of which the controller-manager and the scheduler", "cpu-controllers"},
			{"of which the network (kube-proxy, kube-router, CoreDNS, CNI) and helpers", "cpu-network"},
			{"Kubernetes' CPU seconds a second, the pods up and idle", "idle"},
			{"requests to the API server in that time (create → all up)", "requests"},
		}},
	{key: "topology", bench: "BenchmarkTopology", run: "go test -tags e2e -run '^$' -bench Topology -benchtime 1x ./test/e2e/", rows: []row{
		{"install → Flux counts every broker up", "s/up"},
		{"`flux run -N size hostname`", "s/launch"},
		{"resize to half and back → every broker up", "s/resize"},
		{"`flux submit --cc=1-N --wait true` in the lead (N: BENCH_THROUGHPUT_JOBS), jobs/s", "jobs/s-cc"},
		{"`flux bulksubmit --wait` of N `true`, jobs/s", "jobs/s-bulksubmit"},
		{"`flux run true` N/10 times one after another, jobs/s", "jobs/s-run"},
	}},
	{key: "kwok", bench: "BenchmarkKwok", run: "make kwok-up && go test -tags e2e -run '^$' -bench Kwok -benchtime 3x ./test/e2e/",
		sides: []side{{"floor", "floor"}, {"chart", "chart"}},
		rows: []row{
			{"install → all running and listed", "install"},
			{"resize to half → exactly half running and listed", "resize-half"},
			{"resize back to full", "resize-full"},
			{"uninstall → nothing left", "uninstall"},
		}},
	{key: "hpc", bench: "BenchmarkHPC", run: "go test -tags e2e -run '^$' -bench HPC -benchtime 3x ./test/e2e/", rows: []row{
		{"floor: an indexed Job of 4 pods that exit at once, create → Complete", "s/floor-complete-4"},
		{"LAMMPS (`values/lammps.yaml`, 4 brokers, 4 ranks): `helm install` → Job Complete", "s/lammps-install-to-complete"},
		{"of which LAMMPS's own loop", "s/lammps-loop"},
		{"`flux run -N 4 -n 8 true` in a running MiniCluster of 4", "s/flux-run-8-true"},
		{"`flux run -N 4 -n 8 mpi-hello-mpich` (Flux's PMI)", "s/flux-run-8-mpich-hello"},
		{"`flux run -N 4 -n 8 -o pmi=pmix mpi-hello-openmpi` (flux-pmix)", "s/flux-run-8-openmpi-hello"},
		{"interactive install → 6 up, Fluxion", "s/fluxion-install-to-6-up"},
		{"interactive install → 6 up, sched-simple", "s/simple-install-to-6-up"},
		{"the lead's rc1, Fluxion", "s/fluxion-lead-rc1"},
		{"the lead's rc1, sched-simple", "s/simple-lead-rc1"},
	}},
	{key: "api", bench: "BenchmarkAPI", figures: "figure", run: "go test -tags e2e -run '^$' -bench API -benchtime 1x ./test/e2e/", rows: []row{
		{"through the API (port-forward, HTTP, Basic auth): one submit, median, ms", "ms/api-p50"},
		{"through the API: one submit, 99th percentile, ms", "ms/api-p99"},
		{"floor: `flux job submit` of the same jobspec in the lead, median, ms", "ms/job-submit-p50"},
		{"floor: `flux job submit` in the lead, 99th percentile, ms", "ms/job-submit-p99"},
		{"`flux submit true` in the lead (Python), median, ms", "ms/flux-submit-p50"},
		{"through the API, 16 clients at once, jobs/s", "jobs/s-api"},
		{"floor: 16 loops of `flux job submit` in the lead at once, jobs/s", "jobs/s-job-submit"},
	}},
	{key: "autoscale", bench: "BenchmarkAutoscale", run: "go test -tags e2e -run '^$' -bench Autoscale -benchtime 3x ./test/e2e/", rows: []row{
		{"floor: a bare indexed Job of 1 grown to 4 pods → all 4 running and listed by the Service", "s/floor-grow"},
		{"autoscaled MiniCluster of 1: a job for 4 brokers submitted → it runs (Flux's own times)", "s/autoscaled-start"},
		{"by hand: `helm upgrade --set size=4`, `flux-keygen kube wait`, submit → it runs", "s/manual-start"},
		{"autoscaled: the job's end → back at 1 broker, beyond `autoscale.idleSeconds`", "s/shrink-past-idle"},
	}},
	{key: "metrics", bench: "BenchmarkMetrics", figures: "figure", run: "go test -tags e2e -run '^$' -bench Metrics -benchtime 1x ./test/e2e/", rows: []row{
		{"the lead's CPU for one scrape of the metrics, ms", "ms-cpu/scrape"},
		{"the autoscaler's and its Flux helper's CPU between scrapes, ms a second", "ms-cpu/s-unscraped"},
	}},
	{key: "mpi", bench: "BenchmarkMPI", figures: "figure", run: "go test -tags e2e -run '^$' -bench 'MPI$' -benchtime 3x ./test/e2e/", rows: []row{
		{"LAMMPS melt, 4 ranks on 4 brokers: `flux run` wall time, s", "s/lammps-4-wall"},
		{"the same by `mpirun` in one container, s", "s/lammps-4-wall-bare"},
		{"of which LAMMPS's loop, MiniCluster, s", "s/lammps-4-loop"},
		{"of which LAMMPS's loop, `mpirun` in one container, s", "s/lammps-4-loop-bare"},
		{"LAMMPS melt, 8 ranks on 4 brokers: `flux run` wall time, s", "s/lammps-8-wall"},
		{"the same by `mpirun` in one container, s", "s/lammps-8-wall-bare"},
		{"of which LAMMPS's loop, MiniCluster, s", "s/lammps-8-loop"},
		{"of which LAMMPS's loop, `mpirun` in one container, s", "s/lammps-8-loop-bare"},
		{"mpi-hello (ring, 1 MiB ring, allreduce), 8 ranks on 4 brokers: `flux run` wall time, s", "s/hello-8-wall"},
		{"the same by `mpirun` in one container, s", "s/hello-8-wall-bare"},
		{"mpi-hello's ping-pong between rank 0 and rank 7 (another pod), 8-byte round trip, µs", "us/hello-8-rtt"},
		{"the same in one container (shared memory), µs", "us/hello-8-rtt-bare"},
		{"the same in one container over TCP (loopback), µs", "us/hello-8-tcp-rtt-bare"},
		{"mpi-hello's ping-pong, 1 MiB messages, MB/s", "MBps/hello-8-bw"},
		{"the same in one container (shared memory), MB/s", "MBps/hello-8-bw-bare"},
		{"the same in one container over TCP (loopback), MB/s", "MBps/hello-8-tcp-bw-bare"},
	}},
	{key: "throughput", bench: "BenchmarkThroughput", figures: "figure", run: "BENCH_THROUGHPUT_SIZES=6,16 go test -tags e2e -run '^$' -bench Throughput -benchtime 1x ./test/e2e/", rows: []row{
		{"`flux submit --cc=1-N --wait true` in the lead (N: BENCH_THROUGHPUT_JOBS, 500 unless the command says), jobs/s", "jobs/s-cc"},
		{"the same in `flux start --test-size` (Flux alone), jobs/s", "jobs/s-cc-alone"},
		{"`flux bulksubmit --wait` of N `true` in the lead, jobs/s", "jobs/s-bulksubmit"},
		{"the same in Flux alone, jobs/s", "jobs/s-bulksubmit-alone"},
		{"`flux run true` N/10 times one after another in the lead, jobs/s", "jobs/s-run"},
		{"the same in Flux alone, jobs/s", "jobs/s-run-alone"},
		{"`flux submit --cc` in the Flux Operator's MiniCluster of the same size, jobs/s", "jobs/s-cc-operator"},
		{"`flux bulksubmit` in the Flux Operator's MiniCluster, jobs/s", "jobs/s-bulksubmit-operator"},
		{"`flux run` one after another in the Flux Operator's MiniCluster, jobs/s", "jobs/s-run-operator"},
		{"CPU per job in the chart's MiniCluster (its brokers and job shells, the submitting commands in its lead, Kubernetes), ms", "cpu-ms/job"},
		{"the same in the Flux Operator's MiniCluster, ms", "cpu-ms/job-operator"},
		{"Kubernetes' part of it in the chart's MiniCluster, ms", "cpu-ms/job-kubernetes"},
		{"Kubernetes' part of it in the Flux Operator's MiniCluster, ms", "cpu-ms/job-kubernetes-operator"},
	}},
	{key: "tuning", bench: "BenchmarkTuning", figures: "figure", run: "go test -tags e2e -run '^$' -bench Tuning -benchtime 2x ./test/e2e/", rows: tuningRows()},
	{key: "kueue", bench: "BenchmarkKueue", run: "make kueue-up && go test -tags e2e -run '^$' -bench Kueue -benchtime 3x ./test/e2e/", rows: []row{
		{"floor (two bare Jobs of 6): Kueue admits the next", "s/floor-admit"},
		{"floor: the next one's pod 0 started", "s/floor-next-started"},
		{"MiniClusters of 6: Kueue admits the next", "s/minicluster-admit"},
		{"MiniClusters of 6: the next one's lead runs its command", "s/minicluster-next-running"},
	}},
}

// tuningRows: Flux alone's start-up, `flux submit --cc` and `flux run` rates for each tuning
// BenchmarkTuning runs by default.
func tuningRows() []row {
	tunings := []struct{ unit, label string }{
		{"kary:8", "kary:8"}, {"flat", "flat (kary:0, the chart's default)"}, {"kary:2", "kary:2"},
		{"kary:4", "kary:4"}, {"binomial", "binomial"}, {"mincrit:2", "mincrit:2"},
		{"zmq-io-threads:2", "kary:8, 2 ZeroMQ I/O threads on the lead"},
		{"content:content-files", "kary:8, content store in files (content-files)"},
	}
	var rows []row
	for _, t := range tunings {
		rows = append(rows,
			row{t.label + ": `flux start` → initial program, s", "s/up-" + t.unit},
			row{t.label + ": `flux submit --cc`, jobs/s", "jobs/s-cc-" + t.unit},
			row{t.label + ": `flux run` one after another, jobs/s", "jobs/s-run-" + t.unit})
	}
	return rows
}
