//go:build e2e

package e2e

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/minicluster/minicluster/internal/tooltest"
)

// autoscaled are the values of an autoscaled MiniCluster of 1 to 6 brokers with the REST API and
// metrics on; brokers idle for 15 s are given back.
var autoscaled = []string{"--set", "size=1", "--set", "maxSize=6", "--set", "autoscale.enabled=true",
	"--set", "autoscale.idleSeconds=15", "--set", "autoscale.intervalSeconds=1", "--set", "flux.queuePolicy=easy",
	"--set", "api.enabled=true", "--set", "metrics.enabled=true"}

// TestAutoscale: with both Helms, an autoscaled MiniCluster grows for a job submitted over the REST
// API with no helm command, shows it waiting in its metrics, shrinks after idle, keeps a broker
// that runs a job through a shrink until the job ends, runs a burst of jobs of 1 to 4 nodes
// through helm upgrades and a rollback, and leaves nothing when uninstalled while it grows.
func TestAutoscale(t *testing.T) {
	t.Parallel()
	eachHelm(t, func(t *testing.T, helm string) {
		ns := newNamespace(t, "autoscale")
		r := newRelease(t, ns, "flux-as", helm)
		r.install(autoscaled...)
		pods := waitFluxUp(t, ns, r.name, 1, 6, 3*time.Minute)
		lead := pods[0].Name

		// A job larger than maxSize is still refused at once.
		if out, stderr, err := fluxIn(ns, lead, "submit", "-N7", "hostname"); err == nil {
			t.Fatalf("flux submit -N7 on a MiniCluster of at most 6 brokers was accepted: %s", out)
		} else {
			t.Logf("flux submit -N7 refused at once: %s", strings.TrimSpace(stderr))
		}

		// A 4-node job over the API: it waits (the metrics say so), the MiniCluster grows, it runs.
		api := forwardAPI(t, r, 5000, "http")
		api.waitAnswers()
		metrics := forwardService(t, ns, r.name+"-metrics", 8052)
		prom := startPrometheus(t, strings.TrimPrefix(metrics, "http://"))
		eventually(t, time.Minute, "Prometheus scrapes the metrics Service", func() (bool, string) {
			v, err := promQuery(prom, `minicluster_flux_up`)
			return err == nil && v == 1, fmt.Sprint(v, err)
		})
		out := api.curl("-d", "command=hostname", "-d", "num_nodes=4", api.base+"/v1/jobs/submit")
		id, _ := decode[map[string]any](t, []byte(out))["id"].(string)
		eventually(t, time.Minute, "a PromQL query sees the job waiting", func() (bool, string) {
			v, err := promQuery(prom, `sum(minicluster_jobs{state="pending"})`)
			return err == nil && v >= 1, fmt.Sprint(v, err)
		})
		if job := api.waitJob(id, 3*time.Minute); job["result"] != "COMPLETED" {
			t.Fatalf("the 4-node job: %v", job)
		}
		checkResizeEvent(t, ns, r.name, "Grown", "from 1 to 4 brokers")
		// What flux jobs showed while it waited (the memo user.autoscale) stays in its eventlog.
		if log, stderr, err := fluxIn(ns, lead, "job", "eventlog", id); err != nil || !strings.Contains(log, "waits for brokers: the MiniCluster grows from 1 to 4") {
			t.Errorf("the job was never told why it waited: %v %s\n%s", err, stderr, log)
		}
		eventually(t, 30*time.Second, "the metrics count the job completed", func() (bool, string) {
			m := scrape(t, metrics)
			return m[`minicluster_jobs_ended_total{result="completed"}`] == 1 && m[`minicluster_jobs{queue="",state="pending"}`] == 0 &&
				m[`minicluster_cores{state="all"}`] >= 4 && m[`minicluster_brokers{state="up"}`] >= 1, fmt.Sprint(m)
		})

		// Idle: back to minSize (1) within idleSeconds plus the time its pods take to go (in one
		// step or several: each broker counts its own idle time from its last job or its join).
		waitJobSize(t, ns, r.name, 1, 15*time.Second+90*time.Second)
		checkResizeEvent(t, ns, r.name, "Shrunk", "to 1 brokers")

		// A job on 2 brokers that lasts beyond idleSeconds: the MiniCluster grows to 2 and keeps
		// broker 1 while the job runs, then gives it back.
		long, stderr, err := fluxIn(ns, lead, "submit", "-N2", "sleep", "40")
		if err != nil {
			t.Fatalf("flux submit -N2 sleep 40: %v %s", err, stderr)
		}
		long = strings.TrimSpace(long)
		eventually(t, 2*time.Minute, "the long job runs", func() (bool, string) {
			state, _, _ := fluxIn(ns, lead, "jobs", "-n", "-o", "{state}", long)
			return strings.TrimSpace(state) == "RUN", state
		})
		started := time.Now()
		for time.Since(started) < 30*time.Second {
			if n := jobSize(t, ns, r.name); n < 2 {
				t.Fatalf("the Job shrank to %d while broker 1 ran a job", n)
			}
			time.Sleep(2 * time.Second)
		}
		if _, stderr, err := fluxIn(ns, lead, "job", "status", long); err != nil {
			t.Fatalf("the long job did not end well (a shrink must never kill a job): %v %s", err, stderr)
		}
		waitJobSize(t, ns, r.name, 1, 15*time.Second+90*time.Second)

		// A workflow's burst: 20 jobs of 1 to 4 nodes at once, with helm upgrades and a rollback
		// while they run. Twenty flux submit commands, a Python start each: more than a minute at
		// a load of 20.
		burst := `for i in $(seq 0 19); do flux submit --quiet -N $((i % 4 + 1)) hostname; done`
		if out, stderr, err := execInWithin(3*time.Minute, ns, lead, "flux", "sh", "-c", burst); err != nil {
			t.Fatalf("the burst: %v %s %s", err, out, stderr)
		}
		waitJobSizeAtLeast(t, ns, r.name, 2, 2*time.Minute)
		before := jobSize(t, ns, r.name)
		if _, err := r.upgrade(); err != nil {
			t.Fatalf("helm upgrade --reuse-values of an autoscaled release: %v", err)
		}
		if after := jobSize(t, ns, r.name); after < before {
			t.Errorf("helm upgrade --reuse-values reset the Job from %d to %d brokers", before, after)
		}
		if _, err := r.upgrade("--set", "size=3"); err != nil {
			t.Fatalf("helm upgrade --set size=3 of an autoscaled release: %v", err)
		}
		if _, err := r.run("rollback", r.name, "1"); err != nil {
			t.Fatalf("helm rollback of an autoscaled release: %v", err)
		}
		eventually(t, 5*time.Minute, "the 20 jobs of the burst ended", func() (bool, string) {
			active, _, err := fluxIn(ns, lead, "jobs", "-n", "-o", "{id}")
			return err == nil && strings.TrimSpace(active) == "", active
		})
		bad, _, err := fluxIn(ns, lead, "jobs", "-n", "-f", "failed,canceled,timeout", "-o", "{id} {result}")
		if err != nil || strings.TrimSpace(bad) != "" {
			t.Fatalf("jobs that did not complete: %v %s", err, bad)
		}
		done, _, _ := fluxIn(ns, lead, "jobs", "-n", "-a", "-f", "completed", "-o", "{id}")
		if n := len(strings.Fields(done)); n != 22 {
			t.Errorf("%d jobs completed, want 22 (the API's, the long one, the burst's 20)", n)
		}

		// Uninstalled while it grows: nothing left.
		if _, stderr, err := fluxIn(ns, lead, "submit", "-N4", "sleep", "60"); err != nil {
			t.Fatalf("flux submit -N4: %v %s", err, stderr)
		}
		waitJobSizeAtLeast(t, ns, r.name, 4, 2*time.Minute)
		r.uninstallToNothing()
	})
}

// jobSize is the broker Job's parallelism.
func jobSize(t testing.TB, ns, name string) int {
	t.Helper()
	job, err := kube.BatchV1().Jobs(ns).Get(context.Background(), name, metav1.GetOptions{})
	if err != nil || job.Spec.Parallelism == nil {
		t.Fatalf("the Job %s: %v", name, err)
	}
	return int(*job.Spec.Parallelism)
}

func waitJobSize(t testing.TB, ns, name string, want int, within time.Duration) {
	t.Helper()
	eventually(t, within, fmt.Sprintf("the Job has %d brokers", want), func() (bool, string) {
		n := jobSize(t, ns, name)
		return n == want, strconv.Itoa(n)
	})
}

func waitJobSizeAtLeast(t testing.TB, ns, name string, want int, within time.Duration) {
	t.Helper()
	eventually(t, within, fmt.Sprintf("the Job has %d brokers or more", want), func() (bool, string) {
		n := jobSize(t, ns, name)
		return n >= want, strconv.Itoa(n)
	})
}

// checkResizeEvent: an Event on the Job has reason and a message with want.
func checkResizeEvent(t testing.TB, ns, job, reason, want string) {
	t.Helper()
	eventually(t, 30*time.Second, fmt.Sprintf("an Event %s %q on the Job", reason, want), func() (bool, string) {
		evs, err := kube.CoreV1().Events(ns).List(context.Background(), metav1.ListOptions{FieldSelector: "involvedObject.kind=Job,involvedObject.name=" + job})
		if err != nil {
			return false, err.Error()
		}
		var seen []string
		for _, e := range evs.Items {
			if e.Reason == reason && strings.Contains(e.Message, want) {
				return true, ""
			}
			seen = append(seen, e.Reason+": "+e.Message)
		}
		return false, strings.Join(seen, "; ")
	})
}

// forwardService port-forwards to service/<svc>:port until the test ends and returns the local
// base URL (HTTP).
func forwardService(t testing.TB, ns, svc string, port int) string {
	t.Helper()
	return "http://" + portForward(t, ns, svc, port)
}

// portForward runs kubectl port-forward to service/<svc>:port on a free local port until the
// test ends and returns the local address (127.0.0.1:PORT).
func portForward(t testing.TB, ns, svc string, port int) string {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	cmd := exec.CommandContext(ctx, kubectlPath(t), "port-forward", "-n", ns, "service/"+svc, fmt.Sprintf("0:%d", port))
	cmd.Env = append(os.Environ(), "KUBECONFIG="+kubeconfig)
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stderr = cmd.Stdout
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cancel(); _ = cmd.Wait() })
	local := make(chan string, 1)
	go func() {
		re := regexp.MustCompile(`Forwarding from 127\.0\.0\.1:(\d+)`)
		lines := bufio.NewScanner(out)
		for lines.Scan() {
			if m := re.FindStringSubmatch(lines.Text()); m != nil {
				select {
				case local <- m[1]:
				default:
				}
			}
		}
	}()
	select {
	case p := <-local:
		return "127.0.0.1:" + p
	case <-time.After(60 * time.Second):
		t.Fatalf("kubectl port-forward to service/%s printed no local port in 60 s", svc)
		return ""
	}
}

// startPrometheus runs Debian's Prometheus scraping target (host:port) every second until the
// test ends, and returns its base URL.
func startPrometheus(t testing.TB, target string) string {
	t.Helper()
	bin := tooltest.File(t, "/usr/bin/prometheus", "apt-get install prometheus (make deps)")
	dir := t.TempDir()
	config := fmt.Sprintf("global:\n  scrape_interval: 1s\nscrape_configs:\n  - job_name: minicluster\n    static_configs:\n      - targets: [%q]\n", target)
	if err := os.WriteFile(filepath.Join(dir, "prometheus.yml"), []byte(config), 0o644); err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	ctx, cancel := context.WithCancel(context.Background())
	cmd := exec.CommandContext(ctx, bin, "--config.file="+filepath.Join(dir, "prometheus.yml"),
		"--storage.tsdb.path="+filepath.Join(dir, "data"), "--web.listen-address="+addr)
	var log bytes.Buffer
	cmd.Stdout, cmd.Stderr = &log, &log
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		cancel()
		_ = cmd.Wait()
		if t.Failed() {
			t.Logf("prometheus:\n%s", indent(log.String()))
		}
	})
	return "http://" + addr
}

// promQuery runs an instant PromQL query that gives one number.
func promQuery(base, query string) (float64, error) {
	resp, err := http.Get(base + "/api/v1/query?query=" + url.QueryEscape(query))
	if err != nil {
		return 0, err
	}
	defer resp.Body.Close()
	var answer struct {
		Status string
		Data   struct {
			Result []struct{ Value []any }
		}
	}
	if err := json.NewDecoder(resp.Body).Decode(&answer); err != nil {
		return 0, err
	}
	if answer.Status != "success" || len(answer.Data.Result) != 1 || len(answer.Data.Result[0].Value) != 2 {
		return 0, fmt.Errorf("%q: %+v", query, answer)
	}
	s, _ := answer.Data.Result[0].Value[1].(string)
	return strconv.ParseFloat(s, 64)
}

// scrape reads base/metrics into a map from each series (name{labels}) to its value.
func scrape(t testing.TB, base string) map[string]float64 {
	t.Helper()
	m := map[string]float64{}
	resp, err := http.Get(base + "/metrics")
	if err != nil {
		return m
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	for _, line := range strings.Split(string(b), "\n") {
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		i := strings.LastIndex(line, " ")
		if v, err := strconv.ParseFloat(line[i+1:], 64); err == nil {
			m[line[:i]] = v
		}
	}
	return m
}

// TestAutoscaleSchedulers: under sched-simple and Fluxion's other policies that queue a job
// larger than the brokers up, such a job waits and runs once the MiniCluster has grown for it.
func TestAutoscaleSchedulers(t *testing.T) {
	t.Parallel()
	for _, sched := range [][]string{{"flux.scheduler=simple"}, {"flux.queuePolicy=hybrid"}, {"flux.queuePolicy=conservative"}} {
		t.Run(sched[0], func(t *testing.T) {
			t.Parallel()
			ns := newNamespace(t, "autoscale-sched")
			r := newRelease(t, ns, "flux-as", helm4)
			r.install("--set", "size=1", "--set", "maxSize=2", "--set", "autoscale.enabled=true", "--set", "autoscale.intervalSeconds=1", "--set", sched[0])
			lead := waitFluxUp(t, ns, r.name, 1, 2, 3*time.Minute)[0].Name
			id, stderr, err := fluxIn(ns, lead, "submit", "-N2", "hostname")
			if err != nil {
				t.Fatalf("flux submit -N2 on 1 broker up of 2: %v %s", err, stderr)
			}
			id = strings.TrimSpace(id)
			if out, stderr, err := execInWithin(3*time.Minute, ns, lead, "flux", "flux", "job", "wait-event", "-t", "150", id, "clean"); err != nil {
				t.Fatalf("the job did not end: %v %s %s", err, out, stderr)
			}
			if _, stderr, err := fluxIn(ns, lead, "job", "status", id); err != nil {
				t.Fatalf("the 2-node job did not complete: %v %s", err, stderr)
			}
			checkResizeEvent(t, ns, r.name, "Grown", "from 1 to 2 brokers")
			r.uninstallToNothing()
		})
	}
}
