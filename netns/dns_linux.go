package netns

import (
	"fmt"
	"net"
	"net/netip"
	"strconv"
	"strings"
	"sync"

	"github.com/vishvananda/netlink"
	"golang.org/x/net/dns/dnsmessage"
	"golang.org/x/sys/unix"
)

// FakeRange is where the stub resolver's answers come from: a range that
// is local (routed to lo) inside the sandbox and means nothing outside.
var FakeRange = netip.MustParsePrefix("198.18.0.0/15")

// KindDirect marks a relayed connection that a program made straight to
// a name the stub resolver answered: the message carries "name:port".
const KindDirect = 'D'

// Direct serves programs that ignore the proxy variables (node's fetch,
// Java, a raw socket): a stub DNS server on 127.0.0.1:53 answers every
// name with an address of FakeRange (one per name), which is local inside;
// connections to it on the allowed ports are relayed to ward's proxy with
// the name and port, and the proxy decides as for any other connection.
// Names are never resolved inside, and nothing is routed anywhere else.
type Direct struct {
	ctl   int
	ports []int
	mu    sync.Mutex
	next  netip.Addr
	names map[string]netip.Addr
}

// FakeAddr is the address the stub gives the i-th name it is told of in
// advance (--add-host names, which /etc/hosts lists with it).
func FakeAddr(i int) netip.Addr {
	a := FakeRange.Addr().Next()
	for ; i > 0; i-- {
		a = a.Next()
	}
	return a
}

// StartDirect routes FakeRange to lo, and serves DNS on 127.0.0.1:53
// (UDP). ports are those a direct connection may use; names get
// FakeAddr(0), FakeAddr(1), ... in order. Runs in the init.
func StartDirect(ctl int, ports []int, names []string) error {
	lo, err := netlink.LinkByName("lo")
	if err != nil {
		return fmt.Errorf("find lo: %w", err)
	}
	p := FakeRange
	route := &netlink.Route{LinkIndex: lo.Attrs().Index, Dst: &net.IPNet{IP: p.Addr().AsSlice(), Mask: net.CIDRMask(p.Bits(), 32)},
		Type: unix.RTN_LOCAL, Table: unix.RT_TABLE_LOCAL, Scope: netlink.SCOPE_HOST}
	if err := netlink.RouteAdd(route); err != nil {
		return fmt.Errorf("route %s to lo: %w", p, err)
	}
	d := &Direct{ctl: ctl, ports: ports, next: p.Addr().Next(), names: map[string]netip.Addr{}}
	for _, n := range names {
		if _, err := d.addrFor(strings.ToLower(n)); err != nil {
			return err
		}
	}
	pc, err := net.ListenPacket("udp", "127.0.0.1:53")
	if err != nil {
		return fmt.Errorf("DNS stub: %w", err)
	}
	go d.serveDNS(pc)
	return nil
}

func (d *Direct) serveDNS(pc net.PacketConn) {
	buf := make([]byte, 1500)
	for {
		n, from, err := pc.ReadFrom(buf)
		if err != nil {
			return
		}
		if resp, err := d.answer(buf[:n]); err == nil {
			_, _ = pc.WriteTo(resp, from)
		}
	}
}

// answer builds the reply to one query: an A record from FakeRange for
// every name, no AAAA (so clients use IPv4), NOTIMP for anything else.
func (d *Direct) answer(query []byte) ([]byte, error) {
	var p dnsmessage.Parser
	h, err := p.Start(query)
	if err != nil {
		return nil, err
	}
	q, err := p.Question()
	if err != nil {
		return nil, err
	}
	b := dnsmessage.NewBuilder(nil, dnsmessage.Header{ID: h.ID, Response: true, Authoritative: true, RecursionDesired: h.RecursionDesired, RecursionAvailable: true})
	b.EnableCompression()
	if h.OpCode != 0 || q.Class != dnsmessage.ClassINET {
		b = dnsmessage.NewBuilder(nil, dnsmessage.Header{ID: h.ID, Response: true, RCode: dnsmessage.RCodeNotImplemented})
		_ = b.StartQuestions()
		_ = b.Question(q)
		return b.Finish()
	}
	if err := b.StartQuestions(); err != nil {
		return nil, err
	}
	if err := b.Question(q); err != nil {
		return nil, err
	}
	if q.Type == dnsmessage.TypeA {
		addr, err := d.addrFor(strings.TrimSuffix(strings.ToLower(q.Name.String()), "."))
		if err != nil {
			return nil, err
		}
		if err := b.StartAnswers(); err != nil {
			return nil, err
		}
		if err := b.AResource(dnsmessage.ResourceHeader{Name: q.Name, Class: dnsmessage.ClassINET, TTL: 60}, dnsmessage.AResource{A: addr.As4()}); err != nil {
			return nil, err
		}
	}
	return b.Finish()
}

// addrFor gives name its address (the same each time) and starts
// listening on it for the allowed ports.
func (d *Direct) addrFor(name string) (netip.Addr, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if a, ok := d.names[name]; ok {
		return a, nil
	}
	a := d.next
	if !FakeRange.Contains(a) {
		return netip.Addr{}, fmt.Errorf("the fake address range is used up")
	}
	d.next = a.Next()
	d.names[name] = a
	for _, port := range d.ports {
		ln, err := net.Listen("tcp", netip.AddrPortFrom(a, uint16(port)).String())
		if err != nil {
			continue
		}
		go d.accept(ln, name+":"+strconv.Itoa(port))
	}
	return a, nil
}

func (d *Direct) accept(ln net.Listener, dest string) {
	for {
		c, err := ln.Accept()
		if err != nil {
			return
		}
		go relayMsg(c, append([]byte{KindDirect}, dest...), d.ctl)
	}
}
