package ward

// Fuzz targets for the root package's parsers (issue 13, "Beyond the
// review"); sizes, durations and TOML have theirs in units_test.go and
// configfile_test.go. `make fuzz` runs each for FUZZTIME; their seeds (and
// any crasher under testdata/fuzz) run as ordinary tests in `make unit`.

import (
	"strings"
	"testing"
	"time"
)

// FuzzSizeRoundTrip: a size ParseSize accepts prints (FormatSize) as a
// string it reads back to the same number.
func FuzzSizeRoundTrip(f *testing.F) {
	for _, s := range []string{"10M", "1.5G", "64MiB", "0", "1023", "8T", "0.001K", "9e15"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		n, err := ParseSize(s)
		if err != nil {
			return
		}
		if back, err := ParseSize(FormatSize(n)); err != nil || back != n {
			t.Fatalf("ParseSize(%q) = %d, printed %q, read back %d, %v", s, n, FormatSize(n), back, err)
		}
	})
}

// FuzzDurationRoundTrip: the same for durations (FormatDuration).
func FuzzDurationRoundTrip(f *testing.F) {
	for _, s := range []string{"100ms", "5s", "2m", "1m30s", "5", "0.5", "1us", "1.5h", "0.0000001"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		d, err := ParseDuration(s)
		if err != nil {
			return
		}
		if back, err := ParseDuration(FormatDuration(d)); err != nil || back != d {
			t.Fatalf("ParseDuration(%q) = %v, printed %q, read back %v, %v", s, d, FormatDuration(d), back, err)
		}
	})
}

// FuzzParseMount: a mount spec that parses has both paths, no colon in
// either, and reads back the same from its parts.
func FuzzParseMount(f *testing.F) {
	for _, s := range []string{"/src:/dst", "/src:/dst:rw", "/src:/dst:ro", "a:b:c", ":/x", "/x:", "/a:/b:rw:x", "::", "/a\x00:/b"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		m, err := ParseMount(s)
		if err != nil {
			return
		}
		if m.Source == "" || m.Target == "" || strings.Contains(m.Source, ":") || strings.Contains(m.Target, ":") {
			t.Fatalf("ParseMount(%q) = %+v", s, m)
		}
		mode := map[bool]string{true: "rw", false: "ro"}[m.Writable]
		if back, err := ParseMount(m.Source + ":" + m.Target + ":" + mode); err != nil || back != m {
			t.Fatalf("ParseMount(%q) = %+v, read back %+v, %v", s, m, back, err)
		}
	})
}

// FuzzParseAddHost: NAME:IP that parses has a lower-case name without
// blanks, control characters, slashes or "#", and reads back the same.
func FuzzParseAddHost(f *testing.F) {
	for _, s := range []string{"web.test:10.0.0.1", "WEB.test:::1", "x:[fe80::1]", "a b:1.2.3.4", ":1.2.3.4", "x:1.2.3", "x:::ffff:1.2.3.4"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		name, ip, err := ParseAddHost(s)
		if err != nil {
			return
		}
		// The name becomes a line of the sandbox's /etc/hosts.
		if name == "" || name != strings.ToLower(name) || strings.ContainsFunc(name, func(r rune) bool {
			return r <= ' ' || r == 0x7f || strings.ContainsRune("/:#", r)
		}) {
			t.Fatalf("ParseAddHost(%q) = %q, %v", s, name, ip)
		}
		if n2, ip2, err := ParseAddHost(name + ":" + ip.String()); err != nil || n2 != name || ip2 != ip {
			t.Fatalf("ParseAddHost(%q) = %q %v, read back %q %v, %v", s, name, ip, n2, ip2, err)
		}
	})
}

// FuzzSandboxEnv: the sandbox's environment (the caller's allow-listed
// variables, ward's, then --env entries: K=V sets, K passes the caller's,
// a pattern each caller variable it matches)
// has each key once, never an empty key, and the last --env K=V wins.
func FuzzSandboxEnv(f *testing.F) {
	f.Add("A=1\nB\nPATH=/x", "B=2\nPATH=/usr/bin\nWARD_X=1\nSECRET=s", true)
	f.Add("*", "=\nA=1\n=x", false)
	f.Add("A_*\nHOME\nA_1=x", "A_1=0\nA_2=2\nHOME=/root\nA_2=3", false)
	f.Add("=x\nHOME=/h\nA=1\nA=2", "A=0", false)
	f.Add("", "", true)
	f.Fuzz(func(t *testing.T, extra, caller string, proxy bool) {
		ex, ca := strings.Split(extra, "\n"), strings.Split(caller, "\n")
		for _, e := range ex { // what Config.Validate refuses
			if checkEnvEntry(e) != nil {
				return
			}
		}
		env := sandboxEnv(ex, ca, "/home/sandbox", proxy)
		seen := map[string]string{}
		for _, kv := range env {
			k, v, ok := strings.Cut(kv, "=")
			if !ok || k == "" {
				t.Fatalf("entry %q in %q", kv, env)
			}
			if _, dup := seen[k]; dup {
				t.Fatalf("key %q twice in %q", k, env)
			}
			seen[k] = v
		}
		if k, v, ok := strings.Cut(ex[len(ex)-1], "="); ok {
			if got, ok := seen[k]; !ok || got != v {
				t.Fatalf("the last --env %q: the sandbox has %q=%q", ex[len(ex)-1], k, got)
			}
		}
	})
}

// FuzzConfigFileApply: whatever a TOML file says, parsing it, applying
// its sandbox table and each profile to a config and validating that
// config fails cleanly or not at all.
func FuzzConfigFileApply(f *testing.F) {
	f.Add([]byte(simpleToml))
	f.Add([]byte("[sandbox]\ntime_limit = \"1s\"\n[sandbox.network]\nallow_domains = [\"a.test\"]\nallow_patterns = [\"http://a.test/p/*\"]\n[sandbox.profiles.x]\nmemory_limit = \"1G\"\n"))
	f.Add([]byte("[sandbox.filesystem]\ntmp_size = \"2G\"\nallow_read = [\"../x\"]\n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		file, err := ParseFile("/p/ward.toml", data)
		if err != nil {
			return
		}
		c := Config{TimeLimit: time.Second}
		file.Sandbox.Apply(&c, map[string]string{})
		for _, l := range file.Profiles {
			l.Apply(&c, map[string]string{})
		}
		_ = c.withDefaults().Validate()
	})
}
