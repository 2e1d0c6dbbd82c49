package ward

import (
	"encoding/json"
	"errors"
	"reflect"
	"strings"
	"testing"
	"time"
)

// TestSettingsTable: every setting has one name, flag and config file key
// of its own, and every default parses as its flag would.
func TestSettingsTable(t *testing.T) {
	names, flags, keys := map[string]bool{}, map[string]bool{}, map[string]bool{}
	for _, s := range settings() {
		n := s.nameOf()
		if names[n] {
			t.Errorf("two settings named %q", n)
		}
		names[n] = true
		if s.flag != "" && flags[s.flag] {
			t.Errorf("two settings with flag --%s", s.flag)
		}
		flags[s.flag] = true
		if k := s.section + "." + s.key; s.key != "" && keys[k] {
			t.Errorf("two settings with key %s", k)
		}
		keys[s.section+"."+s.key] = true
		if s.flag == "" && s.key == "" {
			t.Errorf("%s: neither a flag nor a key", n)
		}
		if s.flag != "" && s.help == "" {
			t.Errorf("--%s has no help", s.flag)
		}
		switch s.section {
		case "", "network", "filesystem":
		default:
			t.Errorf("%s: unknown section %q", n, s.section)
		}
	}
	DefaultLayer() // panics on a default that does not parse
}

// TestDefaultLayerIsWithDefaults: the built-in default the CLI applies
// (the defaults --help shows) and the one Run applies to a library
// caller's zero fields are the same config.
func TestDefaultLayerIsWithDefaults(t *testing.T) {
	var c Config
	DefaultLayer().Apply(&c, nil)
	if got, want := c.withDefaults(), (Config{}).withDefaults(); !reflect.DeepEqual(got, want) {
		t.Errorf("the default layer then withDefaults:\n%+v\nwithDefaults alone:\n%+v", got, want)
	}
}

// TestOneRuleOneMessage: a bad value is refused with the same words from a
// flag, a config file and Validate.
func TestOneRuleOneMessage(t *testing.T) {
	for _, tc := range []struct {
		flag, value, toml string
		cfg               Config
		reason            string
	}{
		{"cpu-limit", "200000", "[sandbox]\ncpu_limit = 200000\n", Config{CPULimit: 200000}, "want a percentage of one CPU from 1 to 102400"},
		{"processes", "-1", "[sandbox]\nprocesses = -1\n", Config{Processes: -1}, "want a number from 1 to 4194304"},
		{"file-descriptors", "3", "[sandbox]\nfile_descriptors = 3\n", Config{FileDescriptors: 3}, "want a number from 4 to 1048576 (leave it out for the default: soft 1024, hard 524288)"},
		{"allow-port", "70000", "[sandbox.network]\nallow_ports = [70000]\n", Config{AllowPorts: []int{70000}}, "want a port from 1 to 65535"},
		{"deny-pattern", "etc", "[sandbox.filesystem]\ndeny_patterns = [\"etc\"]\n", Config{DenyPatterns: []string{"etc"}}, "want an absolute glob such as /etc/*"},
		{"deny-pattern", "/*//x", "[sandbox.filesystem]\ndeny_patterns = [\"/*//x\"]\n", Config{DenyPatterns: []string{"/*//x"}}, "want an absolute glob such as /etc/*, without empty components (//) and shorter than 4096 bytes"},
		{"limits", "fast", "[sandbox]\nlimits = \"fast\"\n", Config{Limits: "fast"}, "want strict or best-effort"},
		{"tmp-files", "0", "[sandbox.filesystem]\ntmp_files = 0\n", Config{Tmp: Scratch{Files: -2}}, "want a number from 1 to 16777216"},
		{"memory-limit", "100", "[sandbox]\nmemory_limit = \"100\"\n", Config{MemoryLimit: 100}, "want at least 1M"},
	} {
		t.Run(tc.flag, func(t *testing.T) {
			var l Layer
			var ce *ConfigError
			if err := l.SetFlag(tc.flag, tc.value); !errors.As(err, &ce) || ce.Reason != tc.reason || !strings.HasPrefix(err.Error(), "--"+tc.flag+"="+tc.value+": ") {
				t.Errorf("--%s=%s: %v", tc.flag, tc.value, err)
			}
			if _, err := ParseFile("f.toml", []byte(tc.toml)); err == nil || !strings.HasSuffix(err.Error(), ": "+tc.reason) || !strings.HasPrefix(err.Error(), "f.toml:2:1: ") {
				t.Errorf("%q: %v", tc.toml, err)
			}
			if err := tc.cfg.ValidateSettings(); !errors.As(err, &ce) || ce.Reason != tc.reason || ce.Key != tc.flag {
				t.Errorf("ValidateSettings: %v", err)
			}
		})
	}
}

// TestFlagLayerHoldsOnlyWhatWasGiven: a flag's layer sets what was given
// and nothing else; a list flag adds, a comma list splits, block-internal
// is AllowInternal's opposite, and --explain names the flag.
func TestFlagLayerHoldsOnlyWhatWasGiven(t *testing.T) {
	l := Layer{Source: SourceFlags}
	for _, f := range [][2]string{{"allow-read", "/a"}, {"allow-read", "/b"}, {"allow-port", "80,443"}, {"block-internal", "false"}, {"time-limit", "2s"}} {
		if err := l.SetFlag(f[0], f[1]); err != nil {
			t.Fatal(err)
		}
	}
	c := Config{MemoryLimit: 64 << 20, AllowWrite: []string{"/w"}}
	explain := map[string]string{}
	l.Apply(&c, explain)
	want := Config{MemoryLimit: 64 << 20, AllowWrite: []string{"/w"}, AllowRead: []string{"/a", "/b"}, AllowPorts: []int{80, 443}, AllowInternal: true, TimeLimit: 2 * time.Second}
	if !reflect.DeepEqual(c, want) {
		t.Errorf("applied:\n%+v\nwant\n%+v", c, want)
	}
	if len(explain) != 4 || explain["allow_read"] != "flag --allow-read" || explain["block_internal"] != "flag --block-internal" {
		t.Errorf("explain = %v", explain)
	}
}

// TestLayerJSON: a layer of every setting survives its JSON (the wire
// `ward start` sends the supervisor), and an unknown setting is refused.
func TestLayerJSON(t *testing.T) {
	c := Config{TimeLimit: 1500 * time.Millisecond, MemoryLimit: 64 << 20, AllowNetwork: []string{"a.test"}, AllowPorts: []int{443},
		Mounts: []Mount{{Source: "/s", Target: "/t", Writable: true}}, Tmp: Scratch{Size: 1 << 20, Files: 9}, AllowInternal: true,
		Workdir: "/tmp", TTY: true, Args: []string{"not", "a", "setting"}}
	b, err := json.Marshal(LayerOf("test", c))
	if err != nil {
		t.Fatal(err)
	}
	var back Layer
	if err := json.Unmarshal(b, &back); err != nil {
		t.Fatal(err)
	}
	var got Config
	back.Apply(&got, nil)
	c.Args = nil
	if !reflect.DeepEqual(got, c) || back.Source != "test" {
		t.Errorf("through %s:\n%+v\nwant\n%+v", b, got, c)
	}
	if err := json.Unmarshal([]byte(`{"settings":{"time_limt":1}}`), &back); err == nil {
		t.Error("an unknown setting was accepted")
	}
}

// TestProfileForms: Simple's forms in a profile: flattened keys over the
// nested ones, deny_patterns split by "/", allow_patterns after
// allow_domains, allow_network = true alone allowing every name.
func TestProfileForms(t *testing.T) {
	f, err := ParseFile("/p/ward.toml", []byte(`[sandbox.profiles.x]
allow_domains = ["flat.test"]
deny_patterns = ["/etc/*", "*.bad"]
allow_patterns = ["*.ok"]
[sandbox.profiles.x.network]
allow_domains = ["nested.test"]
deny_patterns = ["nested.bad"]
[sandbox.profiles.all]
allow_network = true
`))
	if err != nil {
		t.Fatal(err)
	}
	var c Config
	f.Profiles["x"].Apply(&c, nil)
	if strings.Join(c.AllowNetwork, " ") != "flat.test *.ok" || strings.Join(c.DenyNetwork, " ") != "nested.bad *.bad" || strings.Join(c.DenyPatterns, " ") != "/etc/*" {
		t.Errorf("allow %q deny %q paths %q", c.AllowNetwork, c.DenyNetwork, c.DenyPatterns)
	}
	c = Config{}
	f.Profiles["all"].Apply(&c, nil)
	if strings.Join(c.AllowNetwork, " ") != "*" {
		t.Errorf("allow_network = true: %q", c.AllowNetwork)
	}
}
