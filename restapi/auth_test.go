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

var testSigningKey = []byte("the server's own signing key, never handed out")

func testAuth(now time.Time) *Authenticator {
	return &Authenticator{Creds: testCreds, SigningKey: testSigningKey, TokenLifetime: time.Hour, Now: func() time.Time { return now }}
}

// TestJoseTokenFlow: the JWT the reference's Python client makes (python-jose, HS256) is
// accepted by Exchange, and the access token it returns by Check; python-jose reads ours back
// with the server's signing key, and refuses it with the secret key the clients hold.
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
	out, err = exec.Command(py, "-c", back, access, string(testSigningKey)).CombinedOutput()
	if err != nil || strings.TrimSpace(string(out)) != testCreds.User {
		t.Fatalf("python-jose reading our access token: %v %s", err, out)
	}
	out, err = exec.Command(py, "-c", back, access, testCreds.SecretKey).CombinedOutput()
	if err == nil || !strings.Contains(string(out), "Signature verification failed") {
		t.Fatalf("python-jose verified our access token with the clients' secret key: %v %s", err, out)
	}
}

func TestRefusals(t *testing.T) {
	now := time.Unix(1_800_000_000, 0)
	a := testAuth(now)
	sign := func(claims map[string]any, key any) string {
		var k []byte
		switch key := key.(type) {
		case string:
			k = []byte(key)
		case []byte:
			k = key
		}
		s, err := signJWT(claims, k)
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
	// Whoever holds the secret key (every client) cannot mint an access token, of any lifetime.
	forged := sign(map[string]any{"sub": "flux", "scope": "access", "exp": now.Add(10 * 365 * 24 * time.Hour).Unix()}, testCreds.SecretKey)
	if err := a.Check("Bearer " + forged); err == nil || !strings.Contains(err.Error(), "not an access token of this server") {
		t.Errorf("an access token signed with the secret key: %v", err)
	}
	// Nor would one signed with the server's key but longer-lived than it gives.
	long := sign(map[string]any{"sub": "flux", "scope": "access", "exp": now.Add(48 * time.Hour).Unix()}, testSigningKey)
	if err := a.Check("Bearer " + long); err == nil || !strings.Contains(err.Error(), "longer than this server gives") {
		t.Errorf("an access token past the lifetime cap: %v", err)
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

// TestNewAuthenticator: the lifetime is capped, and each server draws a signing key of its own,
// so one server's tokens mean nothing to the next (a restart revokes them).
func TestNewAuthenticator(t *testing.T) {
	for _, bad := range []time.Duration{0, -time.Second, MaxTokenLifetime + time.Second} {
		if _, err := NewAuthenticator(testCreds, bad); err == nil || !strings.Contains(err.Error(), "at most 24h") {
			t.Errorf("lifetime %s: %v", bad, err)
		}
	}
	a, err := NewAuthenticator(testCreds, time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	b, err := NewAuthenticator(testCreds, time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	if string(a.SigningKey) == testCreds.SecretKey || len(a.SigningKey) != 32 {
		t.Fatalf("signing key %q", a.SigningKey)
	}
	access, err := a.Exchange("Basic " + base64.StdEncoding.EncodeToString([]byte("flux:"+testCreds.Token)))
	if err != nil {
		t.Fatal(err)
	}
	if err := a.Check("Bearer " + access); err != nil {
		t.Fatalf("its own token: %v", err)
	}
	if err := b.Check("Bearer " + access); err == nil {
		t.Fatal("another server accepted the token")
	}
}
