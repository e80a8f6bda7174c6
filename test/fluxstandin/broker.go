package fluxstandin

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/minicluster/minicluster/keygen"
)

// BrokerOptions is what `flux broker` gets on its command line, plus the host name to look up.
type BrokerOptions struct {
	ConfigPath string
	Attrs      map[string]string // -Sname=value
	Program    []string          // initial program (rank 0 only)
	Hostname   string            // short host name; the broker's rank is its index in the host list
	Stdout     io.Writer         // the initial program's output
	Stderr     io.Writer         // log
}

type broker struct {
	opts    BrokerOptions
	rank    int
	hosts   []Host
	ipv6    bool // bootstrap.enable_ipv6: an interface may bind its IPv6 address
	parents []int
	cert    *keygen.Cert
	quorum  int
	timeout time.Duration // tbon.connect_timeout; 0 = retry forever
	quiet   bool          // log-stderr-level below 6 (info)
	ctx     context.Context

	mu       sync.Mutex
	parent   *peer
	subtree  map[int]*peer // online ranks at or below this broker -> the child they are behind (nil: self)
	changed  chan struct{}
	children map[*peer]bool
	jobs     map[int]chan message
	nextJob  int
	logMu    sync.Mutex
}

// RunBroker runs one broker until the instance ends (its exit code), ctx is cancelled
// (SIGTERM: 143) or something fails (1, with the reason logged).
func RunBroker(ctx context.Context, opts BrokerOptions) int {
	b, err := newBroker(ctx, opts)
	if err != nil {
		fmt.Fprintf(opts.Stderr, "flux-standin: error: %v\n", err)
		return 1
	}
	code, err := b.run()
	if err != nil {
		b.logf("error: %v", err)
	}
	return code
}

func newBroker(ctx context.Context, opts BrokerOptions) (*broker, error) {
	cfg, err := LoadConfig(opts.ConfigPath)
	if err != nil {
		return nil, err
	}
	b := &broker{opts: opts, hosts: cfg.Hosts, ipv6: cfg.EnableIPv6, rank: -1, ctx: ctx, subtree: map[int]*peer{},
		changed: make(chan struct{}, 1), children: map[*peer]bool{}, jobs: map[int]chan message{}}
	for i, h := range cfg.Hosts {
		if h.Name == opts.Hostname {
			b.rank = i
		}
	}
	if b.rank < 0 {
		return nil, fmt.Errorf("hostname %q is not in bootstrap.hosts of %s/broker.toml (%d hosts, first %q); a broker finds its rank by its short hostname", opts.Hostname, opts.ConfigPath, len(cfg.Hosts), cfg.Hosts[0].Name)
	}
	b.subtree[b.rank] = nil
	if len(cfg.Hosts) > 1 {
		if b.cert, err = LoadCert(cfg.CurveCert); err != nil {
			return nil, err
		}
	}
	if b.parents, err = topology(cfg.Hosts, opts.Attrs); err != nil {
		return nil, err
	}
	b.quorum = len(cfg.Hosts)
	if q, ok := opts.Attrs["broker.quorum"]; ok {
		if b.quorum, err = strconv.Atoi(q); err != nil || b.quorum < 1 || b.quorum > len(cfg.Hosts) {
			return nil, fmt.Errorf("broker.quorum=%q is not a count from 1 to the %d hosts of broker.toml", q, len(cfg.Hosts))
		}
	}
	b.timeout = 30 * time.Second
	if t, ok := opts.Attrs["tbon.connect_timeout"]; ok {
		if b.timeout, err = parseFSD(t); err != nil {
			return nil, fmt.Errorf("tbon.connect_timeout=%q: %w", t, err)
		}
	}
	if l, ok := opts.Attrs["log-stderr-level"]; ok {
		level, err := strconv.Atoi(l)
		if err != nil || level < 0 || level > 7 {
			return nil, fmt.Errorf("log-stderr-level=%q is not 0-7", l)
		}
		b.quiet = level < 6
	}
	return b, nil
}

// topology gives each rank's parent (-1 for rank 0): explicit `parent` entries first, else
// kary:K from tbon.topo (or tbon.fanout), K=2 by default in the stand-in.
func topology(hosts []Host, attrs map[string]string) ([]int, error) {
	k := 2
	if f, ok := attrs["tbon.fanout"]; ok {
		attrs = map[string]string{"tbon.topo": "kary:" + f}
	}
	if topo, ok := attrs["tbon.topo"]; ok {
		n, err := strconv.Atoi(strings.TrimPrefix(topo, "kary:"))
		if !strings.HasPrefix(topo, "kary:") || err != nil || n < 0 {
			return nil, fmt.Errorf("tbon.topo=%q: the stand-in supports kary:K only (K >= 0, 0 = flat)", topo)
		}
		k = n
	}
	index := map[string]int{}
	for i, h := range hosts {
		index[h.Name] = i
	}
	parents := make([]int, len(hosts))
	for r, h := range hosts {
		switch {
		case r == 0:
			parents[r] = -1
		case h.Parent != "":
			p, ok := index[h.Parent]
			if !ok {
				return nil, fmt.Errorf("bootstrap.hosts: parent %q of %q is not a listed host", h.Parent, h.Name)
			}
			parents[r] = p
		case k == 0:
			parents[r] = 0
		default:
			parents[r] = (r - 1) / k
		}
	}
	return parents, nil
}

// parseFSD parses an RFC 23 Flux Standard Duration: a number with an optional s, m, h or d.
func parseFSD(s string) (time.Duration, error) {
	unit := time.Second
	num := s
	for suffix, u := range map[string]time.Duration{"ms": time.Millisecond, "s": time.Second, "m": time.Minute, "h": time.Hour, "d": 24 * time.Hour} {
		if v, ok := strings.CutSuffix(s, suffix); ok && (suffix != "s" || !strings.HasSuffix(s, "ms")) {
			num, unit = v, u
		}
	}
	f, err := strconv.ParseFloat(num, 64)
	if err != nil || f < 0 {
		return 0, fmt.Errorf("not a duration like 5s, 0.5m or 2h")
	}
	return time.Duration(f * float64(unit)), nil
}

func (b *broker) logf(format string, args ...any) {
	b.logMu.Lock()
	defer b.logMu.Unlock()
	fmt.Fprintf(b.opts.Stderr, "flux-standin[%d]: %s\n", b.rank, fmt.Sprintf(format, args...))
}

func (b *broker) infof(format string, args ...any) {
	if !b.quiet {
		b.logf(format, args...)
	}
}

func (b *broker) run() (int, error) {
	var ln net.Listener
	if len(b.hosts) > 1 {
		if b.hosts[b.rank].Bind == "" {
			return 1, fmt.Errorf("no bind URI for %s: set bootstrap.default_bind or the host's bind", b.hosts[b.rank].Name)
		}
		addr, err := listenAddr(b.hosts[b.rank].Bind, b.ipv6)
		if err != nil {
			return 1, err
		}
		if ln, err = net.Listen("tcp", addr); err != nil {
			return 1, fmt.Errorf("bind %s: %w", b.hosts[b.rank].Bind, err)
		}
		defer ln.Close()
		go b.accept(ln)
	}
	b.infof("%s is rank %d of %d, listening on %v", b.hosts[b.rank].Name, b.rank, len(b.hosts), addrOf(ln))
	if b.rank == 0 {
		return b.lead()
	}
	return b.worker()
}

func addrOf(ln net.Listener) string {
	if ln == nil {
		return "nothing (a single broker)"
	}
	return ln.Addr().String()
}

func (b *broker) worker() (int, error) {
	p, dec, err := b.connectParent()
	if err != nil {
		if b.ctx.Err() != nil {
			return 143, nil
		}
		return 1, err
	}
	defer p.conn.Close()
	exit := make(chan int, 1)
	go func() {
		for {
			var m message
			if err := dec.Decode(&m); err != nil {
				exit <- -1
				return
			}
			switch m.Type {
			case "exit":
				exit <- m.Code
				return
			case "run":
				b.down(m)
			}
		}
	}()
	select {
	case <-b.ctx.Done():
		b.infof("terminated by a signal")
		return 143, nil
	case code := <-exit:
		if code < 0 {
			return 1, fmt.Errorf("lost the connection to parent rank %d (%s)", p.rank, b.hosts[p.rank].Name)
		}
		b.infof("rank 0 ended the instance: exiting with status %d", code)
		b.tellChildren(code)
		return code, nil
	}
}

func (b *broker) lead() (int, error) {
	for {
		b.mu.Lock()
		n := len(b.subtree)
		b.mu.Unlock()
		if n >= b.quorum {
			break
		}
		select {
		case <-b.ctx.Done():
			return 143, nil
		case <-b.changed:
		}
	}
	b.logf("quorum reached: %d of %d brokers online", b.quorum, len(b.hosts))
	if len(b.opts.Program) == 0 || b.opts.Attrs["broker.rc2_none"] == "1" {
		b.logf("no initial program: staying up until SIGTERM")
		<-b.ctx.Done()
		return 143, nil
	}
	uri, stop, err := b.serveLocal()
	if err != nil {
		return 1, err
	}
	defer stop()
	b.logf("running initial program %q", b.opts.Program)
	cmd := exec.Command(b.opts.Program[0], b.opts.Program[1:]...)
	cmd.Env = append(os.Environ(), "FLUX_URI="+uri)
	cmd.Stdout, cmd.Stderr = b.opts.Stdout, b.opts.Stderr
	if err := cmd.Start(); err != nil {
		b.tellChildren(127)
		return 127, fmt.Errorf("initial program: %w", err)
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	select {
	case <-b.ctx.Done():
		_ = cmd.Process.Signal(os.Interrupt)
		return 143, nil
	case err := <-done:
		code := exitCode(err)
		b.logf("initial program exited with status %d: telling every broker to exit", code)
		b.tellChildren(0)
		return code, nil
	}
}

func exitCode(err error) int {
	var ee *exec.ExitError
	switch {
	case err == nil:
		return 0
	case errors.As(err, &ee) && ee.ExitCode() >= 0:
		return ee.ExitCode()
	case errors.As(err, &ee):
		return 128 + 9 // killed by a signal
	default:
		return 127
	}
}

// serveLocal listens on a unix socket for `flux submit` (FLUX_URI=local://PATH).
func (b *broker) serveLocal() (string, func(), error) {
	dir := b.opts.Attrs["rundir"]
	if dir == "" {
		d, err := os.MkdirTemp("", "flux-standin-")
		if err != nil {
			return "", nil, err
		}
		dir = d
	}
	path := filepath.Join(dir, "local") // where flux puts it: rundir/local
	_ = os.Remove(path)
	ln, err := net.Listen("unix", path)
	if err != nil {
		return "", nil, fmt.Errorf("local socket in rundir %s: %w", dir, err)
	}
	go func() {
		for {
			conn, err := ln.Accept()
			if err != nil {
				return
			}
			go b.serveSubmit(conn)
		}
	}()
	return "local://" + path, func() { ln.Close() }, nil
}
