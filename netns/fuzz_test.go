package netns

import (
	"bufio"
	"bytes"
	"context"
	"net"
	"net/http"
	"net/netip"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"
)

// memConn is a net.Conn in memory: reads come from in (then EOF), writes
// go to out. Fuzz targets drive the proxy with it: no sockets, no waiting
// for a deadline.
type memConn struct {
	in  *bytes.Reader
	mu  sync.Mutex
	out bytes.Buffer
}

func newMemConn(b []byte) *memConn { return &memConn{in: bytes.NewReader(b)} }

func (c *memConn) Read(b []byte) (int, error) { return c.in.Read(b) }
func (c *memConn) Write(b []byte) (int, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.out.Write(b)
}
func (c *memConn) written() []byte {
	c.mu.Lock()
	defer c.mu.Unlock()
	return append([]byte(nil), c.out.Bytes()...)
}
func (c *memConn) Close() error                     { return nil }
func (c *memConn) LocalAddr() net.Addr              { return &net.TCPAddr{} }
func (c *memConn) RemoteAddr() net.Addr             { return &net.TCPAddr{} }
func (c *memConn) SetDeadline(time.Time) error      { return nil }
func (c *memConn) SetReadDeadline(time.Time) error  { return nil }
func (c *memConn) SetWriteDeadline(time.Time) error { return nil }

// fuzzProxy allows a name, a URL pattern with a path, and SOCKS/CONNECT to
// a second name; upstreams are memConns whose writes the target inspects.
func fuzzProxy() (*Proxy, *[]*memConn) {
	var mu sync.Mutex
	var ups []*memConn
	p := &Proxy{
		Policy: &Policy{
			AllowDomains:  []string{"open.test"},
			AllowPatterns: []string{"http://svc.test/public/*", "*.wild.test"},
			DenyPatterns:  []string{"deny.wild.test"},
			Hosts: map[string]netip.Addr{
				"open.test": netip.MustParseAddr("192.0.2.1"), "svc.test": netip.MustParseAddr("192.0.2.2"),
			},
		},
		Lookup: func(context.Context, string) ([]netip.Addr, error) {
			return []netip.Addr{netip.MustParseAddr("192.0.2.3")}, nil
		},
		Dial: func(context.Context, string, string) (net.Conn, error) {
			c := newMemConn([]byte("HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok"))
			mu.Lock()
			ups = append(ups, c)
			mu.Unlock()
			return c, nil
		},
	}
	return p, &ups
}

var fuzzSeeds = []string{
	"GET http://svc.test/public/a.txt HTTP/1.1\r\nHost: svc.test\r\n\r\n",
	"GET http://svc.test/public/../private HTTP/1.1\r\nHost: svc.test\r\n\r\n",
	"GET http://svc.test/public/%2e%2e/private HTTP/1.1\r\nHost: svc.test\r\n\r\n",
	"GET http://svc.test/public/a/./b/../c?x=/../ HTTP/1.1\r\nHost: svc.test\r\n\r\n",
	"POST http://open.test/x%2Fy HTTP/1.1\r\nHost: open.test\r\nContent-Length: 3\r\n\r\nabc",
	"CONNECT a.wild.test:443 HTTP/1.1\r\nHost: a.wild.test:443\r\n\r\nhello",
	"CONNECT deny.wild.test:443 HTTP/1.1\r\n\r\n",
	"GET /relative HTTP/1.1\r\nHost: svc.test\r\n\r\n",
	"\x16\x03\x01\x00garbage",
}

// FuzzHTTPProxyConn drives the HTTP proxy (plain requests and CONNECT)
// with one connection's bytes. Whatever they are: at most one event, its
// fields clipped; a plain request forwarded under the URL pattern carries
// a path that CleanPath keeps as is and that the pattern allows.
func FuzzHTTPProxyConn(f *testing.F) {
	for _, s := range fuzzSeeds {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		p, ups := fuzzProxy()
		p.ServeConn(newMemConn(data), KindHTTP)
		checkFuzzEvents(t, p)
		for _, up := range *ups {
			sent := up.written()
			req, err := http.ReadRequest(bufio.NewReader(bytes.NewReader(sent)))
			if err != nil || req.Method == http.MethodConnect || req.Host != "svc.test" {
				continue
			}
			clean, err := CleanPath(req.URL.EscapedPath())
			if err != nil || clean != req.URL.Path || !strings.HasPrefix(clean, "/public/") {
				t.Fatalf("forwarded %q to svc.test (clean %q, %v)\nfrom %q", req.URL.EscapedPath(), clean, err, data)
			}
		}
	})
}

// FuzzSOCKSProxyConn drives the SOCKS5 proxy with one connection's bytes.
func FuzzSOCKSProxyConn(f *testing.F) {
	f.Add([]byte{5, 1, 0, 5, 1, 0, 3, 10, 'a', '.', 'w', 'i', 'l', 'd', '.', 't', 'e', 's', 't', 1, 187})
	f.Add([]byte{5, 1, 0, 5, 1, 0, 3, 9, 'o', 'p', 'e', 'n', '.', 't', 'e', 's', 't', 0, 80, 'x'})
	f.Add([]byte{5, 1, 0, 5, 1, 0, 1, 192, 0, 2, 1, 0, 80})
	f.Add([]byte{5, 1, 0, 5, 1, 0, 4, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1, 0, 80})
	f.Add([]byte{5, 1, 2})
	f.Fuzz(func(t *testing.T, data []byte) {
		p, _ := fuzzProxy()
		p.ServeConn(newMemConn(data), KindSOCKS)
		checkFuzzEvents(t, p)
	})
}

func checkFuzzEvents(t *testing.T, p *Proxy) {
	t.Helper()
	ev := p.Events()
	if len(ev) > 1 {
		t.Fatalf("one connection made %d events: %+v", len(ev), ev)
	}
	for _, e := range ev {
		if len(e.Host) > maxEventField+3 || len(e.Reason) > maxEventField+3 {
			t.Fatalf("event not clipped: %d-byte host, %d-byte reason", len(e.Host), len(e.Reason))
		}
		if e.Action != "allowed" && e.Action != "blocked" {
			t.Fatalf("event action %q", e.Action)
		}
	}
}

// FuzzCleanPath: a clean path starts with "/", has no dot segment and no
// backslash, and is what the server gets: escaped for forwarding and
// cleaned again, it is the same path.
func FuzzCleanPath(f *testing.F) {
	for _, s := range []string{"/public/x", "/public/../private", "/public/%2e%2e/private", "/a/./b/../../c/.", "/a%20b/%25", "/..;/x", "/%c0%ae", "", "x", "/a//b/../c"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, raw string) {
		clean, err := CleanPath(raw)
		if err != nil {
			return
		}
		if !strings.HasPrefix(clean, "/") || strings.ContainsRune(clean, '\\') {
			t.Fatalf("CleanPath(%q) = %q", raw, clean)
		}
		for _, seg := range strings.Split(clean, "/") {
			if seg == "." || seg == ".." {
				t.Fatalf("CleanPath(%q) = %q keeps a dot segment", raw, clean)
			}
		}
		sent := (&url.URL{Path: clean}).EscapedPath()
		again, err := CleanPath(sent)
		if err != nil || again != clean {
			t.Fatalf("CleanPath(%q) = %q, forwarded as %q, which cleans to %q, %v", raw, clean, sent, again, err)
		}
	})
}

// FuzzURLPattern: whatever the pattern and path, an allowed plain HTTP
// request's forwarded path is clean and under the pattern's path.
func FuzzURLPattern(f *testing.F) {
	f.Add("http://svc.test/public/*", "/public/x")
	f.Add("http://svc.test/public/*", "/public/%2e%2e/private")
	f.Add("http://svc.test/a%20b/*", "/a%20b/c")
	f.Add("http://svc.test/*", "/../x")
	f.Add("http://svc.test:8080/p", "/p/../p")
	f.Fuzz(func(t *testing.T, pattern, path string) {
		u, err := url.Parse(strings.ReplaceAll(pattern, "*", "%2A"))
		if err != nil || u.Scheme != "http" {
			return
		}
		port := 80
		if u.Port() == "8080" {
			port = 8080
		}
		p := &Policy{AllowPatterns: []string{pattern}}
		v := p.Check(Request{Host: "svc.test", Port: port, Scheme: "http", Path: path})
		if !v.Allowed {
			return
		}
		if v.Path == "" {
			t.Fatalf("pattern %q allowed %q with no clean path to forward", pattern, path)
		}
		if again, err := CleanPath((&url.URL{Path: v.Path}).EscapedPath()); err != nil || again != v.Path {
			t.Fatalf("pattern %q allowed %q as %q, not clean (%q, %v)", pattern, path, v.Path, again, err)
		}
		prefix, err := CleanPath(strings.TrimSuffix(strings.ReplaceAll(u.EscapedPath(), "%2A", "*"), "*"))
		if err != nil || !strings.HasPrefix(v.Path, prefix) {
			t.Fatalf("pattern %q allowed %q as %q, outside %q (%v)", pattern, path, v.Path, prefix, err)
		}
	})
}

// FuzzRawPath: the path taken from a request target never holds its query
// or fragment.
func FuzzRawPath(f *testing.F) {
	for _, s := range []string{"http://h:80/a/%2e?q#f", "http://h", "/x?y", "http://u@h/p", "http://h#/x"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, uri string) {
		if p := rawPath(uri); strings.ContainsAny(p, "?#") {
			t.Fatalf("rawPath(%q) = %q", uri, p)
		}
	})
}
