package netns

import (
	"errors"
	"fmt"
	"net"
	"net/netip"
	"sync"
	"testing"

	"golang.org/x/net/dns/dnsmessage"
)

func query(t testing.TB, name string, typ dnsmessage.Type) []byte {
	b := dnsmessage.NewBuilder(nil, dnsmessage.Header{ID: 7, RecursionDesired: true})
	_ = b.StartQuestions()
	_ = b.Question(dnsmessage.Question{Name: dnsmessage.MustNewName(name), Type: typ, Class: dnsmessage.ClassINET})
	q, err := b.Finish()
	if err != nil {
		t.Fatal(err)
	}
	return q
}

func TestStubAnswersEveryNameFromTheFakeRangeStably(t *testing.T) {
	d := newDirect(0, []int{80}, noListen)
	ans := func(name string, typ dnsmessage.Type) dnsmessage.Message {
		resp, err := d.answer(query(t, name, typ))
		if err != nil {
			t.Fatal(err)
		}
		var m dnsmessage.Message
		if err := m.Unpack(resp); err != nil {
			t.Fatal(err)
		}
		return m
	}
	a1, a2, again := ans("api.github.com.", dnsmessage.TypeA), ans("evil.test.", dnsmessage.TypeA), ans("API.github.com.", dnsmessage.TypeA)
	if len(a1.Answers) != 1 || a1.Header.ID != 7 || !a1.Header.Response {
		t.Fatalf("answer = %+v", a1)
	}
	ip1 := a1.Answers[0].Body.(*dnsmessage.AResource).A
	ip2 := a2.Answers[0].Body.(*dnsmessage.AResource).A
	ip3 := again.Answers[0].Body.(*dnsmessage.AResource).A
	if ip1 == ip2 || ip1 != ip3 || ip1[0] != 198 || ip1[1] != 18 {
		t.Errorf("addresses %v %v %v: want one per name, stable, in 198.18.0.0/15", ip1, ip2, ip3)
	}
	if aaaa := ans("api.github.com.", dnsmessage.TypeAAAA); len(aaaa.Answers) != 0 {
		t.Errorf("AAAA answered: %+v (clients must use the IPv4 fake address)", aaaa.Answers)
	}
}

func FuzzStubDNSQuery(f *testing.F) {
	f.Add(query(f, "a.test.", dnsmessage.TypeA))
	f.Add([]byte{0, 1, 2})
	f.Fuzz(func(t *testing.T, q []byte) {
		d := newDirect(0, []int{80, 443}, noListen)
		for i := 0; i < 3; i++ {
			resp, err := d.answer(q)
			if err != nil {
				return
			}
			var m dnsmessage.Message
			if err := m.Unpack(resp); err != nil {
				t.Fatalf("the stub's answer to %x does not parse: %v", q, err)
			}
		}
		if len(d.names) > d.maxNames || d.lru.Len() != len(d.names) {
			t.Fatalf("%d names kept, max %d", len(d.names), d.maxNames)
		}
	})
}

func noListen(string, string) (net.Listener, error) {
	return nil, errors.New("no listening in a unit test")
}

// fakeListeners counts the listeners the stub holds open.
type fakeListeners struct {
	mu   sync.Mutex
	open map[string]bool
}

func (f *fakeListeners) listen(_, addr string) (net.Listener, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.open[addr] {
		return nil, fmt.Errorf("%s: address in use", addr)
	}
	f.open[addr] = true
	return &fakeListener{f: f, addr: addr, done: make(chan struct{})}, nil
}

func (f *fakeListeners) count() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return len(f.open)
}

type fakeListener struct {
	f    *fakeListeners
	addr string
	once sync.Once
	done chan struct{}
}

func (l *fakeListener) Accept() (net.Conn, error) { <-l.done; return nil, net.ErrClosed }
func (l *fakeListener) Addr() net.Addr            { return &net.TCPAddr{} }
func (l *fakeListener) Close() error {
	l.once.Do(func() {
		l.f.mu.Lock()
		delete(l.f.open, l.addr)
		l.f.mu.Unlock()
		close(l.done)
	})
	return nil
}

// TestStubBoundsNamesAndListeners is issue 13's finding 5 at the unit
// level: 6,000 unique names made the init hold 12,000 listeners. Now the
// names with listeners are bounded, the names told in advance stay, a
// name kept keeps its address, and one asked again after being replaced
// gets a working address again.
func TestStubBoundsNamesAndListeners(t *testing.T) {
	fl := &fakeListeners{open: map[string]bool{}}
	ports := []int{80, 443}
	d := newDirect(0, ports, fl.listen)
	if err := d.pin("web.test"); err != nil {
		t.Fatal(err)
	}
	if a, _ := d.addrFor("web.test"); a != FakeAddr(0) {
		t.Fatalf("the name told in advance has %v, want %v", a, FakeAddr(0))
	}
	first, _ := d.addrFor("first.test")
	for i := 0; i < 3000; i++ {
		if _, err := d.addrFor(fmt.Sprintf("n%d.flood.test", i)); err != nil {
			t.Fatal(err)
		}
		if i%100 == 0 { // kept in use: never the least recent
			if a, _ := d.addrFor("web.test"); a != FakeAddr(0) {
				t.Fatalf("web.test moved to %v", a)
			}
		}
	}
	want := MaxDirectListeners + len(ports) // the flood's names and web.test's
	if n := fl.count(); n > want {
		t.Errorf("%d listeners open after 3,000 names, want at most %d", n, want)
	}
	if len(d.names) > d.maxNames+1 || len(d.addrs) != len(d.names) {
		t.Errorf("%d names, %d addresses kept; max %d", len(d.names), len(d.addrs), d.maxNames+1)
	}
	again, err := d.addrFor("first.test")
	if err != nil || !FakeRange.Contains(again) || again == first && fl.count() == 0 {
		t.Errorf("first.test again: %v %v", again, err)
	}
	for _, p := range ports {
		if !fl.open[netip.AddrPortFrom(again, uint16(p)).String()] {
			t.Errorf("first.test's new address has no listener on %d", p)
		}
	}
	if !fl.open[netip.AddrPortFrom(FakeAddr(0), 80).String()] {
		t.Errorf("web.test lost its listener")
	}
}

// TestStubAddressesWrapAround: past the end of FakeRange, addresses of
// names no longer kept are given again, never one in use.
func TestStubAddressesWrapAround(t *testing.T) {
	fl := &fakeListeners{open: map[string]bool{}}
	d := newDirect(0, []int{80}, fl.listen)
	d.maxNames = 4
	last := FakeRange.Addr()
	for i := 0; i < 1<<(32-FakeRange.Bits()); i++ {
		last = last.Next()
	}
	d.next = last.Prev().Prev()
	for i := 0; i < 12; i++ {
		name := fmt.Sprintf("w%d.test", i)
		a, err := d.addrFor(name)
		if err != nil {
			t.Fatal(err)
		}
		if !FakeRange.Contains(a) || a == FakeRange.Addr() {
			t.Fatalf("%s got %v", name, a)
		}
		for _, n := range d.names {
			if n.name != name && n.addr == a {
				t.Fatalf("%s got %v, in use by %s", name, a, n.name)
			}
		}
	}
	if fl.count() != 4 {
		t.Errorf("%d listeners, want 4", fl.count())
	}
}
