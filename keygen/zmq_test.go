package keygen

import (
	"context"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/minicluster/minicluster/internal/tooltest"
)

// python3 is Debian's interpreter, which has python3-zmq (libzmq); the python3 first on PATH
// may be another one without it.
const python3 = "/usr/bin/python3"

// zmqScript reads our certificate file with pyzmq's own certificate loader, has libzmq derive
// the public key from our secret key, then runs real CURVE handshakes on loopback: a REP
// server with our secret key and a REQ client that knows our public key exchange a message
// each way; a client with a wrong server key gets no message through and the server's
// monitor reports the failed handshake.
const zmqScript = `
import sys, zmq, zmq.auth
from zmq.utils.monitor import recv_monitor_message

cert, wrong_pub, flux_pub, flux_sec = sys.argv[1:5]

def fail(msg):
    print("FAIL: " + msg)
    sys.exit(1)

if not zmq.has("curve"):
    fail("libzmq %s was built without CURVE" % zmq.zmq_version())
pub, sec = zmq.auth.load_certificate(cert)
if sec is None:
    fail("pyzmq found no secret-key in " + cert)
if zmq.curve_public(sec) != pub:
    fail("zmq_curve_public(secret) = %r, file says %r" % (zmq.curve_public(sec), pub))
if zmq.curve_public(flux_sec.encode()) != flux_pub.encode():
    fail("flux-core test pair does not match in libzmq")
print("curve_public ok, libzmq", zmq.zmq_version())

ctx = zmq.Context()
srv = ctx.socket(zmq.REP)
srv.linger = 0
srv.curve_server = True
srv.curve_secretkey = sec
srv.curve_publickey = pub
mon = srv.get_monitor_socket(zmq.EVENT_HANDSHAKE_SUCCEEDED | zmq.EVENT_HANDSHAKE_FAILED_NO_DETAIL |
                             zmq.EVENT_HANDSHAKE_FAILED_PROTOCOL | zmq.EVENT_HANDSHAKE_FAILED_AUTH)
port = srv.bind_to_random_port("tcp://127.0.0.1")

def client(server_key):
    c = ctx.socket(zmq.REQ)
    c.linger = 0
    cpub, csec = zmq.curve_keypair()
    c.curve_serverkey = server_key
    c.curve_publickey = cpub
    c.curve_secretkey = csec
    c.connect("tcp://127.0.0.1:%d" % port)
    return c

def next_event(timeout_ms):
    if not mon.poll(timeout_ms):
        return None
    return recv_monitor_message(mon)["event"]

c = client(pub)
c.send(b"ping from client")
if not srv.poll(5000):
    fail("server received nothing over CURVE with the right key")
if srv.recv() != b"ping from client":
    fail("server received the wrong message")
srv.send(b"pong from server")
if not c.poll(5000):
    fail("client received no reply")
if c.recv() != b"pong from server":
    fail("client received the wrong reply")
ev = next_event(2000)
if ev != zmq.EVENT_HANDSHAKE_SUCCEEDED:
    fail("server monitor: want HANDSHAKE_SUCCEEDED, got %r" % ev)
c.close()
print("handshake ok: message both ways")

w = client(wrong_pub.encode())
w.send(b"must not arrive")
ev = next_event(5000)
if ev not in (zmq.EVENT_HANDSHAKE_FAILED_NO_DETAIL, zmq.EVENT_HANDSHAKE_FAILED_PROTOCOL, zmq.EVENT_HANDSHAKE_FAILED_AUTH):
    fail("server monitor: want a failed handshake with the wrong server key, got %r" % ev)
if srv.poll(1500):
    fail("server received %r from a client with the wrong server key" % srv.recv())
if w.poll(500):
    fail("client with the wrong server key got a reply")
print("wrong server key: handshake failed (event %d), nothing received" % ev)
w.close()
srv.disable_monitor()
ctx.destroy(linger=0)
`

// requireZMQ skips the test when Debian's python3-zmq is missing, and fails it under
// MINICLUSTER_REQUIRE_TOOLS=1 (make test, CI), where this check must not be left out.
func requireZMQ(t *testing.T) {
	t.Helper()
	out, err := exec.Command(python3, "-c", "import zmq; print(zmq.zmq_version())").CombinedOutput()
	if err != nil {
		// One line: the last of python's traceback ("No module named 'zmq'") or exec's error.
		lines := strings.Split(strings.TrimSpace(string(out)), "\n")
		tooltest.Missing(t, "%s cannot import zmq (%v: %s): install python3-zmq (apt-get install -y python3-zmq; make deps does it)",
			python3, err, lines[len(lines)-1])
	}
}

// TestZeroMQAcceptsOurCertificate is the real-ZeroMQ check of a certificate we write.
func TestZeroMQAcceptsOurCertificate(t *testing.T) {
	requireZMQ(t)
	c, err := New(Options{Name: "zmq-test", Hostname: "localhost", Time: time.Now()})
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "curve.cert")
	if err := c.WriteFile(path); err != nil {
		t.Fatal(err)
	}
	other, err := GenerateKeyPair()
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	out, err := exec.CommandContext(ctx, python3, "-c", zmqScript, path, other.PublicText(), fluxPub, fluxSec).CombinedOutput()
	t.Logf("python3-zmq:\n%s", out)
	if err != nil {
		t.Fatalf("real ZeroMQ rejected our certificate: %v", err)
	}
	for _, want := range []string{"curve_public ok", "handshake ok", "wrong server key: handshake failed"} {
		if !strings.Contains(string(out), want) {
			t.Errorf("output lacks %q", want)
		}
	}
}
