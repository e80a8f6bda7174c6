//go:build e2e

package e2e

import (
	"bufio"
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/minicluster/minicluster/internal/sources"
	"github.com/minicluster/minicluster/internal/tooltest"
	"github.com/minicluster/minicluster/restapi"
)

// apiConn is a port-forward to a release's API Service and its credentials.
type apiConn struct {
	t                      testing.TB
	base                   string // http(s)://127.0.0.1:PORT
	user, token, secretKey string
	client                 *http.Client
}

// kubectlPath is the cluster's kubectl (KUBECTL, the local cluster's, or PATH's).
func kubectlPath(t testing.TB) string {
	k := envOr("KUBECTL", filepath.Join(clusterDir(), "bin", "kubectl"))
	if _, err := os.Stat(k); err == nil {
		return k
	}
	return tooltest.Command(t, "kubectl", "set KUBECTL to the cluster's kubectl")
}

// forwardAPI runs kubectl port-forward to service/<release>-api on a free local port until the
// test ends, and reads the credentials from the release's Secret.
func forwardAPI(t testing.TB, r *release, port int, scheme string) *apiConn {
	t.Helper()
	local := portForward(t, r.ns, r.name+"-api", port)
	c := &apiConn{t: t, base: scheme + "://" + local, client: &http.Client{Timeout: 2 * time.Minute}}
	if s, err := kube.CoreV1().Secrets(r.ns).Get(context.Background(), r.name+"-api", metav1.GetOptions{}); err == nil {
		c.user, c.token, c.secretKey = string(s.Data["user"]), string(s.Data["token"]), string(s.Data["secret-key"])
	}
	return c
}

// waitAnswers waits up to a minute until GET /v1/nodes answers 200 with the credentials.
func (c *apiConn) waitAnswers() {
	c.t.Helper()
	eventually(c.t, time.Minute, "the API answers", func() (bool, string) {
		status, _, b := c.call("GET", "/v1/nodes", "", "", true)
		return status == 200, fmt.Sprintf("%d %s", status, b)
	})
}

// call sends a request with Basic credentials (none when auth is false) and returns the status
// and the body.
func (c *apiConn) call(method, path, ctype, body string, auth bool) (int, http.Header, []byte) {
	c.t.Helper()
	req, err := http.NewRequest(method, c.base+path, strings.NewReader(body))
	if err != nil {
		c.t.Fatal(err)
	}
	if ctype != "" {
		req.Header.Set("Content-Type", ctype)
	}
	if auth {
		req.SetBasicAuth(c.user, c.token)
	}
	resp, err := c.client.Do(req)
	if err != nil {
		c.t.Fatalf("%s %s: %v", method, path, err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, resp.Header, b
}

// curl runs curl with the credentials and returns its output, failing the test on an error.
func (c *apiConn) curl(args ...string) string {
	c.t.Helper()
	all := append([]string{"-sS", "--fail-with-body", "-u", c.user + ":" + c.token}, args...)
	out, err := exec.Command(tooltest.Command(c.t, "curl", "apt-get install curl"), all...).CombinedOutput()
	if err != nil {
		c.t.Fatalf("curl %s: %v\n%s", strings.Join(args, " "), err, out)
	}
	return string(out)
}

func decode[T any](t testing.TB, b []byte) T {
	t.Helper()
	var v T
	if err := json.Unmarshal(b, &v); err != nil {
		t.Fatalf("not the JSON expected (%v): %s", err, b)
	}
	return v
}

// waitJob polls GET /v1/jobs/{id} until the job is INACTIVE and returns it.
func (c *apiConn) waitJob(id string, within time.Duration) map[string]any {
	c.t.Helper()
	var job map[string]any
	poll(c.t, within, 500*time.Millisecond, "job "+id+" inactive", func() (bool, string) {
		status, _, b := c.call("GET", "/v1/jobs/"+url.PathEscape(id), "", "", true)
		if status != 200 {
			return false, fmt.Sprintf("%d %s", status, b)
		}
		job = decode[map[string]any](c.t, b)
		return job["state"] == "INACTIVE", fmt.Sprint(job["state"])
	})
	return job
}

// runsHostname submits `hostname` on n nodes through the API and checks that it completes
// and that its output names n different brokers of the release.
func (c *apiConn) runsHostname(r *release, n int, curlArgs ...string) {
	c.t.Helper()
	out := c.curl(append(curlArgs, "-d", "command=hostname", "-d", fmt.Sprintf("num_nodes=%d", n), c.base+"/v1/jobs/submit")...)
	id, _ := decode[map[string]any](c.t, []byte(out))["id"].(string)
	if job := c.waitJob(id, 2*time.Minute); job["result"] != "COMPLETED" {
		c.t.Fatalf("hostname on %d nodes through the API: %v", n, job)
	}
	lines := decode[struct{ Output []string }](c.t, []byte(c.curl(append(curlArgs, c.base+"/v1/jobs/"+url.PathEscape(id)+"/output")...))).Output
	seen := map[string]bool{}
	for _, l := range lines {
		if h := strings.TrimSpace(l); strings.HasPrefix(h, r.name+"-") {
			seen[h] = true
		}
	}
	if len(seen) != n {
		c.t.Errorf("hostname on %d nodes through the API printed %q", n, lines)
	}
}

// refClient unpacks the reference's pinned source (internal/sources) and returns the directory
// of its Python client.
func refClient(t testing.TB) string {
	t.Helper()
	tarball := pinnedSource(t, "flux-restful-api")
	dir := t.TempDir()
	if out, err := exec.Command("tar", "-xzf", tarball, "-C", dir).CombinedOutput(); err != nil {
		t.Fatalf("unpacking %s: %v\n%s", tarball, err, out)
	}
	matches, _ := filepath.Glob(filepath.Join(dir, "*", "clients", "python"))
	if len(matches) != 1 {
		t.Fatalf("no clients/python in %s", tarball)
	}
	return matches[0]
}

// pinnedSource is the path of the source pinned under name (internal/sources/sources.txt): from
// a mirror, the build cache or its upstream location; the test ends as for a missing tool when
// none gives it.
func pinnedSource(t testing.TB, name string) string {
	t.Helper()
	s, err := sources.Lookup(name)
	if err != nil {
		t.Fatal(err)
	}
	places, err := sources.DefaultPlaces(repoRoot)
	if err != nil {
		t.Fatal(err)
	}
	path, err := s.Fetch(places, os.Stderr)
	if err != nil {
		tooltest.Missing(t, "%v", err)
	}
	return path
}

// python runs Debian's python3 with the reference client on PYTHONPATH and the variables it
// reads, and returns its standard output.
func (c *apiConn) python(client string, args ...string) string {
	c.t.Helper()
	py := tooltest.File(c.t, "/usr/bin/python3", "apt-get install python3 python3-httpx python3-jose python3-ruamel.yaml python3-jsonschema (make deps)")
	if len(args) > 1 && args[0] == "-c" {
		args = append([]string{"-c", clientTimeout + args[1]}, args[2:]...)
	}
	cmd := exec.Command(py, args...)
	cmd.Env = append(os.Environ(), "PYTHONPATH="+client, "FLUX_RESTFUL_HOST="+c.base, "FLUX_USER="+c.user, "FLUX_TOKEN="+c.token,
		"FLUX_SECRET_KEY="+c.secretKey, "HOME="+c.t.TempDir())
	var stderr strings.Builder
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		c.t.Fatalf("python3 %s: %v\n%s\n%s", strings.Join(args, " "), err, out, stderr.String())
	}
	return string(out)
}

// clientTimeout gives the reference client's httpx a minute instead of its default 5 s. The
// client does not retry a request after authenticating; a submit answers once Flux has validated
// the job (0.25 to 0.45 s on a quiet lead), but with the e2e tests saturating two cores a
// validator that has to start again has taken over 5 s, and the test would judge the machine's
// load, not the client against the server.
const clientTimeout = "import functools, httpx; httpx.Client.__init__ = functools.partialmethod(httpx.Client.__init__, timeout=60)\n"

const cliMain = "import sys; from flux_restful_client.client import run_flux_restful_client; sys.argv[0] = 'flux-restful-cli'; run_flux_restful_client()"

// TestAPI: a persistent MiniCluster of 2 (room for 4) with api.enabled, installed with Helm 4
// and reached through kubectl port-forward, with curl and with the reference's real Python
// client (its library and its CLI); resized to 4; its lead replaced; its UI in Chromium; then
// stopped through the API and uninstalled to nothing.
func TestAPI(t *testing.T) {
	t.Parallel()
	ns := newNamespace(t, "api")
	r := newRelease(t, ns, "flux-sample", helm4)
	r.install("--set", "size=2", "--set", "maxSize=4", "--set", "api.enabled=true")
	pods := up(t, r, 2, 4)
	c := forwardAPI(t, r, 5000, "http")
	if c.user == "" || len(c.token) < 32 || len(c.secretKey) < 32 {
		t.Fatalf("the Secret %s-api lacks generated credentials", r.name)
	}
	c.waitAnswers()
	// The first subtest that fails leaves the pods' logs and the events as they were then: the
	// subtests after it replace the lead and uninstall.
	dump := sync.OnceFunc(func() { dumpNamespace(t, ns) })
	run := func(name string, f func(t *testing.T)) {
		if !t.Run(name, f) {
			dump()
		}
	}

	run("auth", func(t *testing.T) {
		c.t = t
		status, h, b := c.call("GET", "/v1/jobs", "", "", false)
		if status != 401 || h.Get("WWW-Authenticate") == "" {
			t.Errorf("no credentials: %d WWW-Authenticate=%q %s", status, h.Get("WWW-Authenticate"), b)
		}
		wrong := *c
		wrong.token = "not-the-token"
		if status, _, b := wrong.call("POST", "/v1/jobs/submit", "application/x-www-form-urlencoded", "command=hostname", true); status != 401 {
			t.Errorf("wrong token: %d %s", status, b)
		}
		if status, _, b := c.call("POST", "/v1/token", "", "", false); status != 401 {
			t.Errorf("POST /v1/token without a JWT: %d %s", status, b)
		}
		// The server's log names requests, never credentials.
		logs, err := podLogs(ns, pods[0].Name, "flux", 0)
		if err != nil {
			t.Fatal(err)
		}
		for _, secret := range []string{c.token, c.secretKey} {
			if strings.Contains(logs, secret) {
				t.Error("a credential appears in the lead's log")
			}
		}
	})

	client := refClient(t)
	run("NOTES", func(t *testing.T) { checkAPINotes(t, r, client) })
	run("python library", func(t *testing.T) {
		c.t = t
		script := `
import json, time
from flux_restful_client.main import get_client
cli = get_client()
sub = cli.submit(command="hostname", num_nodes=2, num_tasks=2)
jobid = sub["id"]
for _ in range(240):
    info = cli.jobs(jobid)
    if info.get("state") == "INACTIVE":
        break
    time.sleep(0.5)
print(json.dumps({"submit": sub, "info": info, "output": cli.output(jobid), "jobs": cli.jobs(), "nodes": cli.list_nodes()}))
`
		got := decode[struct {
			Submit map[string]any
			Info   map[string]any
			Output struct{ Output []string }
			Jobs   struct{ Jobs []map[string]any }
			Nodes  struct{ Nodes []string }
		}](t, []byte(c.python(client, "-c", script)))
		id, _ := got.Submit["id"].(string)
		if _, err := restapi.ParseJobID(id); err != nil || !strings.HasPrefix(id, "ƒ") {
			t.Fatalf("submit answered %v: want an id in Flux's f58 form", got.Submit)
		}
		if got.Info["result"] != "COMPLETED" || got.Info["returncode"] != float64(0) {
			t.Errorf("job info %v: want result COMPLETED, returncode 0", got.Info)
		}
		hosts := strings.Fields(strings.Join(got.Output.Output, ""))
		sort.Strings(hosts)
		if strings.Join(hosts, " ") != "flux-sample-0 flux-sample-1" {
			t.Errorf("hostname on every node printed %q", hosts)
		}
		found := false
		for _, j := range got.Jobs.Jobs {
			found = found || j["id"] == id
		}
		if !found {
			t.Errorf("job %s not in the listing %v", id, got.Jobs.Jobs)
		}
		sort.Strings(got.Nodes.Nodes)
		if strings.Join(got.Nodes.Nodes, " ") != "flux-sample-0 flux-sample-1" {
			t.Errorf("nodes %v", got.Nodes.Nodes)
		}
	})

	run("python CLI", func(t *testing.T) {
		c.t = t
		sub := decode[map[string]any](t, []byte(c.python(client, "-c", cliMain, "submit", "--num_nodes", "2", "--num_tasks", "2", "hostname")))
		id, _ := sub["id"].(string)
		job := c.waitJob(id, 2*time.Minute)
		if job["result"] != "COMPLETED" {
			t.Errorf("job %s: %v", id, job)
		}
		info := decode[map[string]any](t, []byte(c.python(client, "-c", cliMain, "info", id)))
		if info["id"] != id || info["nnodes"] != float64(2) {
			t.Errorf("flux-restful-cli info %s: %v", id, info)
		}
		nodes := c.python(client, "-c", cliMain, "list-nodes")
		if !strings.Contains(nodes, "flux-sample-0") || !strings.Contains(nodes, "flux-sample-1") {
			t.Errorf("flux-restful-cli list-nodes: %s", nodes)
		}
		if out := c.python(client, "-c", cliMain, "logs", id); !strings.Contains(out, "flux-sample-1") {
			t.Errorf("flux-restful-cli logs %s: %s", id, out)
		}
	})

	run("curl", func(t *testing.T) {
		c.t = t
		sub := decode[map[string]any](t, []byte(c.curl("-d", "command=hostname", "-d", "num_nodes=2", c.base+"/v1/jobs/submit")))
		id := sub["id"].(string)
		c.waitJob(id, 2*time.Minute)
		out := decode[struct{ Output []string }](t, []byte(c.curl(c.base+"/v1/jobs/"+url.PathEscape(id)+"/output")))
		if got := strings.Join(out.Output, ""); !strings.Contains(got, "flux-sample-0") || !strings.Contains(got, "flux-sample-1") {
			t.Errorf("output of %s: %q", id, got)
		}
		// Every listing shape of the reference: {"jobs": [...]}, by id, and a list.
		if l := decode[struct{ Jobs []map[string]any }](t, []byte(c.curl(c.base+"/v1/jobs"))); len(l.Jobs) < 3 {
			t.Errorf("GET /v1/jobs: %d jobs", len(l.Jobs))
		}
		if byID := decode[map[string]map[string]any](t, []byte(c.curl(c.base+"/v1/jobs?details=true"))); byID[id]["id"] != id {
			t.Errorf("GET /v1/jobs?details=true lacks %s", id)
		}
		if l := decode[[]map[string]any](t, []byte(c.curl(c.base+"/v1/jobs?details=true&listing=true&limit=2"))); len(l) != 2 {
			t.Errorf("limit=2 gave %d jobs", len(l))
		}
		// A job that prints for 6 s streams as it prints: the first line comes well before the last.
		sub = decode[map[string]any](t, []byte(c.curl("--data-urlencode", "command=sh -c 'for i in 1 2 3 4 5 6; do echo line $i; sleep 1; done'", c.base+"/v1/jobs/submit")))
		id = sub["id"].(string)
		cmd := exec.Command("curl", "-sS", "-N", "--fail-with-body", "-u", c.user+":"+c.token, c.base+"/v1/jobs/"+url.PathEscape(id)+"/output/stream")
		stdout, err := cmd.StdoutPipe()
		if err != nil {
			t.Fatal(err)
		}
		start := time.Now()
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		var lines []string
		var firstAt, lastAt time.Duration
		scan := bufio.NewScanner(stdout)
		for scan.Scan() {
			if len(lines) == 0 {
				firstAt = time.Since(start)
			}
			lines = append(lines, scan.Text())
			lastAt = time.Since(start)
		}
		if err := cmd.Wait(); err != nil {
			t.Errorf("curl of the stream: %v", err)
		}
		if strings.Join(lines, ",") != "line 1,line 2,line 3,line 4,line 5,line 6" {
			t.Errorf("streamed %q", lines)
		}
		if lastAt-firstAt < 4*time.Second {
			t.Errorf("the stream gave its first line at %v and its last at %v: not as the job printed", firstAt, lastAt)
		}
		t.Logf("stream: first line after %v, last after %v", firstAt.Round(time.Millisecond), lastAt.Round(time.Millisecond))

		// Jobs that end within a fraction of a second, each streamed as soon as it is submitted:
		// every stream brings both brokers' lines and ends. A stream that follows the output
		// from the KVS watch alone hung on a third of these (the watch of a guest namespace
		// removed just as it is asked for).
		var slowest time.Duration
		for i := range 20 {
			sub := decode[map[string]any](t, []byte(c.curl("-d", fmt.Sprintf("command=echo quick %d", i), "-d", "num_nodes=2", c.base+"/v1/jobs/submit")))
			start := time.Now()
			out := c.curl("--max-time", "30", c.base+"/v1/jobs/"+url.PathEscape(sub["id"].(string))+"/output/stream")
			slowest = max(slowest, time.Since(start))
			if strings.Count(out, fmt.Sprintf("quick %d\n", i)) != 2 {
				t.Errorf("the stream of quick job %d: %q, want its line from both brokers", i, out)
			}
		}
		t.Logf("20 quick jobs streamed, the slowest in %v", slowest.Round(time.Millisecond))
	})

	run("cancel", func(t *testing.T) {
		c.t = t
		id := decode[map[string]any](t, []byte(c.curl("-d", "command=sleep 600", c.base+"/v1/jobs/submit")))["id"].(string)
		eventually(t, time.Minute, "job "+id+" running", func() (bool, string) {
			_, _, b := c.call("GET", "/v1/jobs/"+url.PathEscape(id), "", "", true)
			job := decode[map[string]any](t, b)
			return job["state"] == "RUN", fmt.Sprint(job["state"])
		})
		res := decode[map[string]any](t, []byte(c.curl("-X", "POST", c.base+"/v1/jobs/"+url.PathEscape(id)+"/cancel")))
		if res["Message"] != "Job is requested to cancel." {
			t.Errorf("cancel answered %v", res)
		}
		if job := c.waitJob(id, time.Minute); job["result"] != "CANCELED" {
			t.Errorf("canceled job: %v", job)
		}
	})

	run("bad input", func(t *testing.T) {
		c.t = t
		before := len(decode[struct{ Jobs []map[string]any }](t, []byte(c.curl(c.base+"/v1/jobs"))).Jobs)
		for _, tc := range []struct {
			name, method, path, ctype, body string
			status                          int
			want                            string
		}{
			{"no command", "POST", "/v1/jobs/submit", "application/json", `{"num_nodes":1}`, 400, `\"command\" is required`},
			{"more nodes than the instance", "POST", "/v1/jobs/submit", "application/x-www-form-urlencoded", "command=hostname&num_nodes=5", 400, "nsatisfiable"},
			{"unknown id", "GET", "/v1/jobs/" + url.PathEscape(restapi.EncodeF58(1<<40)), "", "", 404, "no job"},
			{"unknown id output", "GET", "/v1/jobs/" + url.PathEscape(restapi.EncodeF58(1<<40)) + "/output", "", "", 404, "no job"},
			{"unknown id cancel", "POST", "/v1/jobs/" + url.PathEscape(restapi.EncodeF58(1<<40)) + "/cancel", "", "", 404, "no job"},
			{"malformed id", "GET", "/v1/jobs/42abc", "", "", 404, "no job"},
			{"body not an object", "POST", "/v1/jobs/submit", "application/json", `["hostname"]`, 422, "JSON object"},
			{"body not JSON", "POST", "/v1/jobs/submit", "application/json", `{command: hostname}`, 400, "not valid JSON"},
			{"unknown field", "POST", "/v1/jobs/submit", "application/json", `{"command":"hostname","nodes":2}`, 400, `unknown field \"nodes\"`},
			{"oversized", "POST", "/v1/jobs/submit", "application/json", `{"command":"` + strings.Repeat("x", 2<<20) + `"}`, 413, "larger than"},
		} {
			status, h, b := c.call(tc.method, tc.path, tc.ctype, tc.body, true)
			if status != tc.status || !strings.Contains(strings.ToLower(string(b)), strings.ToLower(tc.want)) || h.Get("Content-Type") != "application/json" {
				t.Errorf("%s: %d %s %.300s, want %d with %q", tc.name, status, h.Get("Content-Type"), b, tc.status, tc.want)
			}
		}
		if after := len(decode[struct{ Jobs []map[string]any }](t, []byte(c.curl(c.base+"/v1/jobs"))).Jobs); after != before {
			t.Errorf("bad input changed the jobs: %d before, %d after", before, after)
		}
	})

	run("UI in Chromium", func(t *testing.T) {
		c.t = t
		id := decode[map[string]any](t, []byte(c.curl("-d", "command=echo from-the-ui-test", c.base+"/v1/jobs/submit")))["id"].(string)
		c.waitJob(id, time.Minute)
		link := c.base + "/#user=" + url.QueryEscape(c.user) + "&token=" + url.QueryEscape(c.token)
		dom := chromium(t, "--dump-dom", link)
		if !strings.Contains(dom, `data-id="`+id+`"`) || !strings.Contains(dom, "COMPLETED") {
			t.Errorf("the jobs page lacks job %s:\n%.3000s", id, dom)
		}
		shot := filepath.Join(envOr("E2E_ARTIFACTS", t.TempDir()), "api-ui-jobs.png")
		chromium(t, "--screenshot="+shot, "--window-size=1200,900", link)
		if fi, err := os.Stat(shot); err != nil || fi.Size() < 5000 {
			t.Errorf("no screenshot of the jobs page at %s: %v", shot, err)
		}
		t.Logf("screenshot of the jobs page: %s", shot)
	})

	run("resize 2 to 4", func(t *testing.T) {
		c.t = t
		if _, err := r.upgrade("--set", "size=4"); err != nil {
			t.Fatalf("resize to 4: %v", err)
		}
		waitFluxUp(t, ns, r.name, 4, 4, wiringTimeout)
		eventually(t, time.Minute, "GET /v1/nodes lists 4 nodes", func() (bool, string) {
			_, _, b := c.call("GET", "/v1/nodes", "", "", true)
			n := decode[struct{ Nodes []string }](t, b).Nodes
			return len(n) == 4, fmt.Sprint(n)
		})
	})

	run("lead replaced", func(t *testing.T) {
		lead := pods[0].Name
		if err := kube.CoreV1().Pods(ns).Delete(context.Background(), lead, metav1.DeleteOptions{}); err != nil {
			t.Fatal(err)
		}
		eventually(t, 3*time.Minute, "a new lead", func() (bool, string) {
			p, _, err := brokerPods(ns, r.name)
			if err != nil {
				return false, err.Error()
			}
			l, ok := p[0]
			return ok && l.Name != lead || ok && l.UID != pods[0].UID, "still " + lead
		})
		waitFluxUp(t, ns, r.name, 4, 4, wiringTimeout)
		// A port-forward is bound to the pod it started with: one to the new lead.
		c = forwardAPI(t, r, 5000, "http")
		eventually(t, 2*time.Minute, "the new lead's API runs a job", func() (bool, string) {
			status, _, b := c.call("POST", "/v1/jobs/submit", "application/x-www-form-urlencoded", "command=hostname", true)
			return status == 200, fmt.Sprintf("%d %s", status, b)
		})
	})

	run("service stop", func(t *testing.T) {
		c := forwardAPI(t, r, 5000, "http") // the one of "lead replaced" ended with it
		p, _, _ := brokerPods(ns, r.name)
		lead := p[0]
		if status, _, b := c.call("POST", "/v1/service/stop", "", "", true); status != 200 {
			t.Fatalf("POST /v1/service/stop: %d %s", status, b)
		}
		waitFluxContainerExit0(t, ns, lead.Name, "the lead's")
	})

	r.uninstallToNothing()
}

// waitFluxContainerExit0 waits up to two minutes until the flux container of pod (whose, in
// messages) has ended with status 0; while it has not, the wait says whether it was restarted.
func waitFluxContainerExit0(t *testing.T, ns, pod, whose string) {
	t.Helper()
	eventually(t, 2*time.Minute, whose+" flux container ends with 0", func() (bool, string) {
		p, err := kube.CoreV1().Pods(ns).Get(context.Background(), pod, metav1.GetOptions{})
		if err != nil {
			return false, err.Error()
		}
		for _, c := range p.Status.ContainerStatuses {
			if c.Name == "flux" && c.State.Terminated != nil {
				return c.State.Terminated.ExitCode == 0, fmt.Sprintf("exit %d", c.State.Terminated.ExitCode)
			}
			if c.Name == "flux" && c.RestartCount > 0 {
				return false, "the container was restarted"
			}
		}
		return false, "running"
	})
}

// chromium runs Debian's headless Chromium on the page and returns what it printed.
func chromium(t *testing.T, args ...string) string {
	t.Helper()
	bin := tooltest.Command(t, "chromium", "apt-get install chromium (make deps)")
	all := append([]string{"--headless", "--no-sandbox", "--disable-gpu", "--user-data-dir=" + t.TempDir(), "--virtual-time-budget=15000"}, args...)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	out, err := exec.CommandContext(ctx, bin, all...).Output()
	if err != nil {
		t.Fatalf("chromium %s: %v", strings.Join(args, " "), err)
	}
	return string(out)
}

// TestAPIHelm3TLS: Helm 3 installs the API with TLS from a Secret, on a MiniCluster with Flux in
// the application image (no view); a job runs through it; its generated credentials survive an
// upgrade; wrong credentials get 401; uninstall leaves nothing.
func TestAPIHelm3TLS(t *testing.T) {
	t.Parallel()
	ns := newNamespace(t, "api3")
	r := newRelease(t, ns, "flux-sample", helm3)
	dir := t.TempDir()
	crt, key := filepath.Join(dir, "tls.crt"), filepath.Join(dir, "tls.key")
	if out, err := exec.Command(tooltest.Command(t, "openssl", "apt-get install openssl"), "req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256",
		"-nodes", "-days", "1", "-subj", "/CN=localhost", "-addext", "subjectAltName=DNS:localhost,IP:127.0.0.1", "-keyout", key, "-out", crt).CombinedOutput(); err != nil {
		t.Fatalf("openssl: %v\n%s", err, out)
	}
	if out, err := exec.Command(kubectlPath(t), "--kubeconfig", kubeconfig, "create", "secret", "tls", "api-tls", "-n", ns, "--cert", crt, "--key", key).CombinedOutput(); err != nil {
		t.Fatalf("kubectl create secret tls: %v\n%s", err, out)
	}
	// Flux in the application image (no view): the server runs the image's flux.
	r.install("--set", "size=1", "--set", "api.enabled=true", "--set", "api.tls.secretName=api-tls",
		"--set", "flux.view.enabled=false,flux.scheduler=simple,image="+fluxImage)
	up(t, r, 1, 16)
	c := forwardAPI(t, r, 5000, "https")
	pem, err := os.ReadFile(crt)
	if err != nil {
		t.Fatal(err)
	}
	pool, _ := x509Pool(pem)
	c.client.Transport = &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool}}
	eventually(t, time.Minute, "the API answers over TLS", func() (bool, string) {
		req, _ := http.NewRequest("GET", c.base+"/v1/nodes", nil)
		req.SetBasicAuth(c.user, c.token)
		resp, err := c.client.Do(req)
		if err != nil {
			return false, err.Error()
		}
		resp.Body.Close()
		return resp.StatusCode == 200, resp.Status
	})
	c.runsHostname(r, 1, "--cacert", crt)
	token := c.token
	if _, err := r.upgrade("--set", "size=1"); err != nil {
		t.Fatalf("upgrade: %v", err)
	}
	s, err := kube.CoreV1().Secrets(ns).Get(context.Background(), r.name+"-api", metav1.GetOptions{})
	if err != nil || string(s.Data["token"]) != token {
		t.Errorf("the upgrade changed the API's token (%v)", err)
	}
	c.token = "wrong"
	if status, _, _ := c.call("GET", "/v1/jobs", "", "", true); status != 401 {
		t.Errorf("wrong token over TLS: %d", status)
	}
	r.uninstallToNothing()
}

func x509Pool(pem []byte) (*x509.CertPool, bool) {
	pool := x509.NewCertPool()
	return pool, pool.AppendCertsFromPEM(pem)
}

// checkAPINotes runs the API's commands of NOTES.txt verbatim, as one script (the port-forward
// stays in the background, the rest uses the variables set before it), with the reference's
// client on PYTHONPATH as the NOTES say, and kills the port-forward after.
func checkAPINotes(t *testing.T, r *release, client string) {
	t.Helper()
	notes, err := r.run("get", "notes", r.name)
	if err != nil {
		t.Fatalf("helm get notes: %v", err)
	}
	start := strings.Index(notes, "The Flux RESTful API")
	end := strings.Index(notes, "The web UI")
	if start < 0 || end < start {
		t.Fatalf("NOTES.txt has no API section:\n%s", notes)
	}
	for _, secret := range []string{"token:", "secret-key:"} {
		if strings.Contains(notes, secret) {
			t.Errorf("NOTES.txt shows %s", secret)
		}
	}
	var script []string
	for _, l := range strings.Split(notes[start:end], "\n") {
		if cmd, ok := strings.CutPrefix(l, "  "); ok && !strings.HasPrefix(cmd, " ") {
			script = append(script, cmd)
		}
	}
	if len(script) < 6 {
		t.Fatalf("the API section of NOTES.txt has %d commands:\n%s", len(script), notes[start:end])
	}
	dir := t.TempDir()
	if err := os.Symlink(kubectlPath(t), filepath.Join(dir, "kubectl")); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, "bash", "-euo", "pipefail", "-c", strings.Join(script, "\n")+"\nkill %1")
	cmd.Env = append(os.Environ(), "KUBECONFIG="+kubeconfig, "PYTHONPATH="+client, "PATH=/usr/bin:"+dir+":"+os.Getenv("PATH"), "HOME="+dir)
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	out, err := cmd.CombinedOutput()
	if cmd.Process != nil {
		_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
	}
	t.Logf("NOTES (API):\n%s\n%s", indentAll(strings.Join(script, "\n")), indent(string(out)))
	if err != nil {
		t.Fatalf("the API commands of NOTES.txt failed: %v", err)
	}
	if !strings.Contains(string(out), "flux-sample-0") || !strings.Contains(string(out), "'id': 'ƒ") {
		t.Errorf("the NOTES' curl and Python examples did not print a hostname and a job id:\n%s", out)
	}
}
