package netns

import (
	"net/netip"
	"testing"
)

func TestPolicyCheck(t *testing.T) {
	p := &Policy{
		AllowDomains:  []string{"example.com", "10.203.0.2"},
		AllowPatterns: []string{"*.github.com", "api.*.com", "https://cdn.example.org/*", "http://docs.example.net/v1/*"},
		DenyPatterns:  []string{"*.internal", "localhost", "127.*", "blocked.github.com"},
	}
	for _, tc := range []struct {
		r    Request
		want bool
	}{
		{Request{Host: "example.com", Port: 443}, true},
		{Request{Host: "EXAMPLE.com.", Port: 443}, true},
		{Request{Host: "www.example.com", Port: 443}, false},
		{Request{Host: "api.github.com", Port: 443}, true},
		{Request{Host: "github.com", Port: 443}, false}, // *.x is subdomains only
		{Request{Host: "blocked.github.com", Port: 443}, false},
		{Request{Host: "api.foo.com", Port: 443}, true},
		{Request{Host: "api.foo.bar.com", Port: 443}, false},
		{Request{Host: "svc.internal", Port: 80}, false},
		{Request{Host: "localhost", Port: 80}, false},
		{Request{Host: "127.0.0.1", Port: 80}, false},
		{Request{Host: "10.203.0.2", Port: 80}, true},  // a listed bare IP
		{Request{Host: "10.203.0.3", Port: 80}, false}, // a bare IP not listed
		{Request{Host: "cdn.example.org", Port: 443, Scheme: "https"}, true},
		{Request{Host: "cdn.example.org", Port: 8443, Scheme: "https"}, false},
		{Request{Host: "docs.example.net", Port: 80, Scheme: "http", Path: "/v1/x"}, true},
		{Request{Host: "docs.example.net", Port: 80, Scheme: "http", Path: "/v2/x"}, false},
		{Request{Host: "example.com", Port: 0}, false},
	} {
		if got := p.Check(tc.r); got.Allowed != tc.want {
			t.Errorf("Check(%+v) = %+v, want allowed=%v", tc.r, got, tc.want)
		}
	}
}

func TestPolicyPorts(t *testing.T) {
	p := &Policy{AllowDomains: []string{"a.test"}, AllowPorts: []int{443}}
	if !p.Check(Request{Host: "a.test", Port: 443}).Allowed || p.Check(Request{Host: "a.test", Port: 8080}).Allowed {
		t.Errorf("allow_ports=[443] must pass 443 and block 8080")
	}
}

func TestInternalAddresses(t *testing.T) {
	for s, want := range map[string]bool{
		"127.0.0.1": true, "10.1.2.3": true, "172.20.0.1": true, "192.168.1.1": true, "169.254.169.254": true,
		"100.64.0.1": true, "0.0.0.0": true, "224.0.0.1": true, "255.255.255.255": true, "::1": true,
		"fd00::1": true, "fe80::1": true, "::ffff:127.0.0.1": true, "::ffff:10.0.0.1": true,
		"93.184.216.34": false, "2606:2800:220:1::": false, "8.8.8.8": false,
	} {
		if got := Internal(netip.MustParseAddr(s)); got != want {
			t.Errorf("Internal(%s) = %v, want %v", s, got, want)
		}
	}
	p := &Policy{BlockInternal: true}
	if p.CheckAddrs([]netip.Addr{netip.MustParseAddr("93.184.216.34"), netip.MustParseAddr("10.0.0.1")}).Allowed {
		t.Errorf("one internal answer among public ones must refuse the name")
	}
}

func FuzzPolicyCheck(f *testing.F) {
	for _, s := range []string{"example.com", "*.github.com", "api.*.com", "127.*", "https://cdn.x/*", "", "*", "a..b"} {
		f.Add(s, "api.github.com", 443)
	}
	f.Add("https://cdn.x/*", "cdn.x", 443)
	f.Fuzz(func(t *testing.T, pattern, host string, port int) {
		p := &Policy{AllowPatterns: []string{pattern}, DenyPatterns: []string{pattern}}
		if p.Check(Request{Host: host, Port: port, Scheme: "https"}).Allowed {
			t.Fatalf("pattern %q both allows and denies %q, and the deny must win", pattern, host)
		}
	})
}
