package fluxstandin

import (
	"bytes"
	"context"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/minicluster/minicluster/keygen"
)

// TestMain lets the test binary act as `flux` (through a symlink named flux on PATH), so that
// an initial program can run `flux submit` and a test can signal a real broker process.
func TestMain(m *testing.M) {
	if filepath.Base(os.Args[0]) == "flux" {
		os.Exit(Command())
	}
	dir, err := os.MkdirTemp("", "fluxstandin-bin-")
	if err != nil {
		panic(err)
	}
	self, err := os.Executable()
	if err != nil {
		panic(err)
	}
	if err := os.Symlink(self, filepath.Join(dir, "flux")); err != nil {
		panic(err)
	}
	os.Setenv("PATH", dir+string(os.PathListSeparator)+os.Getenv("PATH"))
	code := m.Run()
	os.RemoveAll(dir)
	os.Exit(code)
}

// syncBuffer is a bytes.Buffer that brokers in goroutines can share.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// certText returns a flux keygen style certificate with a fresh key pair.
func certText(t *testing.T) string {
	t.Helper()
	c, err := keygen.New(keygen.Options{Name: "test"})
	if err != nil {
		t.Fatal(err)
	}
	data, err := c.Encode()
	if err != nil {
		t.Fatal(err)
	}
	return string(data)
}

func writeFile(t *testing.T, path, text string, mode os.FileMode) string {
	t.Helper()
	if err := os.WriteFile(path, []byte(text), mode); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(path, mode); err != nil { // umask-proof
		t.Fatal(err)
	}
	return path
}

// freePorts returns n TCP ports on 127.0.0.1 that were free a moment ago.
func freePorts(t *testing.T, n int) []int {
	t.Helper()
	var ports []int
	var lns []net.Listener
	for range n {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		lns = append(lns, ln)
		ports = append(ports, ln.Addr().(*net.TCPAddr).Port)
	}
	for _, ln := range lns {
		ln.Close()
	}
	return ports
}

// instance is a test instance of `size` brokers named host-0.. on loopback ports.
type instance struct {
	t      *testing.T
	dir    string // config dir with broker.toml
	cert   string
	logs   []*syncBuffer
	out    *syncBuffer
	ctx    context.Context
	cancel context.CancelFunc
	codes  []chan int
}

func newInstance(t *testing.T, size int) *instance {
	t.Helper()
	dir := t.TempDir()
	cert := writeFile(t, filepath.Join(dir, "curve.cert"), certText(t), 0o400)
	var hosts []string
	for i, port := range freePorts(t, size) {
		hosts = append(hosts, fmt.Sprintf(`{ host = "host-%d", bind = "tcp://127.0.0.1:%d", connect = "tcp://127.0.0.1:%d" }`, i, port, port))
	}
	toml := fmt.Sprintf("[bootstrap]\ncurve_cert = %q\ndefault_port = 8050\nhosts = [\n  %s,\n]\n\n[resource]\nnoverify = true\n",
		cert, strings.Join(hosts, ",\n  "))
	conf := filepath.Join(dir, "conf")
	if err := os.Mkdir(conf, 0o755); err != nil {
		t.Fatal(err)
	}
	writeFile(t, filepath.Join(conf, "broker.toml"), toml, 0o644)
	ctx, cancel := context.WithCancel(context.Background())
	in := &instance{t: t, dir: conf, cert: cert, out: &syncBuffer{}, ctx: ctx, cancel: cancel}
	for range size {
		in.logs = append(in.logs, &syncBuffer{})
		in.codes = append(in.codes, make(chan int, 1))
	}
	t.Cleanup(func() {
		cancel()
		if t.Failed() {
			for r, l := range in.logs {
				t.Logf("log of rank %d:\n%s", r, l)
			}
			t.Logf("output:\n%s", in.out)
		}
	})
	return in
}

// start runs rank r's broker in a goroutine with `flux broker` arguments.
func (in *instance) start(r int, args ...string) {
	opts, err := parseBrokerArgs(append([]string{"--config-path=" + in.dir}, args...))
	if err != nil {
		in.t.Fatal(err)
	}
	opts.Hostname = fmt.Sprintf("host-%d", r)
	opts.Stdout, opts.Stderr = in.out, in.logs[r]
	rundir := in.t.TempDir()
	opts.Attrs["rundir"] = rundir
	go func() { in.codes[r] <- RunBroker(in.ctx, opts) }()
}

// wait returns rank r's exit code, failing the test after a deadline.
func (in *instance) wait(r int, within time.Duration) int {
	in.t.Helper()
	select {
	case code := <-in.codes[r]:
		return code
	case <-time.After(within):
		in.t.Fatalf("rank %d did not exit within %v", r, within)
		return -1
	}
}

// waitLog waits until rank r's log contains s.
func (in *instance) waitLog(r int, s string, within time.Duration) {
	in.t.Helper()
	deadline := time.Now().Add(within)
	for !strings.Contains(in.logs[r].String(), s) {
		if time.Now().After(deadline) {
			in.t.Fatalf("rank %d did not log %q within %v", r, s, within)
		}
		time.Sleep(20 * time.Millisecond)
	}
}
