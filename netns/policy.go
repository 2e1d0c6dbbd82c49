package netns

import (
	"fmt"
	"net/netip"
	"net/url"
	"strconv"
	"strings"
	"sync"
)

// Policy decides, on the host side, every connection a sandbox asks the
// proxy for. Names are matched case-insensitively, without a trailing dot.
type Policy struct {
	// AllowDomains are exact names (or bare IPs) allowed.
	AllowDomains []string
	// AllowPatterns: "*.github.com" (subdomains, not the apex),
	// "api.*.com" (one label), or a URL pattern "https://cdn.example.com/*"
	// (scheme, host and port; the path matters only for plain HTTP).
	AllowPatterns []string
	// DenyPatterns win over every allow: "*.internal", "localhost",
	// "127.*" (a pattern on names and on the literal address).
	DenyPatterns []string
	// AllowPorts limits ports; empty means any.
	AllowPorts []int
	// BlockInternal refuses a name when any address it resolves to is
	// loopback, private, link-local, CGNAT, unspecified, multicast or
	// broadcast (IPv4-mapped forms included).
	BlockInternal bool
	// Hosts are static answers (--add-host NAME:IP), used instead of DNS.
	Hosts map[string]netip.Addr
}

// Request is what a client asked for.
type Request struct {
	Host   string // name or literal IP, as asked
	Port   int
	Scheme string // "http" for plain proxied HTTP, "https" for CONNECT to 443, "" unknown
	// Path is the path as the client sent it (percent-encoded, without
	// the query): plain HTTP only. URL patterns match it once CleanPath
	// made it unambiguous.
	Path string
}

// Verdict is the policy's answer before any lookup.
type Verdict struct {
	Allowed bool
	Reason  string
	// Path, when a URL pattern with a path allowed the request, is the
	// clean path it matched (CleanPath): the request must be forwarded
	// with this path, so the server sees what was checked.
	Path string
}

func normalize(host string) string {
	return strings.TrimSuffix(strings.ToLower(strings.TrimSpace(host)), ".")
}

// Check applies the name rules (deny, allow, ports). The address rules
// (BlockInternal) apply after resolution: see CheckAddrs.
func (p *Policy) Check(r Request) Verdict {
	host := normalize(r.Host)
	if host == "" {
		return Verdict{Reason: "no host"}
	}
	if r.Port <= 0 || r.Port > 65535 {
		return Verdict{Reason: fmt.Sprintf("bad port %d", r.Port)}
	}
	for _, d := range p.DenyPatterns {
		if matchPattern(normalize(patternHost(d)), host) {
			return Verdict{Reason: "denied by pattern " + d}
		}
	}
	if len(p.AllowPorts) > 0 && !containsInt(p.AllowPorts, r.Port) {
		return Verdict{Reason: fmt.Sprintf("port %d not in allow_ports", r.Port)}
	}
	for _, a := range p.AllowDomains {
		if normalize(a) == host {
			return Verdict{Allowed: true, Reason: "allow_domains " + a}
		}
	}
	if _, err := netip.ParseAddr(host); err == nil {
		// A bare IP passes only when listed (above), never by pattern.
		return Verdict{Reason: "IP address not in allow list"}
	}
	var pathErr error
	for _, pat := range p.AllowPatterns {
		ok, clean, err := matchAllow(pat, host, r)
		if err != nil && pathErr == nil {
			pathErr = err
		}
		if ok {
			reason := "allow_patterns " + pat
			if strings.Contains(pat, "://") && r.Scheme != "http" {
				reason += " (HTTPS is not intercepted: the path is not checked)"
			}
			return Verdict{Allowed: true, Reason: reason, Path: clean}
		}
	}
	if pathErr != nil {
		return Verdict{Reason: "ambiguous path refused: " + pathErr.Error()}
	}
	return Verdict{Reason: "not in allow list"}
}

// matchAllow matches a name pattern, or a URL pattern
// (scheme://host[:port]/path*). For a plain HTTP request and an http://
// pattern, the path is matched once clean (CleanPath): clean is the path
// to forward, and err says why the request's path was refused.
func matchAllow(pat, host string, r Request) (ok bool, clean string, err error) {
	if !strings.Contains(pat, "://") {
		return matchPattern(normalize(pat), host), "", nil
	}
	u, perr := url.Parse(strings.Replace(pat, "*", "%2A", -1))
	if perr != nil || u.Host == "" {
		return false, "", nil
	}
	if !matchPattern(normalize(patternHost(pat)), host) {
		return false, "", nil
	}
	port := u.Port()
	if port == "" {
		port = map[string]string{"http": "80", "https": "443"}[u.Scheme]
	}
	if port != strconv.Itoa(r.Port) {
		return false, "", nil
	}
	if u.Scheme == "http" && r.Scheme == "http" {
		prefix, perr := CleanPath(strings.TrimSuffix(strings.ReplaceAll(u.EscapedPath(), "%2A", "*"), "*"))
		if perr != nil {
			return false, "", nil // a pattern with an ambiguous path matches nothing
		}
		clean, err := CleanPath(r.Path)
		if err != nil {
			return false, "", err
		}
		return strings.HasPrefix(clean, prefix), clean, nil
	}
	// HTTPS is not intercepted: scheme, host and port are all ward sees.
	return u.Scheme == "https" || u.Scheme == r.Scheme, "", nil
}

// patternHost is the host part of a URL pattern (a deny pattern in URL
// form denies the whole host), or the pattern itself.
func patternHost(pat string) string {
	if _, rest, ok := strings.Cut(pat, "://"); ok {
		host, _, _ := strings.Cut(rest, "/")
		if h, _, ok := strings.Cut(host, ":"); ok {
			host = h
		}
		return host
	}
	return pat
}

// matchPattern: "*" alone matches everything; "*.x.y" matches names
// under x.y (not x.y itself); any other "*" matches exactly one label
// (or, in an IP-like pattern such as "127.*" or "192.168.*", the rest).
func matchPattern(pat, host string) bool {
	if pat == "*" {
		return true
	}
	if !strings.Contains(pat, "*") {
		return pat == host
	}
	if rest, ok := strings.CutPrefix(pat, "*."); ok && !strings.Contains(rest, "*") {
		return strings.HasSuffix(host, "."+rest)
	}
	if strings.HasSuffix(pat, ".*") && isIPPrefix(strings.TrimSuffix(pat, ".*")) {
		return strings.HasPrefix(host, strings.TrimSuffix(pat, "*"))
	}
	pl, hl := strings.Split(pat, "."), strings.Split(host, ".")
	if len(pl) != len(hl) {
		return false
	}
	for i := range pl {
		if pl[i] != "*" && pl[i] != hl[i] {
			return false
		}
	}
	return true
}

func isIPPrefix(s string) bool {
	for _, part := range strings.Split(s, ".") {
		if _, err := strconv.Atoi(part); err != nil {
			return false
		}
	}
	return s != ""
}

func containsInt(xs []int, x int) bool {
	for _, v := range xs {
		if v == x {
			return true
		}
	}
	return false
}

// internalPrefixes are refused by BlockInternal; parsed on first use, not
// at every start of ward.
var internalPrefixes = sync.OnceValue(func() []netip.Prefix {
	var out []netip.Prefix
	for _, s := range []string{
		"0.0.0.0/8", "10.0.0.0/8", "100.64.0.0/10", "127.0.0.0/8", "169.254.0.0/16", "172.16.0.0/12",
		"192.0.0.0/24", "192.168.0.0/16", "198.18.0.0/15", "224.0.0.0/4", "240.0.0.0/4", "255.255.255.255/32",
		"::/128", "::1/128", "fc00::/7", "fe80::/10", "ff00::/8", "64:ff9b::/96",
	} {
		out = append(out, netip.MustParsePrefix(s))
	}
	return out
})

// Internal reports whether a is an address BlockInternal refuses: the
// IPv4-mapped IPv6 form of one counts as the IPv4 address.
func Internal(a netip.Addr) bool {
	a = a.Unmap()
	for _, p := range internalPrefixes() {
		if p.Contains(a) {
			return true
		}
	}
	return false
}

// CheckAddrs applies BlockInternal to every answer of a lookup: one
// internal answer refuses the name (a DNS answer mixing a public and a
// private address is a rebinding attempt).
func (p *Policy) CheckAddrs(addrs []netip.Addr) Verdict {
	if len(addrs) == 0 {
		return Verdict{Reason: "no address"}
	}
	if p.BlockInternal {
		for _, a := range addrs {
			if Internal(a) {
				return Verdict{Reason: "resolves to internal address " + a.String()}
			}
		}
	}
	return Verdict{Allowed: true}
}
