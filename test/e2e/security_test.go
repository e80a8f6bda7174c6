//go:build e2e

package e2e

import (
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
)

// TestSecurityNoAuthAcknowledged: api.requireAuth=false alone is refused before anything is
// created, naming the value that confirms it; confirmed, the install's NOTES warn.
func TestSecurityNoAuthAcknowledged(t *testing.T) {
	t.Parallel()
	ns := newNamespace(t, "noauth")
	r := newRelease(t, ns, "flux-sample", helm3)
	out, err := r.tryInstall("--set", "size=1,api.enabled=true,api.requireAuth=false")
	if err == nil || !strings.Contains(out, "api.requireAuth=false serves the API without credentials") || !strings.Contains(out, "api.acknowledgeNoAuth=true") {
		t.Fatalf("install without the acknowledgement: %v\n%s", err, out)
	}
	if left, err := leftovers(ns, r.name); err != nil || len(left) > 0 {
		t.Fatalf("a refused install left %v (%v)", left, err)
	}
	out, err = r.tryInstall("--set", "size=1,api.enabled=true,api.requireAuth=false,api.acknowledgeNoAuth=true")
	if err != nil {
		t.Fatalf("install with api.acknowledgeNoAuth=true: %v", err)
	}
	if !strings.Contains(out, "WARNING: the API runs WITHOUT AUTHENTICATION") {
		t.Errorf("NOTES without the warning:\n%s", out)
	}
}

// TestSecuritySharedServiceAccount: two releases, one account of the user's. The first runs,
// with no token in its broker's container (the keys container has its own); the second is
// refused naming the first, and creates nothing.
func TestSecuritySharedServiceAccount(t *testing.T) {
	t.Parallel()
	ns := newNamespace(t, "sa")
	sa := &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: "team-flux"}}
	if _, err := kube.CoreV1().ServiceAccounts(ns).Create(context.Background(), sa, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	first := newRelease(t, ns, "first", helm3)
	first.install("--set", "size=2,serviceAccountName=team-flux")
	pods := up(t, first, 2, 16)
	for i, p := range pods {
		if p.Spec.ServiceAccountName != "team-flux" {
			t.Errorf("pod %d runs as %q", i, p.Spec.ServiceAccountName)
		}
		out, _, err := execIn(ns, p.Name, "flux", "/bin/sh", "-c", "ls /var/run/secrets/kubernetes.io/serviceaccount 2>&1; echo end")
		if err != nil || strings.Contains(out, "token") {
			t.Errorf("pod %s: a token in the broker's container: %q %v", p.Name, out, err)
		}
	}
	second := newRelease(t, ns, "second", helm3)
	out, err := second.tryInstall("--set", "size=1,serviceAccountName=team-flux")
	if err == nil || !strings.Contains(out, "serviceAccountName=team-flux is already the account of the MiniCluster first") {
		t.Fatalf("second release on the same account: %v\n%s", err, out)
	}
	if left, err := leftovers(ns, second.name); err != nil || len(left) > 0 {
		t.Fatalf("the refused install left %v (%v)", left, err)
	}
	out, err = second.tryInstall("--set", "size=1,serviceAccountName=default")
	if err == nil || !strings.Contains(out, "serviceAccountName=default") {
		t.Fatalf("serviceAccountName=default: %v\n%s", err, out)
	}
}

// TestSecurityKeyModes: in a running lead (munge and the API on), the keys and the API's
// credentials exist only as private copies of the user running Flux: another user of the pod
// reads none of them, and the copies the keys container handed over are gone.
func TestSecurityKeyModes(t *testing.T) {
	t.Parallel()
	ns := newNamespace(t, "modes")
	r := newRelease(t, ns, "flux-sample", helm3)
	r.install("--set", "size=2,munge.enabled=true,api.enabled=true")
	pods := up(t, r, 2, 16)
	script := `cd /minicluster/keys && find . -type f ! -name '.*' | sort; echo ----
stat -c '%a %U %n' /etc/curve/curve.cert /etc/munge/munge.key /minicluster/api/credentials /minicluster/api/credentials/* 2>&1; echo ----
for f in /etc/curve/curve.cert /etc/munge/munge.key /minicluster/api/credentials/token; do
  setpriv --reuid=65534 --regid=65534 --clear-groups cat "$f" >/dev/null 2>&1 && echo "nobody reads $f"
done; echo ----`
	out, stderr, err := execIn(ns, pods[0].Name, "flux", "/bin/sh", "-c", script)
	if err != nil {
		t.Fatalf("lead: %v %s", err, stderr)
	}
	parts := strings.Split(out, "----\n")
	if len(parts) < 3 {
		t.Fatalf("lead: %q", out)
	}
	if left := strings.Fields(parts[0]); len(left) != 1 || left[0] != "./minicluster-api" {
		t.Errorf("files left in /minicluster/keys: %v, want the API server alone", left)
	}
	for _, line := range strings.Split(strings.TrimSpace(parts[1]), "\n") {
		mode, rest, _ := strings.Cut(line, " ")
		want := "400"
		if strings.HasSuffix(rest, "/credentials") {
			want = "700"
		}
		if mode != want {
			t.Errorf("%s: mode %s, want %s", rest, mode, want)
		}
	}
	if strings.Count(parts[1], "\n") != 6 {
		t.Errorf("not every key installed:\n%s", parts[1])
	}
	if strings.TrimSpace(parts[2]) != "" {
		t.Errorf("another user reads the keys:\n%s", parts[2])
	}
	out, _, err = execIn(ns, pods[1].Name, "flux", "/bin/sh", "-c", "ls -A /minicluster/keys; ls /minicluster/api 2>&1")
	if err != nil || strings.Contains(out, "curve.cert") || strings.Contains(out, "munge.key") || strings.Contains(out, "credentials") {
		t.Errorf("worker: %q %v", out, err)
	}
}

// TestSecurityTokens: the API's credentials are not in Helm's release record; an access token
// from POST /v1/token works until its lifetime (api.tokenLifetime) has passed; a token that a
// client forged with the secret key it holds, valid for ten years, is refused; rotated as
// docs/api.md says, the new token works and the old one no longer does.
func TestSecurityTokens(t *testing.T) {
	t.Parallel()
	ns := newNamespace(t, "tokens")
	r := newRelease(t, ns, "flux-sample", helm4)
	r.install("--set", "size=1,api.enabled=true,api.tokenLifetime=20s")
	up(t, r, 1, 16)
	c := forwardAPI(t, r, 5000, "http")
	if len(c.token) < 32 || len(c.secretKey) < 32 {
		t.Fatalf("the Secret %s-api holds no generated credentials", r.name)
	}
	c.waitAnswers()
	manifest, err := r.run("get", "manifest", r.name)
	if err != nil {
		t.Fatal(err)
	}
	for _, secret := range []string{c.token, c.secretKey, base64.StdEncoding.EncodeToString([]byte(c.token))} {
		if strings.Contains(manifest, secret) {
			t.Error("helm get manifest shows the API's credentials")
		}
	}
	bearer := func(token string) (int, string) {
		req, _ := http.NewRequest("GET", c.base+"/v1/jobs", nil)
		req.Header.Set("Authorization", "Bearer "+token)
		resp, err := c.client.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b)
	}
	req, _ := http.NewRequest("POST", c.base+"/v1/token", nil)
	req.SetBasicAuth(c.user, c.token)
	resp, err := c.client.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	var tok struct {
		AccessToken string `json:"access_token"`
	}
	err = json.NewDecoder(resp.Body).Decode(&tok)
	resp.Body.Close()
	if err != nil || tok.AccessToken == "" {
		t.Fatalf("POST /v1/token: %d %v", resp.StatusCode, err)
	}
	issued := time.Now()
	if status, body := bearer(tok.AccessToken); status != 200 {
		t.Fatalf("a fresh access token: %d %s", status, body)
	}
	forged := hs256(t, map[string]any{"sub": c.user, "scope": "access", "exp": time.Now().Add(10 * 365 * 24 * time.Hour).Unix()}, c.secretKey)
	if status, body := bearer(forged); status != 401 || !strings.Contains(body, "not an access token of this server") {
		t.Errorf("a token forged with the secret key: %d %s", status, body)
	}
	time.Sleep(time.Until(issued.Add(22 * time.Second)))
	if status, body := bearer(tok.AccessToken); status != 401 || !strings.Contains(body, "expired") {
		t.Errorf("an access token past api.tokenLifetime: %d %s", status, body)
	}

	// Rotation as docs/api.md says: new values in the Secret, then a new lead.
	s, err := kube.CoreV1().Secrets(ns).Get(context.Background(), r.name+"-api", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	s.Data["token"] = []byte("a-rotated-token-of-forty-characters-0123")
	if _, err := kube.CoreV1().Secrets(ns).Update(context.Background(), s, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	pods, _, err := brokerPods(ns, r.name)
	if err != nil {
		t.Fatal(err)
	}
	if err := kube.CoreV1().Pods(ns).Delete(context.Background(), pods[0].Name, metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	eventually(t, 3*time.Minute, "a new lead", func() (bool, string) {
		p, _, err := brokerPods(ns, r.name)
		if err != nil {
			return false, err.Error()
		}
		l, ok := p[0]
		return ok && l.UID != pods[0].UID, "still " + pods[0].Name
	})
	waitFluxUp(t, ns, r.name, 1, 16, wiringTimeout)
	rotated := forwardAPI(t, r, 5000, "http")
	old := *rotated
	old.token = c.token
	if rotated.token != "a-rotated-token-of-forty-characters-0123" {
		t.Fatalf("the Secret's token is %q after the rotation", rotated.token)
	}
	rotated.waitAnswers()
	if status, _, b := old.call("GET", "/v1/jobs", "", "", true); status != 401 {
		t.Errorf("the token from before the rotation: %d %s", status, b)
	}
}

// hs256 signs claims as a JWT with key.
func hs256(t *testing.T, claims map[string]any, key string) string {
	t.Helper()
	payload, err := json.Marshal(claims)
	if err != nil {
		t.Fatal(err)
	}
	enc := base64.RawURLEncoding
	head := enc.EncodeToString([]byte(`{"alg":"HS256","typ":"JWT"}`)) + "." + enc.EncodeToString(payload)
	mac := hmac.New(sha256.New, []byte(key))
	mac.Write([]byte(head))
	return head + "." + enc.EncodeToString(mac.Sum(nil))
}

// TestSecurityNetworkPolicy: a pod of another namespace reaches none of the lead's ports
// (brokers, readiness, API), a pod of a namespace named in networkPolicy.apiFrom reaches the API
// alone, and the release's own brokers and probes still work. It needs a cluster that enforces
// NetworkPolicy (the local cluster runs an enforcer: ci/cluster/netpol.sh).
func TestSecurityNetworkPolicy(t *testing.T) {
	t.Parallel()
	ns := newNamespace(t, "netpol")
	allowed := newNamespace(t, "netpol-client")
	other := newNamespace(t, "netpol-other")
	r := newRelease(t, ns, "flux-sample", helm3)
	r.install("--set", "size=2,api.enabled=true,networkPolicy.apiFrom[0].namespaceSelector.matchLabels.kubernetes\\.io/metadata\\.name="+allowed)
	pods := up(t, r, 2, 16) // the brokers reached each other and their readiness probes answered
	lead := pods[0].Status.PodIP
	probe := func(ns string) map[int]bool {
		script := ""
		for _, port := range []int{8050, 8051, 5000} {
			script += fmt.Sprintf("if timeout 3 bash -c 'exec 3<>/dev/tcp/%s/%d'; then echo %d open; else echo %d closed; fi; ", lead, port, port, port)
		}
		out := runPod(t, ns, "probe", appImage, []string{"bash", "-c", script})
		open := map[int]bool{}
		for _, port := range []int{8050, 8051, 5000} {
			open[port] = strings.Contains(out, fmt.Sprintf("%d open", port))
		}
		return open
	}
	// A network plugin applies a policy to a new pod some time after the pod starts (Kubernetes'
	// NetworkPolicy documentation: it "may be started unprotected"); the local cluster's enforcer
	// rewrites its rules at most once a second, longer while many pods come and go.
	start := time.Now()
	eventually(t, time.Minute, "a pod of another namespace reaches none of the lead's ports (does the cluster's network plugin enforce NetworkPolicy? The local cluster's does with ci/cluster/netpol.sh)", func() (bool, string) {
		got := probe(other)
		return !got[8050] && !got[8051] && !got[5000], fmt.Sprint(got)
	})
	t.Logf("a pod of another namespace refused %.1f s after the brokers were up", time.Since(start).Seconds())
	eventually(t, time.Minute, "a pod of the namespace networkPolicy.apiFrom names reaches the API alone", func() (bool, string) {
		got := probe(allowed)
		return !got[8050] && !got[8051] && got[5000], fmt.Sprint(got)
	})
	// The same lead without the policy: the probe sees the ports open, so closed above meant refused.
	if _, err := r.upgrade("--set", "networkPolicy.enabled=false"); err != nil {
		t.Fatal(err)
	}
	eventually(t, time.Minute, "the ports open without the NetworkPolicy", func() (bool, string) {
		got := probe(other)
		return got[8050] && got[8051] && got[5000], fmt.Sprint(got)
	})
}

// runPod runs command in a pod of ns until it ends and returns its log.
func runPod(t *testing.T, ns, prefix, image string, command []string) string {
	t.Helper()
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{GenerateName: prefix + "-"},
		Spec: corev1.PodSpec{
			RestartPolicy: corev1.RestartPolicyNever, TerminationGracePeriodSeconds: ptr.To(int64(1)),
			AutomountServiceAccountToken: ptr.To(false),
			Containers:                   []corev1.Container{{Name: "c", Image: image, ImagePullPolicy: corev1.PullIfNotPresent, Command: command}},
		},
	}
	p, err := kube.CoreV1().Pods(ns).Create(context.Background(), pod, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	eventually(t, 2*time.Minute, "pod "+p.Name+" ended", func() (bool, string) {
		got, err := kube.CoreV1().Pods(ns).Get(context.Background(), p.Name, metav1.GetOptions{})
		if err != nil {
			return false, err.Error()
		}
		return got.Status.Phase == corev1.PodSucceeded || got.Status.Phase == corev1.PodFailed, string(got.Status.Phase)
	})
	out, err := podLogs(ns, p.Name, "c", 0)
	if err != nil {
		t.Fatal(err)
	}
	_ = kube.CoreV1().Pods(ns).Delete(context.Background(), p.Name, metav1.DeleteOptions{})
	return out
}
