package restapi

import (
	"encoding/base64"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/minicluster/minicluster/internal/tooltest"
)

var testCreds = Credentials{User: "flux", Token: "t0ken-value", SecretKey: "s3cret-key-of-the-server"}

func testAuth(now time.Time) *Authenticator {
	return &Authenticator{Creds: testCreds, TokenLifetime: time.Hour, Now: func() time.Time { return now }}
}

// TestJoseTokenFlow: the JWT the reference's Python client makes (python-jose, HS256) is
// accepted by Exchange, and the access token it returns by Check; python-jose reads ours back.
func TestJoseTokenFlow(t *testing.T) {
	py := tooltest.File(t, "/usr/bin/python3", "apt-get install python3 python3-jose (make deps); Debian's python3, where its packages are")
	script := `import sys; from jose import jwt; print(jwt.encode({"user": sys.argv[1], "pass": sys.argv[2], "scope": "token"}, sys.argv[3]))`
	out, err := exec.Command(py, "-c", script, testCreds.User, testCreds.Token, testCreds.SecretKey).CombinedOutput()
	if err != nil {
		if strings.Contains(string(out), "No module named 'jose'") {
			tooltest.Missing(t, "python3-jose is not installed: apt-get install python3-jose (make deps)")
		}
		t.Fatalf("python-jose: %v\n%s", err, out)
	}
	a := testAuth(time.Now())
	access, err := a.Exchange("Bearer " + strings.TrimSpace(string(out)))
	if err != nil {
		t.Fatalf("Exchange of python-jose's JWT: %v", err)
	}
	if err := a.Check("Bearer " + access); err != nil {
		t.Fatalf("Check of the access token: %v", err)
	}
	back := `import sys; from jose import jwt; c = jwt.decode(sys.argv[1], sys.argv[2], algorithms=["HS256"]); print(c["sub"])`
	out, err = exec.Command(py, "-c", back, access, testCreds.SecretKey).CombinedOutput()
	if err != nil || strings.TrimSpace(string(out)) != testCreds.User {
		t.Fatalf("python-jose reading our access token: %v %s", err, out)
	}
}

func TestRefusals(t *testing.T) {
	now := time.Unix(1_800_000_000, 0)
	a := testAuth(now)
	sign := func(claims map[string]any, key string) string {
		s, err := signJWT(claims, key)
		if err != nil {
			t.Fatal(err)
		}
		return s
	}
	good := sign(map[string]any{"user": "flux", "pass": testCreds.Token, "scope": "token"}, testCreds.SecretKey)
	if _, err := a.Exchange("Bearer " + good); err != nil {
		t.Fatalf("good request refused: %v", err)
	}
	basic := func(u, p string) string { return "Basic " + base64.StdEncoding.EncodeToString([]byte(u+":"+p)) }
	for name, h := range map[string]string{
		"none":            "",
		"wrong key":       "Bearer " + sign(map[string]any{"user": "flux", "pass": testCreds.Token, "scope": "token"}, "other"),
		"wrong token":     "Bearer " + sign(map[string]any{"user": "flux", "pass": "nope", "scope": "token"}, testCreds.SecretKey),
		"wrong user":      "Bearer " + sign(map[string]any{"user": "root", "pass": testCreds.Token, "scope": "token"}, testCreds.SecretKey),
		"wrong scope":     "Bearer " + sign(map[string]any{"user": "flux", "pass": testCreds.Token, "scope": "x"}, testCreds.SecretKey),
		"alg none":        "Bearer " + b64.EncodeToString([]byte(`{"alg":"none"}`)) + "." + b64.EncodeToString([]byte(`{"user":"flux","pass":"t0ken-value","scope":"token"}`)) + ".",
		"garbage":         "Bearer abc",
		"basic wrong":     basic("flux", "nope"),
		"unknown scheme":  "Digest x",
		"token truncated": "Bearer " + good[:len(good)-2],
	} {
		if _, err := a.Exchange(h); err == nil {
			t.Errorf("%s: Exchange accepted %q", name, h)
		}
		if err := a.Check(h); err == nil {
			t.Errorf("%s: Check accepted %q", name, h)
		}
	}
	// The client's request token is not an access token.
	if err := a.Check("Bearer " + good); err == nil {
		t.Error("Check accepted the client's request JWT as an access token")
	}
	if err := a.Check(basic("flux", testCreds.Token)); err != nil {
		t.Errorf("Basic user:token refused: %v", err)
	}
	access, err := a.Exchange(basic("flux", testCreds.Token))
	if err != nil {
		t.Fatal(err)
	}
	later := testAuth(now.Add(2 * time.Hour))
	if err := later.Check("Bearer " + access); err == nil || !strings.Contains(err.Error(), "expired") {
		t.Errorf("an expired access token: %v", err)
	}
}
