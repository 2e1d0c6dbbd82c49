package netns

import (
	"container/list"
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
//
// The init runs outside the sandbox's cgroup, so what the program can make
// it hold is bounded: at most maxNames names have an address and
// listeners at once (MaxDirectListeners in all), besides the names told
// in advance. A new name past that takes the place of the name asked for
// least recently, whose listeners close; asked again, it gets a new
// address.
type Direct struct {
	ctl      int
	ports    []int
	maxNames int
	// listen opens a name's listener (net.Listen; tests replace it).
	listen func(network, addr string) (net.Listener, error)

	mu    sync.Mutex
	next  netip.Addr
	names map[string]*fakeName
	addrs map[netip.Addr]*fakeName
	lru   list.List // of the names not told in advance, most recent first
}

// fakeName is one name the stub answered, with its address and listeners.
type fakeName struct {
	name   string
	addr   netip.Addr
	lns    []net.Listener
	pinned bool          // told in advance (--add-host): never replaced
	elem   *list.Element // in lru, unless pinned
}

// MaxDirectListeners bounds the listeners the stub's names hold at once
// (besides the names told in advance): maxNames is this divided by the
// number of ports, and at least 1.
const MaxDirectListeners = 512

// FakeAddr is the address the stub gives the i-th name it is told of in
// advance (--add-host names, which /etc/hosts lists with it).
func FakeAddr(i int) netip.Addr {
	a := FakeRange.Addr().Next()
	for ; i > 0; i-- {
		a = a.Next()
	}
	return a
}

func newDirect(ctl int, ports []int, listen func(network, addr string) (net.Listener, error)) *Direct {
	maxNames := MaxDirectListeners
	if len(ports) > 0 {
		maxNames = max(1, MaxDirectListeners/len(ports))
	}
	return &Direct{ctl: ctl, ports: ports, maxNames: maxNames, listen: listen,
		next: FakeRange.Addr().Next(), names: map[string]*fakeName{}, addrs: map[netip.Addr]*fakeName{}}
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
	d := newDirect(ctl, ports, net.Listen)
	for _, n := range names {
		if err := d.pin(strings.ToLower(n)); err != nil {
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

// pin gives a name told in advance its address, for good.
func (d *Direct) pin(name string) error {
	d.mu.Lock()
	defer d.mu.Unlock()
	if _, ok := d.names[name]; ok {
		return nil
	}
	_, err := d.add(name, true)
	return err
}

// addrFor gives name its address (the same while it is among the names
// kept) and starts listening on it for the allowed ports.
func (d *Direct) addrFor(name string) (netip.Addr, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if n, ok := d.names[name]; ok {
		if !n.pinned {
			d.lru.MoveToFront(n.elem)
		}
		return n.addr, nil
	}
	for d.lru.Len() >= d.maxNames {
		d.drop(d.lru.Back().Value.(*fakeName))
	}
	n, err := d.add(name, false)
	if err != nil {
		return netip.Addr{}, err
	}
	return n.addr, nil
}

// add gives name the next free address of FakeRange (wrapping around past
// its end) and its listeners. d.mu is held.
func (d *Direct) add(name string, pinned bool) (*fakeName, error) {
	a := d.next
	for tries := 0; ; tries++ {
		if tries > len(d.addrs)+1 {
			return nil, fmt.Errorf("the fake address range is used up")
		}
		if !FakeRange.Contains(a) {
			a = FakeRange.Addr().Next()
		}
		if _, used := d.addrs[a]; !used {
			break
		}
		a = a.Next()
	}
	d.next = a.Next()
	n := &fakeName{name: name, addr: a, pinned: pinned}
	d.names[name], d.addrs[a] = n, n
	if !pinned {
		n.elem = d.lru.PushFront(n)
	}
	for _, port := range d.ports {
		ln, err := d.listen("tcp", netip.AddrPortFrom(a, uint16(port)).String())
		if err != nil {
			continue
		}
		n.lns = append(n.lns, ln)
		go d.accept(ln, name+":"+strconv.Itoa(port))
	}
	return n, nil
}

// drop forgets n and closes its listeners (connections made through them
// go on). d.mu is held.
func (d *Direct) drop(n *fakeName) {
	for _, ln := range n.lns {
		_ = ln.Close()
	}
	d.lru.Remove(n.elem)
	delete(d.names, n.name)
	delete(d.addrs, n.addr)
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
