package fluxstandin

// The overlay: how a broker proves itself to its parent and what they say to each other.
// Every message is one JSON line. On accept the parent sends a challenge (a nonce); the child
// answers hello with its rank, its own nonce and an HMAC of the parent's nonce keyed with the
// certificate's keys; the parent checks that the rank is its child and the proof, and answers
// welcome with its own proof (or reject). Then the child reports ranks online/offline upward,
// and the parent sends run and exit downward.

import (
	"bufio"
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"sort"
	"sync"
	"time"
)

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
