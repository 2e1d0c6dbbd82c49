package netns

import (
	"bufio"
	"fmt"
	"io"
	"net/http"
	"net/netip"
	"strings"
	"testing"
)

func TestCleanPath(t *testing.T) {
	for _, tc := range []struct {
		raw, want string // want "" means refused
	}{
		{"/public/x.txt", "/public/x.txt"},
		{"", "/"},
		{"/a/b/../c", "/a/c"},
		{"/public/../private/secret.txt", "/private/secret.txt"},
		{"/public/./x", "/public/x"},
		{"/a/..", "/"},
		{"/a/.", "/a/"},
		{"/../../etc", "/etc"},
		{"/a//../b", "/a/b"},
		{"/public/..//private", "//private"},
		{"/a%20b/c", "/a b/c"},
		{"/a%25b", "/a%b"},
		{"/public/%2e%2e/private/secret.txt", ""},
		{"/public/%2E%2E/private", ""},
		{"/public/%2e./private", ""},
		{"/public/..%2fprivate", ""},
		{"/public/..%2Fprivate", ""},
		{"/public/..%5cprivate", ""},
		{"/public/..%5Cprivate", ""},
		{"/public/..\\private", ""},
		{"/public/%00", ""},
		{"/\x00", ""}, // found by FuzzCleanPath: forwarded as %00, which is refused
		{"/a\tb", ""},
		{"/public/..;/private", ""},
		{"/public/.;x/private", ""},
		{"/public/%c0%ae%c0%ae/private", ""},
		{"/public/%zz", ""},
		{"public", ""},
		{"/a;b/c", "/a;b/c"},
		{"/.well-known/x", "/.well-known/x"},
	} {
		got, err := CleanPath(tc.raw)
		if tc.want == "" {
			if err == nil {
				t.Errorf("CleanPath(%q) = %q, want refused", tc.raw, got)
			}
			continue
		}
		if err != nil || got != tc.want {
			t.Errorf("CleanPath(%q) = %q, %v; want %q", tc.raw, got, err, tc.want)
		}
	}
}

// TestURLPatternDotSegments is issue 13's finding 7: a URL pattern with a
// path was left through dot segments, plain or encoded.
func TestURLPatternDotSegments(t *testing.T) {
	p := &Policy{AllowPatterns: []string{"http://svc.test:18080/public/*"}}
	for _, tc := range []struct {
		path     string
		want     bool
		forward  string
		inReason string
	}{
		{"/public/ok.txt", true, "/public/ok.txt", ""},
		{"/public/./ok.txt", true, "/public/ok.txt", ""},
		{"/public/a/../ok.txt", true, "/public/ok.txt", ""},
		{"/public/../private/secret.txt", false, "", "not in allow list"},
		{"/public/%2e%2e/private/secret.txt", false, "", "ambiguous path"},
		{"/public/%2E%2e/private/secret.txt", false, "", "ambiguous path"},
		{"/public/..%2fprivate/secret.txt", false, "", "ambiguous path"},
		{"/public/..%5Cprivate/secret.txt", false, "", "ambiguous path"},
		{"/public/..\\private/secret.txt", false, "", "ambiguous path"},
		{"/public/..;/private/secret.txt", false, "", "ambiguous path"},
		{"/private/secret.txt", false, "", "not in allow list"},
	} {
		v := p.Check(Request{Host: "svc.test", Port: 18080, Scheme: "http", Path: tc.path})
		if v.Allowed != tc.want || v.Path != tc.forward || !strings.Contains(v.Reason, tc.inReason) {
			t.Errorf("%s: %+v, want allowed=%v path %q reason with %q", tc.path, v, tc.want, tc.forward, tc.inReason)
		}
	}
	// A domain allow does not care about the path: nothing is refused.
	d := &Policy{AllowDomains: []string{"svc.test"}}
	if v := d.Check(Request{Host: "svc.test", Port: 80, Scheme: "http", Path: "/api/group%2Fproject"}); !v.Allowed || v.Path != "" {
		t.Errorf("domain allow with an encoded slash: %+v", v)
	}
}

func TestRawPath(t *testing.T) {
	for in, want := range map[string]string{
		"http://h:80/a/%2e%2e/b?x=/../": "/a/%2e%2e/b",
		"http://h":                      "",
		"http://h?q":                    "",
		"http://h/#f":                   "/",
		"/x/y?z":                        "/x/y",
	} {
		if got := rawPath(in); got != want {
			t.Errorf("rawPath(%q) = %q, want %q", in, got, want)
		}
	}
}

// TestHTTPProxyForwardsTheCleanPath: through the proxy, a dot-segment
// path never reaches the server's private part, and an allowed one is sent
// in its clean form (the server sees what the policy checked).
func TestHTTPProxyForwardsTheCleanPath(t *testing.T) {
	srv, accepted := echoServer(t)
	p := &Proxy{Policy: &Policy{
		AllowPatterns: []string{fmt.Sprintf("http://svc.test:%d/public/*", srv.Port())},
		Hosts:         map[string]netip.Addr{"svc.test": srv.Addr()},
	}}
	get := func(path string) (int, string) {
		c := serve(p, KindHTTP)
		defer c.Close()
		fmt.Fprintf(c, "GET http://svc.test:%d%s HTTP/1.1\r\nHost: svc.test\r\n\r\n", srv.Port(), path)
		resp, err := http.ReadResponse(bufio.NewReader(c), nil)
		if err != nil {
			t.Fatalf("%s: %v", path, err)
		}
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b)
	}
	if code, body := get("/public/a/../ok"); code != 200 || body != "hello from /public/ok" {
		t.Errorf("allowed: %d %q", code, body)
	}
	for _, path := range []string{"/public/../private/secret.txt", "/public/%2e%2e/private/secret.txt", "/public/%2E%2E%2Fprivate", "/public/..\\private"} {
		if code, _ := get(path); code != 403 {
			t.Errorf("%s: got %d, want 403", path, code)
		}
	}
	if n := accepted(); n != 1 {
		t.Errorf("the server saw %d connections, want 1", n)
	}
}
