package restapi

import (
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"
)

// testServer answers without Flux: its flux command does not exist, so any request that got
// as far as Flux would fail with 500, not with the 400/401/404 asserted here.
func testServer(t *testing.T) *httptest.Server {
	s := &Server{Flux: &Flux{Command: "/nonexistent/flux"}, Auth: testAuth(time.Now()), Workdir: "/", MaxNodes: 4}
	ts := httptest.NewServer(s.Handler())
	t.Cleanup(ts.Close)
	return ts
}

func do(t *testing.T, ts *httptest.Server, method, path, ctype, body string, auth bool) (*http.Response, map[string]any) {
	t.Helper()
	req, err := http.NewRequest(method, ts.URL+path, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	if ctype != "" {
		req.Header.Set("Content-Type", ctype)
	}
	if auth {
		req.SetBasicAuth(testCreds.User, testCreds.Token)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	var out map[string]any
	_ = json.Unmarshal(b, &out)
	return resp, out
}

func TestUnauthorized(t *testing.T) {
	ts := testServer(t)
	for _, ep := range [][2]string{{"GET", "/v1/jobs"}, {"POST", "/v1/jobs/submit"}, {"GET", "/v1/nodes"}, {"GET", "/v1/jobs/f2"}, {"GET", "/v1/jobs/f2/output/stream"}, {"POST", "/v1/jobs/f2/cancel"}, {"POST", "/v1/service/stop"}, {"POST", "/v1/token"}} {
		resp, _ := do(t, ts, ep[0], ep[1], "", "", false)
		if resp.StatusCode != http.StatusUnauthorized || resp.Header.Get("WWW-Authenticate") == "" {
			t.Errorf("%s %s without credentials: %d, WWW-Authenticate %q", ep[0], ep[1], resp.StatusCode, resp.Header.Get("WWW-Authenticate"))
		}
	}
	req, _ := http.NewRequest("GET", ts.URL+"/v1/nodes", nil)
	req.SetBasicAuth(testCreds.User, "wrong")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusUnauthorized {
		t.Errorf("wrong token: %d", resp.StatusCode)
	}
}

func TestBadInput(t *testing.T) {
	ts := testServer(t)
	for name, c := range map[string]struct {
		method, path, ctype, body string
		status                    int
		want                      string
	}{
		"no command":      {"POST", "/v1/jobs/submit", "application/json", `{"num_tasks":1}`, 400, "command"},
		"no command form": {"POST", "/v1/jobs/submit", "application/x-www-form-urlencoded", `num_tasks=1`, 400, "command"},
		"not json":        {"POST", "/v1/jobs/submit", "application/json", `{command:`, 400, "not valid JSON"},
		"json array":      {"POST", "/v1/jobs/submit", "application/json", `["hostname"]`, 422, "JSON object"},
		"unknown field":   {"POST", "/v1/jobs/submit", "application/json", `{"command":"x","bogus":1}`, 400, "bogus"},
		"content type":    {"POST", "/v1/jobs/submit", "text/plain", `hostname`, 415, "Content-Type"},
		"oversized":       {"POST", "/v1/jobs/submit", "application/json", `{"command":"` + strings.Repeat("x", MaxBodyBytes) + `"}`, 413, "larger than"},
		"malformed id":    {"GET", "/v1/jobs/not-a-job", "", "", 404, "no job"},
		"malformed out":   {"GET", "/v1/jobs/f0O/output", "", "", 404, "no job"},
		"malformed strm":  {"GET", "/v1/jobs/%C6%92zzzzzzzzzzzz/output/stream", "", "", 404, "no job"},
		"malformed cncl":  {"POST", "/v1/jobs/xyz/cancel", "", "", 404, "no job"},
		"bad limit":       {"GET", "/v1/jobs?limit=ten", "", "", 400, "limit"},
		"bad start":       {"GET", "/v1/jobs/search?start=-1", "", "", 400, `start \"-1\"`},
		"bad length":      {"GET", "/v1/jobs/search?length=x", "", "", 400, `length \"x\"`},
		"bad search":      {"GET", "/v1/jobs/search?search%5Bvalue%5D=%28", "", "", 400, "not a regular expression"},
		// The reference's words, which its client's tests read.
		"option -o":     {"POST", "/v1/jobs/submit", "application/x-www-form-urlencoded", `command=sleep 1&option_flags=-ompi=noodles`, 400, "Please provide keys without -o, -ompi is invalid."},
		"unknown route": {"GET", "/v1/nope", "", "", 404, "no endpoint"},
		"over maxSize":  {"POST", "/v1/jobs/submit", "application/x-www-form-urlencoded", `command=hostname&num_nodes=5`, 400, "Unsatisfiable"},
		// A raw ';' is part of a value (curl -d 'command=a; b'): the form is read to its end.
		"semicolon form":  {"POST", "/v1/jobs/submit", "application/x-www-form-urlencoded", `command=sleep 1; hostname&bogus=1`, 400, `field \"bogus\"`},
		"semicolon query": {"POST", "/v1/jobs/submit?command=sleep%201;hostname&bogus=1", "", "", 400, `field \"bogus\"`},
	} {
		resp, out := do(t, ts, c.method, c.path, c.ctype, c.body, true)
		text, _ := json.Marshal(out)
		if resp.StatusCode != c.status || !strings.Contains(strings.ToLower(string(text)), strings.ToLower(c.want)) {
			t.Errorf("%s: %d %s, want %d with %q", name, resp.StatusCode, text, c.status, c.want)
		}
		if resp.Header.Get("Content-Type") != "application/json" {
			t.Errorf("%s: Content-Type %q", name, resp.Header.Get("Content-Type"))
		}
	}
}

func TestUI(t *testing.T) {
	ts := testServer(t)
	resp, err := http.Get(ts.URL + "/")
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 200 || !strings.Contains(string(b), `id="jobs"`) || !strings.Contains(string(b), `id="submit"`) {
		t.Errorf("GET /: %d\n%.200s", resp.StatusCode, b)
	}
}

// limit counts the jobs of a detailed listing, as the reference's: limit=0 is none, answered
// without asking Flux (testServer's flux does not exist: asking it would fail with 500).
func TestJobsLimitZeroIsNone(t *testing.T) {
	ts := testServer(t)
	for path, want := range map[string]string{
		"/v1/jobs?details=true&limit=0":              "{}\n",
		"/v1/jobs?details=true&listing=true&limit=0": "[]\n",
	} {
		req, _ := http.NewRequest("GET", ts.URL+path, nil)
		req.SetBasicAuth(testCreds.User, testCreds.Token)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != 200 || string(b) != want {
			t.Errorf("GET %s: %d %s, want 200 %s", path, resp.StatusCode, b, want)
		}
	}
	// Without details, limit does not apply (the reference's too): the jobs come from Flux.
	resp, out := do(t, ts, "GET", "/v1/jobs?limit=0", "", "", true)
	if resp.StatusCode != http.StatusInternalServerError {
		t.Errorf("GET /v1/jobs?limit=0 did not ask Flux: %d %v", resp.StatusCode, out)
	}
}
