package ward

import (
	"fmt"
	"net/netip"
	"os"

	"golang.org/x/sys/unix"

	"github.com/wardbox/ward/netns"
)

// startProxy makes the host-side proxy for a sandbox in proxy mode and the
// control socket its init relays connections over (ours is served here,
// theirs goes to the init).
func startProxy(cfg Config, log *logger) (*netns.Proxy, *os.File, *os.File, error) {
	hosts := map[string]netip.Addr{}
	for _, h := range cfg.AddHosts {
		name, ip, _ := ParseAddHost(h) // validated already
		hosts[name] = ip
	}
	p := &netns.Proxy{MaxBytes: cfg.NetworkMaxBytes, Policy: &netns.Policy{
		BlockInternal: !cfg.AllowInternal,
		AllowPorts:    cfg.AllowPorts,
		DenyPatterns:  cfg.DenyNetwork,
		Hosts:         hosts,
	}}
	for _, a := range cfg.AllowNetwork {
		if isPattern(a) {
			p.Policy.AllowPatterns = append(p.Policy.AllowPatterns, a)
		} else {
			p.Policy.AllowDomains = append(p.Policy.AllowDomains, a)
		}
	}
	if cfg.LogNetwork && log.w != nil {
		w := log.w
		p.OnEvent = func(e netns.Event) {
			if e.Action == "allowed" {
				fmt.Fprintf(w, "[SANDBOX] Network attempt allowed: %s:%d\n", e.Host, e.Port)
			} else {
				fmt.Fprintf(w, "[SANDBOX] Network attempt blocked: %s:%d (%s)\n", e.Host, e.Port, e.Reason)
			}
		}
	}
	fds, err := unix.Socketpair(unix.AF_UNIX, unix.SOCK_SEQPACKET|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		return nil, nil, nil, fmt.Errorf("proxy control socket: %w", err)
	}
	ours, theirs := os.NewFile(uintptr(fds[0]), "ward-proxy"), os.NewFile(uintptr(fds[1]), "ward-proxy-init")
	go netns.ServeRelay(ours, p)
	return p, ours, theirs, nil
}

func isPattern(s string) bool {
	for _, c := range s {
		if c == '*' || c == '/' {
			return true
		}
	}
	return false
}

// DefaultDirectPorts are the ports a program that ignores the proxy
// variables may reach an allowed name on when no --allow-port is given.
var DefaultDirectPorts = []int{80, 443}

// extraHosts are /etc/hosts lines for --add-host: in proxy mode a name
// gets the stub resolver's address for it (connections to which ward's
// proxy serves), elsewhere the address given.
func extraHosts(adds []string, proxy bool) []string {
	var out []string
	for i, h := range adds {
		if name, ip, err := ParseAddHost(h); err == nil {
			if proxy {
				ip = netns.FakeAddr(i)
			}
			out = append(out, ip.String()+"\t"+name)
		}
	}
	return out
}
