package ward

import (
	"errors"
	"strings"
	"testing"
	"time"
)

// simpleToml is the Simple spec's own example, unchanged.
const simpleToml = `[sandbox]
time_limit = "5s"
memory_limit = "100M"
cpu_limit = 80
file_descriptors = 100
processes = 1

[sandbox.network]
allow_domains = ["example.com", "api.github.com"]
allow_ports = [443]
block_internal = true
allow_patterns = ["*.github.com"]
deny_patterns = ["*.internal", "localhost", "127.*", "192.168.*"]

[sandbox.filesystem]
allow_read = ["/input"]
allow_write = ["/output"]
deny_patterns = ["/etc/*"]
max_file_size = "10M"
max_files = 100

[sandbox.profiles.strict]
time_limit = "1s"
memory_limit = "10M"
allow_network = false
allow_filesystem = false

[test]
sandbox = true
sandbox_time_limit = "5s"
sandbox_memory_limit = "100M"
`

func TestSimpleSpecExampleParsesAndApplies(t *testing.T) {
	f, err := ParseFile("/proj/simple.toml", []byte(simpleToml))
	if err != nil {
		t.Fatal(err)
	}
	var c Config
	f.Sandbox.Apply(&c, nil)
	if c.TimeLimit != 5*time.Second || c.MemoryLimit != 100<<20 || c.CPULimit != 80 || c.FileDescriptors != 100 || c.Processes != 1 ||
		len(c.AllowNetwork) != 3 || c.AllowInternal || len(c.AllowPorts) != 1 || len(c.DenyNetwork) != 4 ||
		c.AllowRead[0] != "/input" || c.AllowWrite[0] != "/output" || c.DenyPatterns[0] != "/etc/*" || c.MaxFileSize != 10<<20 || c.MaxFiles != 100 {
		t.Errorf("applied config is off: %+v", c)
	}
	p, err := f.Profile("strict")
	if err != nil {
		t.Fatal(err)
	}
	p.Apply(&c, nil)
	if c.TimeLimit != time.Second || c.MemoryLimit != 10<<20 || len(c.AllowNetwork) != 0 || c.Network != NetworkNone || len(c.AllowRead)+len(c.AllowWrite) != 0 {
		t.Errorf("the file's strict profile is off: %+v", c)
	}
}

func TestPrecedenceDefaultFileProfileFlags(t *testing.T) {
	f, err := ParseFile("/p/ward.toml", []byte("[sandbox]\ntime_limit = \"5s\"\nmemory_limit = \"100M\"\n[sandbox.profiles.fast]\ntime_limit = \"2s\"\n"))
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		profile   string
		flagTime  time.Duration
		wantTime  time.Duration
		wantMem   int64
		wantSrcTL string
	}{
		{"default", 0, 5 * time.Second, 100 << 20, "/p/ward.toml [sandbox]"},
		{"fast", 0, 2 * time.Second, 100 << 20, "/p/ward.toml [sandbox.profiles.fast]"},
		{"strict", 0, time.Second, 10 << 20, "built-in profile strict"},
		{"fast", 7 * time.Second, 7 * time.Second, 100 << 20, "flag"},
	} {
		c, explain := Config{}, map[string]string{}
		f.Sandbox.Apply(&c, explain)
		p, err := f.Profile(tc.profile)
		if err != nil {
			t.Fatal(err)
		}
		p.Apply(&c, explain)
		if tc.flagTime != 0 {
			c.TimeLimit, explain["time_limit"] = tc.flagTime, "flag"
		}
		if c.TimeLimit != tc.wantTime || c.MemoryLimit != tc.wantMem || explain["time_limit"] != tc.wantSrcTL {
			t.Errorf("%s: time %v (%s), memory %d; want %v (%s), %d", tc.profile, c.TimeLimit, explain["time_limit"], c.MemoryLimit, tc.wantTime, tc.wantSrcTL, tc.wantMem)
		}
	}
}

func TestConfigFileErrors(t *testing.T) {
	for _, tc := range []struct{ doc, want string }{
		{"[sandbox\n", "f.toml:1:"},
		{"[sandbox]\nmemory_limt = \"1G\"\n", "f.toml:2:1: sandbox.memory_limt: unknown key (did you mean memory_limit?)"},
		{"[sandbox]\ntime_limit = 5\n", "sandbox.time_limit"},
		{"[sandbox]\nmemory_limit = \"lots\"\n", "memory_limit: size \"lots\""},
		{"[sandbox]\ntime_limit = \"soon\"\n", "time_limit: duration \"soon\""},
		{"[sandbox]\ncpu_limit = 0\n", "cpu_limit: 0"},
		{"[sandbox.profiles.x]\nallow_network = false\nallow_domains = [\"a.com\"]\n", "allow_network = false contradicts"},
		{"[sandbox.profiles.x]\nallow_network = 3\n", "allow_network: want true, false or a list"},
	} {
		_, err := ParseFile("f.toml", []byte(tc.doc))
		var fe *FileError
		if !errors.As(err, &fe) || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%q: error %v, want a FileError with %q", tc.doc, err, tc.want)
		}
	}
	var f *File
	if _, err := f.Profile("nope"); err == nil || !strings.Contains(err.Error(), "known: default, development, strict, testing") {
		t.Errorf("unknown profile error %v does not list the known ones", err)
	}
}

func TestRelativePathsAreRelativeToTheFile(t *testing.T) {
	f, err := ParseFile("/proj/conf/ward.toml", []byte("[sandbox.filesystem]\nallow_read = [\"data\", \"/abs\"]\n"))
	if err != nil {
		t.Fatal(err)
	}
	var c Config
	f.Sandbox.Apply(&c, nil)
	if got := c.AllowRead; got[0] != "/proj/conf/data" || got[1] != "/abs" {
		t.Errorf("allow_read = %v", got)
	}
}

func FuzzParseFile(f *testing.F) {
	f.Add([]byte(simpleToml))
	f.Add([]byte("[sandbox.profiles.a]\nallow_network = [\"x\", 1]\n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		_, _ = ParseFile("fuzz.toml", data)
	})
}

func TestScratchKeys(t *testing.T) {
	f, err := ParseFile("/p/ward.toml", []byte(`[sandbox.filesystem]
tmp_size = "2G"
tmp_files = 50000
shm_size = "16M"

[sandbox.profiles.ci]
home_size = "512M"
home_files = 9
tmp_size = "4G"
`))
	if err != nil {
		t.Fatal(err)
	}
	var c Config
	f.Sandbox.Apply(&c, nil)
	f.Profiles["ci"].Apply(&c, nil)
	if c.Tmp != (Scratch{Size: 4 << 30, Files: 50000}) || c.Home != (Scratch{Size: 512 << 20, Files: 9}) || c.Shm != (Scratch{Size: 16 << 20}) {
		t.Errorf("tmp %+v home %+v shm %+v", c.Tmp, c.Home, c.Shm)
	}
	for _, bad := range []string{"[sandbox.filesystem]\ntmp_size = \"lots\"\n", "[sandbox.profiles.x]\nshm_files = 0\n"} {
		if _, err := ParseFile("/p/ward.toml", []byte(bad)); err == nil {
			t.Errorf("%q: accepted", bad)
		}
	}
}

func TestScratchAboveMemoryLimitRefused(t *testing.T) {
	c := Config{Args: []string{"true"}, Cwd: "/", MemoryLimit: 64 << 20, Home: Scratch{Size: 128 << 20}}
	var ce *ConfigError
	if err := c.Validate(); !errors.As(err, &ce) || ce.Key != "home-size" || !strings.Contains(ce.Reason, "--memory-limit=64M") {
		t.Errorf("Validate = %v, want a home-size error naming the memory limit", err)
	}
	c.Home.Size = 64 << 20
	if err := c.Validate(); err != nil {
		t.Errorf("a size equal to the memory limit: %v", err)
	}
}

// TestAuditLogKey: audit_log is relative to the file, a profile may set
// another, and "" turns a lower layer's off.
func TestAuditLogKey(t *testing.T) {
	f, err := ParseFile("/proj/ward.toml", []byte(`[sandbox]
audit_log = "logs/audit.jsonl"
[sandbox.profiles.elsewhere]
audit_log = "/var/log/ward.jsonl"
[sandbox.profiles.off]
audit_log = ""
`))
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct{ profile, want string }{{"", "/proj/logs/audit.jsonl"}, {"elsewhere", "/var/log/ward.jsonl"}, {"off", ""}} {
		var c Config
		explain := map[string]string{}
		f.Sandbox.Apply(&c, explain)
		if tc.profile != "" {
			p, err := f.Profile(tc.profile)
			if err != nil {
				t.Fatal(err)
			}
			p.Apply(&c, explain)
		}
		if c.AuditLog != tc.want || explain["audit_log"] == "" {
			t.Errorf("profile %q: audit_log %q (from %q), want %q", tc.profile, c.AuditLog, explain["audit_log"], tc.want)
		}
	}
	if _, err := ParseFile("/proj/ward.toml", []byte("[sandbox]\naudit_logs = \"x\"\n")); err == nil || !strings.Contains(err.Error(), "did you mean audit_log?") {
		t.Errorf("a misspelt key: %v", err)
	}
}
