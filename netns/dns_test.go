package netns

import (
	"net/netip"
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
	d := &Direct{next: FakeRange.Addr().Next(), names: map[string]netip.Addr{}}
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
		d := &Direct{next: FakeRange.Addr().Next(), names: map[string]netip.Addr{}}
		_, _ = d.answer(q)
	})
}
