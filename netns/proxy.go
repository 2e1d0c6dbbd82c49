package netns

import (
	"bufio"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"math"
	"net"
	"net/http"
	"net/netip"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"
	"unicode/utf8"
)

// Event is one network attempt, as the report lists it.
type Event struct {
	TimeMs    float64 `json:"time_ms"`
	Host      string  `json:"host"`
	Port      int     `json:"port"`
	Action    string  `json:"action"` // "allowed" or "blocked"
	Reason    string  `json:"reason"`
	BytesUp   int64   `json:"bytes_up"`
	BytesDown int64   `json:"bytes_down"`
}

// Proxy is the egress proxy ward runs on the host side for a sandbox in
// network mode "proxy": an HTTP proxy (plain requests and CONNECT) and a
// SOCKS5 proxy (remote name resolution), fed connections the sandbox's
// init relays. It holds the whole policy; the sandbox has no route out.
type Proxy struct {
	Policy *Policy
	// Lookup resolves a name (default: the host's resolver). It is asked
	// only when a connection asks for a name, and its answer is checked and
	// dialled as is: no second lookup, so DNS rebinding cannot slip past.
	Lookup func(ctx context.Context, host string) ([]netip.Addr, error)
	// Dial connects to the checked address (default: a net.Dialer with a
	// 10 s timeout); tests replace it.
	Dial func(ctx context.Context, network, addr string) (net.Conn, error)
	// MaxConns is the most connections open at once; MaxBytes the most
	// bytes in both directions over the sandbox's life; IdleTimeout ends a
	// connection with no traffic. Zero means the defaults.
	MaxConns    int
	MaxBytes    int64
	IdleTimeout time.Duration
	// MaxEvents is how many events the proxy keeps (zero: the default);
	// later ones are only counted (Dropped), so that a sandbox opening
	// connections in a loop cannot make ward grow.
	MaxEvents int
	// OnEvent, if set, is told of every attempt (for --log-network).
	OnEvent func(Event)

	start   time.Time
	once    sync.Once
	mu      sync.Mutex
	events  []Event
	dropped Dropped
	open    atomic.Int64
	bytes   atomic.Int64
}

// Dropped counts the events past MaxEvents, which the proxy did not keep.
type Dropped struct {
	Events    int   `json:"events"`
	Allowed   int   `json:"allowed"`
	Blocked   int   `json:"blocked"`
	BytesUp   int64 `json:"bytes_up"`
	BytesDown int64 `json:"bytes_down"`
}

// Defaults of the proxy's limits.
const (
	DefaultMaxConns    = 64
	DefaultMaxBytes    = 1 << 30
	DefaultIdleTimeout = 5 * time.Minute
	DefaultMaxEvents   = 1000
	// MaxRequestBytes bounds an HTTP request's line and headers, and
	// maxEventField an event's host and reason (they may quote the client).
	MaxRequestBytes = 64 << 10
	maxEventField   = 256
)

func (p *Proxy) init() {
	p.once.Do(func() {
		p.start = time.Now()
		if p.MaxConns == 0 {
			p.MaxConns = DefaultMaxConns
		}
		if p.MaxBytes == 0 {
			p.MaxBytes = DefaultMaxBytes
		}
		if p.IdleTimeout == 0 {
			p.IdleTimeout = DefaultIdleTimeout
		}
		if p.MaxEvents == 0 {
			p.MaxEvents = DefaultMaxEvents
		}
		if p.Dial == nil {
			d := &net.Dialer{Timeout: 10 * time.Second}
			p.Dial = d.DialContext
		}
		if p.Lookup == nil {
			p.Lookup = func(ctx context.Context, host string) ([]netip.Addr, error) {
				return net.DefaultResolver.LookupNetIP(ctx, "ip", host)
			}
		}
	})
}

// Events are the attempts so far, in order: the first MaxEvents.
func (p *Proxy) Events() []Event {
	p.mu.Lock()
	defer p.mu.Unlock()
	return append([]Event(nil), p.events...)
}

// Dropped counts the attempts after the first MaxEvents.
func (p *Proxy) Dropped() Dropped {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.dropped
}

// record keeps e (its index) or, past MaxEvents, only counts it (-1).
func (p *Proxy) record(e Event) int {
	p.init()
	e.TimeMs = float64(time.Since(p.start).Microseconds()) / 1000
	e.Host, e.Reason = clip(e.Host), clip(e.Reason)
	i := -1
	p.mu.Lock()
	if len(p.events) < p.MaxEvents {
		p.events = append(p.events, e)
		i = len(p.events) - 1
	} else {
		p.dropped.Events++
		if e.Action == "allowed" {
			p.dropped.Allowed++
		} else {
			p.dropped.Blocked++
		}
	}
	p.mu.Unlock()
	if p.OnEvent != nil {
		p.OnEvent(e)
	}
	return i
}

func (p *Proxy) setBytes(i int, up, down int64) {
	p.mu.Lock()
	if i >= 0 {
		p.events[i].BytesUp, p.events[i].BytesDown = up, down
	} else {
		p.dropped.BytesUp += up
		p.dropped.BytesDown += down
	}
	p.mu.Unlock()
}

// clip shortens s to maxEventField bytes (on a rune boundary), marking the cut.
func clip(s string) string {
	if len(s) <= maxEventField {
		return s
	}
	n := maxEventField
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return s[:n] + "..."
}

// Kinds of connection the init relays.
const (
	KindHTTP  = 'H' // 127.0.0.1:3128 inside
	KindSOCKS = 'S' // 127.0.0.1:1080 inside
)

// admit counts a new connection in, or records its refusal when the
// sandbox already has MaxConns open.
func (p *Proxy) admit() bool {
	if n := p.open.Add(1); n > int64(p.MaxConns) {
		p.open.Add(-1)
		p.record(Event{Action: "blocked", Reason: fmt.Sprintf("more than %d connections at once", p.MaxConns)})
		return false
	}
	return true
}

// ServeConn serves one client connection of the given kind and closes it.
func (p *Proxy) ServeConn(c net.Conn, kind byte) {
	p.init()
	defer c.Close()
	if !p.admit() {
		return
	}
	defer p.open.Add(-1)
	_ = c.SetDeadline(time.Now().Add(30 * time.Second)) // for the request itself
	switch kind {
	case KindHTTP:
		p.serveHTTP(c)
	case KindSOCKS:
		p.serveSOCKS(c)
	}
}

// ServeDirect serves a connection a program made straight to a name the
// stub resolver answered (dest is "name:port"), as a CONNECT to it.
func (p *Proxy) ServeDirect(c net.Conn, dest string) {
	p.init()
	defer c.Close()
	if !p.admit() {
		return
	}
	defer p.open.Add(-1)
	host, portStr, err := net.SplitHostPort(dest)
	port, perr := strconv.Atoi(portStr)
	if err != nil || perr != nil {
		return
	}
	r := Request{Host: host, Port: port}
	if port == 443 {
		r.Scheme = "https"
	}
	upstream, i, _ := p.decide(r)
	if upstream == nil {
		return // the program sees its connection closed
	}
	defer upstream.Close()
	up, down := p.pipe(c, bufio.NewReader(c), upstream)
	p.setBytes(i, up, down)
}

// decide checks the request, resolves and checks the addresses, and
// dials the first checked address. It records the attempt.
func (p *Proxy) decide(r Request) (net.Conn, int, Verdict) {
	v := p.Policy.Check(r)
	rule, path := v.Reason, v.Path
	var upstream net.Conn
	if v.Allowed {
		addrs, err := p.resolve(r.Host)
		if err != nil {
			v = Verdict{Reason: "lookup failed: " + err.Error()}
		} else if v = p.Policy.CheckAddrs(addrs); v.Allowed {
			c, err := p.Dial(context.Background(), "tcp", netip.AddrPortFrom(addrs[0], uint16(r.Port)).String())
			if err != nil {
				v = Verdict{Reason: "connect failed: " + err.Error()}
			} else {
				upstream, v.Reason, v.Path = c, rule, path
			}
		}
	}
	action := "blocked"
	if upstream != nil {
		action = "allowed"
	}
	i := p.record(Event{Host: r.Host, Port: r.Port, Action: action, Reason: v.Reason})
	return upstream, i, v
}

func (p *Proxy) resolve(host string) ([]netip.Addr, error) {
	h := normalize(host)
	if a, ok := p.Policy.Hosts[h]; ok {
		return []netip.Addr{a}, nil
	}
	if a, err := netip.ParseAddr(h); err == nil {
		return []netip.Addr{a}, nil
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	return p.Lookup(ctx, h)
}

func (p *Proxy) serveHTTP(c net.Conn) {
	// The request line and headers are read within MaxRequestBytes; the
	// body and a tunnel's bytes are not limited by it.
	lr := &io.LimitedReader{R: c, N: MaxRequestBytes}
	br := bufio.NewReader(lr)
	req, err := http.ReadRequest(br)
	lr.N = math.MaxInt64
	if err != nil {
		p.record(Event{Action: "blocked", Reason: "malformed HTTP request"})
		_, _ = io.WriteString(c, "HTTP/1.1 400 Bad Request\r\nConnection: close\r\nContent-Length: 0\r\n\r\n")
		return
	}
	host, portStr, err := net.SplitHostPort(req.Host)
	if err != nil {
		host, portStr = req.Host, "80"
		if req.Method == http.MethodConnect {
			portStr = "443"
		}
	}
	port, _ := strconv.Atoi(portStr)
	r := Request{Host: host, Port: port}
	if req.Method == http.MethodConnect {
		r.Scheme = map[bool]string{true: "https", false: ""}[port == 443]
	} else {
		if req.URL.Scheme != "http" {
			p.record(Event{Host: host, Port: port, Action: "blocked", Reason: "not an absolute http:// URL"})
			blocked(c, "not an absolute http:// URL")
			return
		}
		r.Scheme, r.Path = "http", rawPath(req.RequestURI)
	}
	upstream, i, v := p.decide(r)
	if upstream == nil {
		blocked(c, v.Reason)
		return
	}
	defer upstream.Close()
	if req.Method == http.MethodConnect {
		if _, err := io.WriteString(c, "HTTP/1.1 200 Connection established\r\n\r\n"); err != nil {
			return
		}
	} else {
		// One request per connection: the next one could name another host.
		req.Close = true
		req.RequestURI = ""
		req.Header.Del("Proxy-Connection")
		req.Header.Del("Proxy-Authorization")
		if v.Path != "" {
			// A URL pattern allowed the clean path: send that one.
			req.URL.Path, req.URL.RawPath = v.Path, ""
		}
		cw := &countingWriter{w: upstream}
		if err := req.Write(cw); err != nil {
			return
		}
		up, down := p.pipe(c, br, upstream)
		p.setBytes(i, up+cw.n, down)
		return
	}
	up, down := p.pipe(c, br, upstream)
	p.setBytes(i, up, down)
}

// rawPath is the path of an absolute-form request target as sent
// ("http://h:80/a/%2e?q" gives "/a/%2e"), without query or fragment.
func rawPath(requestURI string) string {
	_, rest, ok := strings.Cut(requestURI, "://")
	if !ok {
		rest = requestURI
	} else if i := strings.IndexAny(rest, "/?#"); i >= 0 {
		rest = rest[i:]
	} else {
		rest = ""
	}
	if i := strings.IndexAny(rest, "?#"); i >= 0 {
		rest = rest[:i]
	}
	return rest
}

// blocked answers a refused HTTP request or CONNECT with 403 and why.
func blocked(c net.Conn, reason string) {
	// The reason may quote the client's request: no control bytes in the header.
	header := strings.Map(func(r rune) rune {
		if r < 0x20 || r == 0x7f {
			return '?'
		}
		return r
	}, reason)
	body := "ward: blocked: " + reason + "\n"
	fmt.Fprintf(c, "HTTP/1.1 403 Forbidden\r\nX-Ward-Blocked: %s\r\nContent-Type: text/plain\r\nContent-Length: %d\r\nConnection: close\r\n\r\n%s", header, len(body), body)
}

// SOCKS5 reply codes (RFC 1928).
const (
	socksOK          = 0x00
	socksNotAllowed  = 0x02
	socksUnreachable = 0x04
	socksBadCommand  = 0x07
	socksBadAddress  = 0x08
)

func (p *Proxy) serveSOCKS(c net.Conn) {
	br := bufio.NewReader(c)
	req, err := readSOCKS(br, c)
	if err != nil {
		p.record(Event{Action: "blocked", Reason: "malformed SOCKS5 request: " + err.Error()})
		var se socksError
		if errors.As(err, &se) {
			socksReply(c, byte(se))
		}
		return
	}
	upstream, i, v := p.decide(req)
	if upstream == nil {
		code := byte(socksNotAllowed)
		if v.Reason != "" && (len(v.Reason) > 14 && v.Reason[:14] == "connect failed") {
			code = socksUnreachable
		}
		socksReply(c, code)
		return
	}
	defer upstream.Close()
	socksReply(c, socksOK)
	up, down := p.pipe(c, br, upstream)
	p.setBytes(i, up, down)
}

type socksError byte

func (e socksError) Error() string { return fmt.Sprintf("SOCKS5 error %d", byte(e)) }

// readSOCKS reads the greeting (answering "no authentication") and a
// CONNECT request.
func readSOCKS(br *bufio.Reader, w io.Writer) (Request, error) {
	var hdr [2]byte
	if _, err := io.ReadFull(br, hdr[:]); err != nil {
		return Request{}, err
	}
	if hdr[0] != 5 || hdr[1] == 0 {
		return Request{}, fmt.Errorf("not SOCKS5")
	}
	methods := make([]byte, hdr[1])
	if _, err := io.ReadFull(br, methods); err != nil {
		return Request{}, err
	}
	noAuth := false
	for _, m := range methods {
		noAuth = noAuth || m == 0
	}
	if !noAuth {
		_, _ = w.Write([]byte{5, 0xff})
		return Request{}, fmt.Errorf("no acceptable method")
	}
	if _, err := w.Write([]byte{5, 0}); err != nil {
		return Request{}, err
	}
	var rq [4]byte
	if _, err := io.ReadFull(br, rq[:]); err != nil {
		return Request{}, err
	}
	if rq[0] != 5 {
		return Request{}, socksError(socksBadCommand)
	}
	if rq[1] != 1 { // CONNECT only
		return Request{}, socksError(socksBadCommand)
	}
	var host string
	switch rq[3] {
	case 1, 4:
		b := make([]byte, map[byte]int{1: 4, 4: 16}[rq[3]])
		if _, err := io.ReadFull(br, b); err != nil {
			return Request{}, err
		}
		a, _ := netip.AddrFromSlice(b)
		host = a.String()
	case 3:
		n, err := br.ReadByte()
		if err != nil {
			return Request{}, err
		}
		b := make([]byte, n)
		if _, err := io.ReadFull(br, b); err != nil {
			return Request{}, err
		}
		host = string(b)
	default:
		return Request{}, socksError(socksBadAddress)
	}
	var pb [2]byte
	if _, err := io.ReadFull(br, pb[:]); err != nil {
		return Request{}, err
	}
	return Request{Host: host, Port: int(binary.BigEndian.Uint16(pb[:]))}, nil
}

func socksReply(w io.Writer, code byte) {
	_, _ = w.Write([]byte{5, code, 0, 1, 0, 0, 0, 0, 0, 0})
}

// pipe copies both ways until either side ends or the limits are hit,
// and returns the bytes sent up (client to server) and down.
func (p *Proxy) pipe(client net.Conn, clientBuf *bufio.Reader, upstream net.Conn) (int64, int64) {
	_ = client.SetDeadline(time.Time{})
	var up, down atomic.Int64
	copyDir := func(dst net.Conn, src io.Reader, srcConn net.Conn, n *atomic.Int64) {
		buf := make([]byte, 32<<10)
		for {
			_ = srcConn.SetReadDeadline(time.Now().Add(p.IdleTimeout))
			k, err := src.Read(buf)
			if k > 0 {
				if p.bytes.Add(int64(k)) > p.MaxBytes {
					// Over the sandbox's byte budget: end both sides now.
					_ = client.Close()
					_ = upstream.Close()
					break
				}
				n.Add(int64(k))
				if _, werr := dst.Write(buf[:k]); werr != nil {
					break
				}
			}
			if err != nil {
				break
			}
		}
		// Half-close so the other direction can finish.
		if tc, ok := dst.(interface{ CloseWrite() error }); ok {
			_ = tc.CloseWrite()
		} else {
			_ = dst.Close()
		}
	}
	done := make(chan struct{})
	go func() { copyDir(upstream, clientBuf, client, &up); close(done) }()
	copyDir(client, upstream, upstream, &down)
	<-done
	return up.Load(), down.Load()
}

type countingWriter struct {
	w io.Writer
	n int64
}

func (c *countingWriter) Write(b []byte) (int, error) {
	k, err := c.w.Write(b)
	c.n += int64(k)
	return k, err
}
