package ward

import "testing"

// TestParseAddHostRefusesWhatBreaksEtcHosts: found by FuzzParseAddHost, a
// name with a newline added a line to the sandbox's /etc/hosts, and "#"
// made the rest of it a comment.
func TestParseAddHostRefusesWhatBreaksEtcHosts(t *testing.T) {
	for _, s := range []string{"#:0.0.0.0", "a\nb:1.2.3.4", "a\x00:1.2.3.4", "a b:1.2.3.4", "a/b:1.2.3.4", "a\x7f:1.2.3.4"} {
		if name, _, err := ParseAddHost(s); err == nil {
			t.Errorf("ParseAddHost(%q) = %q, want refused", s, name)
		}
	}
	if name, ip, err := ParseAddHost("Web.Test:10.0.0.1"); err != nil || name != "web.test" || ip.String() != "10.0.0.1" {
		t.Errorf("ParseAddHost(Web.Test:10.0.0.1) = %q %v %v", name, ip, err)
	}
}
