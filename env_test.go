package ward

import (
	"errors"
	"slices"
	"strings"
	"testing"

	"github.com/wardbox/ward/netns"
)

func TestEnvEntries(t *testing.T) {
	for _, tc := range []struct {
		entry   string
		ok      bool
		pattern bool
	}{
		{"K=V", true, false},
		{"K=", true, false},
		{"K=a=b", true, false},
		{"weird-name=1", true, false}, // set as given, as execve allows
		{"PATH", true, false},
		{"_x9", true, false},
		{"APCORE_*", true, true},
		{"*", true, true},
		{"A?C", true, true},
		{"LC_[A-Z]*", true, true},
		{"X[^0-9]", true, true},
		{"[ab]_*", true, true},
		{"", false, false},
		{"=V", false, false},
		{"9LIVES", false, false},
		{"A B", false, false},
		{"A-B", false, false},
		{"A.B", false, false},
		{"APCORE_*,PATH", false, false},
		{"A[", false, false},
		{"A[]", false, false},
		{"A[-z]", false, false},
		{"A]", false, false},
		{`A\*`, false, false},
		{"A\x00B", false, false},
		{"K=\x00", false, false},
		{"APCORE_ü", false, false},
	} {
		err := checkEnvEntry(tc.entry)
		if (err == nil) != tc.ok || isEnvPattern(tc.entry) != tc.pattern {
			t.Errorf("%q: error %v, pattern %v; want ok=%v pattern=%v", tc.entry, err, isEnvPattern(tc.entry), tc.ok, tc.pattern)
		}
	}
	for _, e := range []string{"K=V", "=V"} {
		if checkEnvPass(e) == nil {
			t.Errorf("env_pass %q accepted: it passes names, it sets nothing", e)
		}
	}
}

func TestValidateNamesTheBadEnvValue(t *testing.T) {
	for _, tc := range []struct {
		cfg       Config
		key, want string
	}{
		{Config{Args: []string{"true"}, Env: []string{"A=1", "A B"}}, "env", "A B"},
		{Config{Args: []string{"true"}, EnvPass: []string{"A*", "A["}}, "env_pass", "A["},
	} {
		var ce *ConfigError
		if err := tc.cfg.Validate(); !errors.As(err, &ce) || ce.Key != tc.key || ce.Value != tc.want {
			t.Errorf("Validate(%+v) = %v, want a ConfigError for --%s=%s", tc.cfg, err, tc.key, tc.want)
		}
	}
}

// TestSandboxEnvPatterns: a pattern passes exactly the caller's variables
// whose names match, never replaces what ward sets (HOME, TMPDIR, USER, the
// proxy's), and nothing else of the caller's enters.
func TestSandboxEnvPatterns(t *testing.T) {
	caller := []string{
		"PATH=/usr/bin", "LANG=C.UTF-8", "HOME=/root", "USER=root", "TMPDIR=/var/tmp", "HTTP_PROXY=http://corp:8080",
		"APCORE_A=1", "APCORE_B=2", "APCOREX=no", "XAPCORE_C=no", "SECRET=s3cr3t", "LC_TIME=C", "LC_ALL=C", "lc_x=no",
	}
	got := sandboxEnv([]string{"APCORE_*", "LC_[A-Z]*", "*E", "H*", "*PROXY"}, caller, "/home/sandbox", true)
	want := map[string]string{"PATH": "/usr/bin", "LANG": "C.UTF-8", "LC_ALL": "C", "HOME": "/home/sandbox", "TMPDIR": "/tmp", "USER": "sandbox",
		"APCORE_A": "1", "APCORE_B": "2", "LC_TIME": "C"}
	for _, kv := range netns.ProxyEnv() { // ward's, not the caller's HTTP_PROXY
		k, v, _ := strings.Cut(kv, "=")
		want[k] = v
	}
	seen := map[string]bool{}
	for _, kv := range got {
		k, v, _ := strings.Cut(kv, "=")
		seen[k] = true
		if w, ok := want[k]; ok && w != v {
			t.Errorf("%s=%q, want %q", k, v, w)
		}
		if _, ok := want[k]; !ok {
			t.Errorf("%s entered the sandbox: %q", k, got)
		}
	}
	for k := range want {
		if !seen[k] {
			t.Errorf("%s missing: %q", k, got)
		}
	}
	// Named, the caller's HOME is passed (as before patterns).
	if env := sandboxEnv([]string{"HOME"}, caller, "/home/sandbox", false); !slices.Contains(env, "HOME=/root") {
		t.Errorf("--env HOME did not pass the caller's: %q", env)
	}
	// Config.EnvPass comes before Config.Env: --env K=V wins over a pattern.
	if env := sandboxEnv([]string{"APCORE_*", "APCORE_A=flag"}, caller, "/home/sandbox", false); !slices.Contains(env, "APCORE_A=flag") {
		t.Errorf("K=V after a pattern did not win: %q", env)
	}
}
