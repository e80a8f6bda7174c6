package autoscale

import (
	"strconv"
	"sync"

	"github.com/prometheus/client_golang/prometheus"
)

// Every metric the lead serves, with its help text. Names follow Prometheus' conventions: the
// minicluster_ prefix, _total for counters; labels few and bounded (a state, a queue's name).
var (
	descBrokers = prometheus.NewDesc("minicluster_brokers",
		"Brokers of the MiniCluster by state: up (online), down (offline, within maxSize), drained (online but given no new jobs).",
		[]string{"state"}, nil)
	descCores = prometheus.NewDesc("minicluster_cores",
		"Cores of the brokers by state: all (every broker of maxSize), up (online brokers), allocated (to running jobs).",
		[]string{"state"}, nil)
	descGPUs = prometheus.NewDesc("minicluster_gpus",
		"GPUs of the brokers by state: all, up, allocated.", []string{"state"}, nil)
	descJobs = prometheus.NewDesc("minicluster_jobs",
		"Jobs not yet ended, by state (pending: waiting for a dependency, priority or resources; running) and queue (empty: the default queue).",
		[]string{"state", "queue"}, nil)
	descEnded = prometheus.NewDesc("minicluster_jobs_ended_total",
		"Jobs ended since the instance started, by result: completed (exit 0), failed, canceled, timeout.",
		[]string{"result"}, nil)
	descSize = prometheus.NewDesc("minicluster_size",
		"Brokers the broker Job has now (its parallelism).", nil, nil)
	descTarget = prometheus.NewDesc("minicluster_target_size",
		"Brokers the autoscaler wants (equal to minicluster_size when it wants no change).", nil, nil)
	descResize = prometheus.NewDesc("minicluster_last_resize_timestamp_seconds",
		"When the autoscaler last asked for a resize, with the sizes and the kind of reason (jobs-waiting, idle, bounds).",
		[]string{"from", "to", "reason"}, nil)
	descUp = prometheus.NewDesc("minicluster_flux_up",
		"1 when Flux answered the last look, else 0.", nil, nil)
)

// Metrics is a prometheus.Collector of the last look at Flux and the autoscaler's decisions.
type Metrics struct {
	mu     sync.Mutex
	state  *State
	size   int
	target int
	resize *Resize
}

// Resize is a resize the autoscaler asked for.
type Resize struct {
	From, To int
	Kind     string // jobs-waiting, idle or bounds
	Time     float64
}

// Observe records a look at Flux (nil: Flux did not answer) and the sizes after it.
func (m *Metrics) Observe(st *State, size, target int) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.state, m.size, m.target = st, size, target
}

// Resized records a resize asked for.
func (m *Metrics) Resized(r Resize) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.resize = &r
}

// Describe implements prometheus.Collector.
func (m *Metrics) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{descBrokers, descCores, descGPUs, descJobs, descEnded, descSize, descTarget, descResize, descUp} {
		ch <- d
	}
}

// Collect implements prometheus.Collector.
func (m *Metrics) Collect(ch chan<- prometheus.Metric) {
	m.mu.Lock()
	defer m.mu.Unlock()
	gauge := func(d *prometheus.Desc, v float64, labels ...string) {
		ch <- prometheus.MustNewConstMetric(d, prometheus.GaugeValue, v, labels...)
	}
	if m.size > 0 {
		gauge(descSize, float64(m.size))
		gauge(descTarget, float64(m.target))
	}
	if r := m.resize; r != nil {
		gauge(descResize, r.Time, strconv.Itoa(r.From), strconv.Itoa(r.To), r.Kind)
	}
	if m.state == nil {
		gauge(descUp, 0)
		return
	}
	gauge(descUp, 1)
	st := m.state
	online, _ := st.ranks(st.Online)
	drained, _ := st.drainedAll()
	nDrained := 0
	for rank := range drained {
		if online[rank] {
			nDrained++
		}
	}
	gauge(descBrokers, float64(len(online)), "up")
	gauge(descBrokers, float64(st.Ranks-len(online)), "down")
	gauge(descBrokers, float64(nDrained), "drained")
	for _, c := range []struct {
		d *prometheus.Desc
		f func(Count) int
	}{{descCores, func(c Count) int { return c.Cores }}, {descGPUs, func(c Count) int { return c.GPUs }}} {
		gauge(c.d, float64(c.f(st.All)), "all")
		gauge(c.d, float64(c.f(st.Up)), "up")
		gauge(c.d, float64(c.f(st.Busy)), "allocated")
	}
	queues := st.Stats.Queues
	if len(queues) == 0 {
		queues = []QueueStats{{States: st.Stats.States}}
	}
	for _, q := range queues {
		s := q.States
		gauge(descJobs, float64(s["depend"]+s["priority"]+s["sched"]), "pending", q.Name)
		gauge(descJobs, float64(s["run"]+s["cleanup"]), "running", q.Name)
	}
	counter := func(v int, result string) {
		ch <- prometheus.MustNewConstMetric(descEnded, prometheus.CounterValue, float64(v), result)
	}
	counter(st.Stats.Successful, "completed")
	counter(st.Stats.Failed, "failed")
	counter(st.Stats.Canceled, "canceled")
	counter(st.Stats.Timeout, "timeout")
}
