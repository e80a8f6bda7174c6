package fluxstandin

import (
	"bufio"
	"context"
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
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

// message is one JSON line between brokers, or between `flux submit` and rank 0.
type message struct {
	Type   string   `json:"type"`
	Rank   int      `json:"rank,omitempty"`
	Host   string   `json:"host,omitempty"`
	Nonce  string   `json:"nonce,omitempty"`
	Proof  string   `json:"proof,omitempty"`
	Ranks  []int    `json:"ranks,omitempty"`
	Code   int      `json:"code,omitempty"`
	Job    int      `json:"job,omitempty"`
	Task   int      `json:"task,omitempty"`
	Nodes  int      `json:"nodes,omitempty"`
	Tasks  int      `json:"tasks,omitempty"`
	Cmd    []string `json:"cmd,omitempty"`
	Env    []string `json:"env,omitempty"`
	Stream string   `json:"stream,omitempty"`
	Data   string   `json:"data,omitempty"`
}

// peer is one end of a connection; send is safe for concurrent use.
type peer struct {
	rank int
	conn net.Conn
	mu   sync.Mutex
	enc  *json.Encoder
	gone chan struct{} // closed when the reader of this connection stops
}

func newPeer(rank int, conn net.Conn) *peer {
	return &peer{rank: rank, conn: conn, enc: json.NewEncoder(conn), gone: make(chan struct{})}
}

func (p *peer) send(m message) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	_ = p.conn.SetWriteDeadline(time.Now().Add(10 * time.Second))
	return p.enc.Encode(m)
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

// proof shows that the sender holds the instance's certificate without sending it.
func (b *broker) proof(nonce string, rank int) string {
	mac := hmac.New(sha256.New, append(b.cert.Public[:], b.cert.Secret[:]...))
	fmt.Fprintf(mac, "%s\n%d\n%s", nonce, rank, b.hosts[rank].Name)
	return hex.EncodeToString(mac.Sum(nil))
}

func newNonce() string {
	buf := make([]byte, 16)
	_, _ = rand.Read(buf)
	return hex.EncodeToString(buf)
}

// accept serves children: challenge, hello (with proof), welcome (with proof), then their reports.
func (b *broker) accept(ln net.Listener) {
	for {
		conn, err := ln.Accept()
		if err != nil {
			return
		}
		go b.serveChild(conn)
	}
}

func (b *broker) serveChild(conn net.Conn) {
	defer conn.Close()
	nonce := newNonce()
	p := newPeer(-1, conn)
	defer close(p.gone)
	if p.send(message{Type: "challenge", Nonce: nonce}) != nil {
		return
	}
	dec := json.NewDecoder(bufio.NewReader(conn))
	_ = conn.SetReadDeadline(time.Now().Add(10 * time.Second))
	var hello message
	if err := dec.Decode(&hello); err != nil {
		return // not a broker (e.g. a port check), or it went away
	}
	r := hello.Rank
	switch {
	case hello.Type != "hello" || r <= 0 || r >= len(b.hosts) || b.parents[r] != b.rank:
		b.reject(p, fmt.Sprintf("rank %d is not a child of rank %d in this topology", r, b.rank))
		return
	case !hmac.Equal([]byte(hello.Proof), []byte(b.proof(nonce, r))):
		b.reject(p, fmt.Sprintf("rank %d (%s) does not hold this instance's CURVE certificate", r, hello.Host))
		return
	}
	_ = conn.SetReadDeadline(time.Time{})
	p.rank = r
	if p.send(message{Type: "welcome", Rank: b.rank, Proof: b.proof(hello.Nonce, b.rank)}) != nil {
		return
	}
	b.mu.Lock()
	b.children[p] = true
	b.mu.Unlock()
	b.infof("child rank %d (%s) connected from %s", r, b.hosts[r].Name, conn.RemoteAddr())
	for {
		var m message
		if err := dec.Decode(&m); err != nil {
			break
		}
		switch m.Type {
		case "online":
			b.setOnline(p, m.Ranks, true)
		case "offline":
			b.setOnline(p, m.Ranks, false)
		case "output", "done":
			b.up(m)
		}
	}
	b.mu.Lock()
	delete(b.children, p)
	var lost []int
	for rank, via := range b.subtree {
		if via == p {
			lost = append(lost, rank)
		}
	}
	b.mu.Unlock()
	b.setOnline(p, lost, false)
	b.infof("child rank %d (%s) disconnected", r, b.hosts[r].Name)
}

func (b *broker) reject(p *peer, reason string) {
	b.logf("rejected a connection from %s: %s", p.conn.RemoteAddr(), reason)
	_ = p.send(message{Type: "reject", Data: reason})
}

// setOnline records ranks coming up or going down behind child p and reports them upward.
func (b *broker) setOnline(p *peer, ranks []int, up bool) {
	if len(ranks) == 0 {
		return
	}
	sort.Ints(ranks)
	b.mu.Lock()
	for _, r := range ranks {
		if up {
			b.subtree[r] = p
		} else if b.subtree[r] == p {
			delete(b.subtree, r)
		}
	}
	n := len(b.subtree)
	parent := b.parent
	select {
	case b.changed <- struct{}{}:
	default:
	}
	if parent != nil {
		_ = parent.send(message{Type: map[bool]string{true: "online", false: "offline"}[up], Ranks: ranks})
	}
	b.mu.Unlock()
	if b.rank == 0 {
		b.infof("ranks %v %s: %d of %d brokers online (quorum %d)", ranks, map[bool]string{true: "online", false: "offline"}[up], n, len(b.hosts), b.quorum)
	}
}

// tellChildren sends exit to every child and waits (briefly) for them to hang up.
func (b *broker) tellChildren(code int) {
	b.mu.Lock()
	var kids []*peer
	for p := range b.children {
		kids = append(kids, p)
	}
	b.mu.Unlock()
	for _, p := range kids {
		_ = p.send(message{Type: "exit", Code: code})
	}
	deadline := time.After(3 * time.Second)
	for _, p := range kids {
		select {
		case <-p.gone:
		case <-deadline:
			return
		}
	}
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

// connectParent dials the parent's connect URI until it answers or tbon.connect_timeout passes.
func (b *broker) connectParent() (*peer, *json.Decoder, error) {
	pr := b.parents[b.rank]
	uri := b.hosts[pr].Connect
	if uri == "" {
		return nil, nil, fmt.Errorf("no connect URI for parent %s: set bootstrap.default_connect or the host's connect", b.hosts[pr].Name)
	}
	addr, err := tcpAddr(uri)
	if err != nil {
		return nil, nil, err
	}
	start := time.Now()
	wait := 50 * time.Millisecond
	for attempt := 1; ; attempt++ {
		p, dec, err := b.handshake(addr, pr)
		if err == nil {
			b.logf("rank %d connected to parent rank %d (%s) after %d attempts", b.rank, pr, b.hosts[pr].Name, attempt)
			return p, dec, nil
		}
		var fatal rejected
		if errors.As(err, &fatal) {
			return nil, nil, err
		}
		if b.timeout > 0 && time.Since(start) > b.timeout {
			return nil, nil, fmt.Errorf("no connection to parent rank %d at %s within tbon.connect_timeout=%v: %v", pr, uri, b.timeout, err)
		}
		if attempt == 1 || attempt%20 == 0 {
			b.infof("waiting for parent rank %d at %s: %v", pr, uri, err)
		}
		select {
		case <-b.ctx.Done():
			return nil, nil, b.ctx.Err()
		case <-time.After(wait):
		}
		wait = min(wait*2, 500*time.Millisecond)
	}
}

type rejected string

func (r rejected) Error() string { return "parent refused this broker: " + string(r) }

func (b *broker) handshake(addr string, pr int) (*peer, *json.Decoder, error) {
	d := net.Dialer{Timeout: 5 * time.Second}
	conn, err := d.DialContext(b.ctx, "tcp", addr)
	if err != nil {
		return nil, nil, err
	}
	p := newPeer(pr, conn)
	dec := json.NewDecoder(bufio.NewReader(conn))
	_ = conn.SetReadDeadline(time.Now().Add(10 * time.Second))
	var m message
	if err := dec.Decode(&m); err != nil || m.Type != "challenge" {
		conn.Close()
		return nil, nil, fmt.Errorf("no challenge from %s: %v", addr, err)
	}
	nonce := newNonce()
	hello := message{Type: "hello", Rank: b.rank, Host: b.hosts[b.rank].Name, Proof: b.proof(m.Nonce, b.rank), Nonce: nonce}
	if err := p.send(hello); err != nil {
		conn.Close()
		return nil, nil, err
	}
	if err := dec.Decode(&m); err != nil {
		conn.Close()
		return nil, nil, fmt.Errorf("no welcome from %s: %v", addr, err)
	}
	if m.Type == "reject" {
		conn.Close()
		return nil, nil, rejected(m.Data)
	}
	if m.Type != "welcome" || !hmac.Equal([]byte(m.Proof), []byte(b.proof(nonce, pr))) {
		conn.Close()
		return nil, nil, rejected(fmt.Sprintf("%s did not prove it holds this instance's CURVE certificate", addr))
	}
	_ = conn.SetReadDeadline(time.Time{})
	b.mu.Lock()
	defer b.mu.Unlock()
	b.parent = p
	var ranks []int
	for r := range b.subtree {
		ranks = append(ranks, r)
	}
	sort.Ints(ranks)
	if err := p.send(message{Type: "online", Ranks: ranks}); err != nil {
		conn.Close()
		return nil, nil, err
	}
	return p, dec, nil
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
