//go:build e2e

package e2e

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/minicluster/minicluster/internal/tooltest"
)

// liveApp is a pytest plugin: it gives the reference server's tests (tests/test_api.py, which
// import app.main's FastAPI app and drive it with FastAPI's TestClient) an ASGI app that
// forwards each request, as the TestClient sends it, to the live server at FLUX_RESTFUL_HOST,
// and hands back its answer. The test file itself runs as written.
const liveApp = `import os
import sys
import types

import httpx

base = os.environ["FLUX_RESTFUL_HOST"].rstrip("/")
dropped = {"host", "content-length", "transfer-encoding", "connection"}


async def app(scope, receive, send):
    if scope["type"] != "http":
        return
    body = b""
    while True:
        message = await receive()
        body += message.get("body", b"")
        if not message.get("more_body"):
            break
    url = base + scope["path"]
    if scope["query_string"]:
        url += "?" + scope["query_string"].decode()
    headers = [(k.decode(), v.decode()) for k, v in scope["headers"] if k.decode().lower() not in dropped]
    async with httpx.AsyncClient(timeout=120) as client:
        r = await client.request(scope["method"], url, headers=headers, content=body)
    await send({"type": "http.response.start", "status": r.status_code,
                "headers": [(k.encode(), v.encode()) for k, v in r.headers.items() if k.lower() not in dropped | {"content-encoding"}]})
    await send({"type": "http.response.body", "body": r.content})


main = types.ModuleType("app.main")
main.app = app
package = types.ModuleType("app")
package.main = main
sys.modules["app"] = package
sys.modules["app.main"] = main
`

// TestAPIReferenceTests runs the Flux RESTful API's own test suites, unchanged, against the
// chart's API on real Flux: the server's tests/test_api.py (with its authentication, TEST_AUTH)
// and its Python client's flux_restful_client/tests/test_api.py. Each suite starts from a
// MiniCluster without jobs and of one broker, as they assume; each gets its own.
func TestAPIReferenceTests(t *testing.T) {
	t.Parallel()
	py := tooltest.File(t, "/usr/bin/python3", "apt-get install python3 (make deps)")
	if out, err := exec.Command(py, "-c", "import pytest, fastapi.testclient, httpx, jose").CombinedOutput(); err != nil {
		t.Fatalf("the reference's tests need Debian's python3-pytest, python3-fastapi, python3-httpx and python3-jose (make deps): %v\n%s", err, out)
	}
	client := refClient(t)
	root := filepath.Dir(filepath.Dir(client))
	plugins := t.TempDir()
	if err := os.WriteFile(filepath.Join(plugins, "live_app.py"), []byte(liveApp), 0o644); err != nil {
		t.Fatal(err)
	}
	for name, suite := range map[string]struct {
		file, pythonPath string
		env              []string
	}{
		"server": {file: filepath.Join(root, "tests", "test_api.py"), pythonPath: plugins, env: []string{"TEST_AUTH=1"}},
		"client": {file: filepath.Join(client, "flux_restful_client", "tests", "test_api.py"), pythonPath: client},
	} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			ns := newNamespace(t, "apiref-"+name)
			r := newRelease(t, ns, "flux-sample", helm3)
			r.install("--set", "size=1", "--set", "maxSize=1", "--set", "api.enabled=true")
			up(t, r, 1, 1)
			c := forwardAPI(t, r, 5000, "http")
			c.waitAnswers()
			args := []string{"-m", "pytest", "-v", "-p", "no:cacheprovider", "--rootdir", filepath.Dir(suite.file)}
			if name == "server" {
				args = append(args, "-p", "live_app")
			}
			cmd := exec.Command(py, append(args, suite.file)...)
			cmd.Dir = filepath.Dir(suite.file)
			cmd.Env = append(os.Environ(), "PYTHONPATH="+suite.pythonPath, "FLUX_RESTFUL_HOST="+c.base, "FLUX_USER="+c.user,
				"FLUX_TOKEN="+c.token, "FLUX_SECRET_KEY="+c.secretKey, "HOME="+t.TempDir())
			cmd.Env = append(cmd.Env, suite.env...)
			out, err := cmd.CombinedOutput()
			if err != nil {
				t.Fatalf("the reference's %s tests failed against the chart's API: %v\n%s", name, err, out)
			}
			if !strings.Contains(string(out), " passed") || strings.Contains(string(out), " skipped") {
				t.Fatalf("the reference's %s tests did not all run and pass:\n%s", name, out)
			}
			t.Logf("the reference's %s tests:\n%s", name, indentAll(string(out)))
			r.uninstall()
		})
	}
}
