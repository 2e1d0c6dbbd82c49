package ward

import (
	"errors"
	"fmt"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"time"
)

// The settings schema: every setting a sandbox takes from a flag, a config
// file key or a profile is one entry of settings() below, with its flag,
// key, help text, kind and rule. The CLI registers its flags from it, the
// config file loader reads its keys through it, Layer holds and applies
// values through it, Config.ValidateSettings checks with its rules, and
// `ward start` sends the supervisor a Layer of it. docs/settings.md has the
// recipe for adding one.

// setting is one entry of the table.
type setting struct {
	// name is the setting's name in --explain and on the wire: its config
	// file key, else its flag with "_" for "-", unless given.
	name string
	flag string // its flag, without "--"; "" for none
	key  string // its config file key; "" for none
	// section is the table key is read in: "" ([sandbox]), "network"
	// ([sandbox.network]) or "filesystem" ([sandbox.filesystem]); a
	// profile takes every key flattened.
	section string
	help    string // the flag's --help text
	def     string // the built-in default, as the flag is written; --help shows it
	// hostPath: host path(s), relative ones in a config file relative to
	// the file.
	hostPath bool
	// via names the flag that sets this setting along with its own (a
	// setting without a flag of its own).
	via string
	kind
}

// kind is how a setting's value is read, checked, copied and written, by
// its type. value and list implement it.
type kind interface {
	flagType() string // the flag's type as --help names it
	// parseFlag sets the value as a command line writes it (a list
	// appends when more); it returns why the value is refused, or "".
	parseFlag(c *Config, s string, more bool) string
	// parseTOML sets the value from a decoded config file value; it
	// returns why the value is refused, or "".
	parseTOML(c *Config, v any) string
	// check returns the value and why it breaks the setting's rule, or
	// "", "" (a zero value means "not set" and passes).
	check(c *Config) (shown, why string)
	zero(c *Config) bool
	plain() bool           // written when zero too: a switch, a list
	toml(c *Config) string // the value as a config file writes it
	copyTo(dst, src *Config)
	marshal(c *Config) ([]byte, error)
	unmarshal(c *Config, b []byte) error
}

var (
	settingsOnce  sync.Once
	settingsTable []*setting
)

// settings is the table, built on first use: nothing at start-up (the
// sandbox's init starts this binary too).
func settings() []*setting {
	settingsOnce.Do(func() { settingsTable = buildSettings() })
	return settingsTable
}

func buildSettings() []*setting {
	files := between(1, 1<<24, "want a number from 1 to 16777216")
	t := []*setting{
		// [sandbox]
		{flag: "time-limit", key: "time_limit", help: "wall-clock limit (100ms, 5s, 2m); exit 124 when exceeded",
			kind: durationOf(func(c *Config) *time.Duration { return &c.TimeLimit })},
		{flag: "cpu-time-limit", key: "cpu_time_limit", help: "CPU time of the whole sandbox, all processes (1s, 500ms); exit 124 when exceeded",
			kind: durationOf(func(c *Config) *time.Duration { return &c.CPUTimeLimit })},
		{flag: "memory-limit", key: "memory_limit", help: "memory of the whole sandbox, swap included (64M, 1G); exit 125 when exceeded",
			kind: sizeOf(func(c *Config) *int64 { return &c.MemoryLimit }, MinMemoryLimit, "want at least "+FormatSize(MinMemoryLimit))},
		{flag: "cpu-limit", key: "cpu_limit", help: "share of one CPU in percent (50 = half a core, 200 = two)",
			kind: intOf(func(c *Config) *int { return &c.CPULimit }, between(1, 100*1024, "want a percentage of one CPU from 1 to 102400"))},
		{flag: "file-descriptors", key: "file_descriptors", help: "most open files (RLIMIT_NOFILE, soft and hard); unset: soft 1024, hard 524288 (or ward's own hard limit if lower), which the program may raise its soft limit to",
			kind: intOf(func(c *Config) *int { return &c.FileDescriptors }, between(4, 1<<20, "want a number from 4 to 1048576 (leave it out for the default: soft 1024, hard 524288)"))},
		{flag: "processes", key: "processes", def: strconv.Itoa(DefaultProcesses), help: "most tasks (processes and threads) of the program alive at once",
			kind: intOf(func(c *Config) *int { return &c.Processes }, between(1, 1<<22, "want a number from 1 to 4194304"))},
		{flag: "limits", key: "limits", def: LimitsStrict, help: "without a cgroup (unprivileged, no delegated cgroup v2 subtree): strict refuses --memory-limit, --cpu-limit and --cpu-time-limit; best-effort holds memory and CPU time per process (rlimits) and says so in the result",
			kind: textOf(func(c *Config) *string { return &c.Limits }, oneOf("want strict or best-effort", LimitsStrict, LimitsBestEffort))},
		{flag: "allow-nested", key: "allow_nested", help: "let the program make a sandbox of its own (ward, bubblewrap): new user, mount and PID namespaces allowed, /proc unmasked, no Landlock; every other rule stays",
			kind: boolOf(func(c *Config) *bool { return &c.AllowNested })},
		{flag: "workspace", key: "workspace", hostPath: true, help: "bind `DIR` at /workspace, read-write (DIR:rw, the default) or read-only (DIR:ro), as the working directory unless --workdir; what the program creates there is the caller's",
			kind: workspaceKind{textOf(func(c *Config) *string { return &c.Workspace }, func(s string) string {
				return why(s == "", "want a directory (workspace_access = \"none\" for none)")
			})}},
		{key: "workspace_access", via: "workspace",
			kind: textOf(func(c *Config) *string { return &c.WorkspaceAccess }, oneOf(`want "none", "ro" or "rw"`, WorkspaceNone, WorkspaceRO, WorkspaceRW))},
		{key: "env_pass",
			kind: textsOf(func(c *Config) *[]string { return &c.EnvPass }, func(e string) string { return errText(checkEnvPass(e)) })},
		{flag: "audit-log", key: "audit_log", hostPath: true, help: "append one JSON line per execution to FILE (created 0600; never the program's output or environment; docs/audit.md); if it cannot be opened nothing runs (exit 71)",
			kind: textOf(func(c *Config) *string { return &c.AuditLog }, func(s string) string { return why(strings.ContainsRune(s, 0), "want a file name") })},

		// [sandbox.network]
		{name: "allow_network", flag: "allow-network", key: "allow_domains", section: "network", help: "let the program reach DOMAIN, a pattern (*.github.com) or URL pattern through ward's proxy (repeatable; implies --network=proxy)",
			kind: textsOf(func(c *Config) *[]string { return &c.AllowNetwork }, nil)},
		{flag: "allow-port", key: "allow_ports", section: "network", help: "the only ports the proxy connects to (repeatable; default any)",
			kind: intsOf(func(c *Config) *[]int { return &c.AllowPorts }, between(1, 65535, "want a port from 1 to 65535"))},
		{flag: "block-internal", key: "block_internal", section: "network", def: "true", help: "refuse names that resolve to loopback, private, link-local or metadata addresses",
			kind: notBoolOf(func(c *Config) *bool { return &c.AllowInternal })},
		{name: "deny_patterns (network)", flag: "deny-network", key: "deny_patterns", section: "network", help: "refuse names matching this pattern even if allowed (repeatable)",
			kind: textsOf(func(c *Config) *[]string { return &c.DenyNetwork }, nil)},
		{flag: "network-max-bytes", key: "max_bytes", section: "network", help: "most bytes the proxy carries for the sandbox, both ways (default 1G)",
			kind: sizeOf(func(c *Config) *int64 { return &c.NetworkMaxBytes }, 1, "must be more than 0")},

		// [sandbox.filesystem]
		{flag: "allow-read", key: "allow_read", section: "filesystem", hostPath: true, help: "bind PATH read-only (and noexec) at the same path inside (repeatable)",
			kind: textsOf(func(c *Config) *[]string { return &c.AllowRead }, nil)},
		{flag: "allow-write", key: "allow_write", section: "filesystem", hostPath: true, help: "bind PATH read-write at the same path inside; what the program creates there is the caller's (repeatable)",
			kind: textsOf(func(c *Config) *[]string { return &c.AllowWrite }, nil)},
		{name: "deny_patterns (filesystem)", flag: "deny-pattern", key: "deny_patterns", section: "filesystem", help: "hide what this glob on paths inside matches, e.g. '/etc/*' (repeatable)",
			kind: textsOf(func(c *Config) *[]string { return &c.DenyPatterns }, func(p string) string {
				_, err := filepath.Match(p, "/")
				if err != nil || !filepath.IsAbs(p) {
					return "want an absolute glob such as /etc/*"
				}
				// An empty component matches nothing more, and thousands of
				// them made a pattern of thousands of levels for the init.
				return why(strings.Contains(p, "//") || len(p) >= 4096, "want an absolute glob such as /etc/*, without empty components (//) and shorter than 4096 bytes")
			})},
		{flag: "max-file-size", key: "max_file_size", section: "filesystem", help: "largest file the program may write (10M); a larger write fails with EFBIG",
			kind: sizeOf(func(c *Config) *int64 { return &c.MaxFileSize }, 1, "must be more than 0")},
		{flag: "max-files", key: "max_files", section: "filesystem", help: "most files in each writable scratch dir (/tmp, home, /dev/shm)",
			kind: intOf(func(c *Config) *int { return &c.MaxFiles }, files)},
	}
	for _, d := range []struct {
		name, path string
		def        int64
		of         func(*Config) *Scratch
	}{
		{"tmp", "/tmp", DefaultTmpSize, func(c *Config) *Scratch { return &c.Tmp }},
		{"home", "/home/" + SandboxUser, DefaultHomeSize, func(c *Config) *Scratch { return &c.Home }},
		{"shm", "/dev/shm", DefaultShmSize, func(c *Config) *Scratch { return &c.Shm }},
	} {
		t = append(t,
			&setting{flag: d.name + "-size", key: d.name + "_size", section: "filesystem",
				help: fmt.Sprintf("bytes of the %s tmpfs (default %s; charged to the sandbox's memory)", d.path, FormatSize(d.def)),
				kind: sizeOf(func(c *Config) *int64 { return &d.of(c).Size }, 4096, "want a size of at least 4K")},
			&setting{flag: d.name + "-files", key: d.name + "_files", section: "filesystem",
				help: fmt.Sprintf("most files in %s (default --max-files, else %d)", d.path, DefaultScratchInodes),
				kind: intOf(func(c *Config) *int { return &d.of(c).Files }, files)})
	}
	return append(t, commandLineOnly()...)
}

// commandLineOnly are the settings that have a flag and no config file key.
func commandLineOnly() []*setting {
	return []*setting{
		{flag: "network", def: NetworkNone, help: "network mode: none, proxy (the allow list) or host (no network isolation)",
			kind: textOf(func(c *Config) *string { return &c.Network }, oneOf("want none, proxy or host", NetworkNone, NetworkProxy, NetworkHost))},
		{flag: "add-host", help: "a static answer NAME:IP for the proxy and /etc/hosts (repeatable)",
			kind: textsOf(func(c *Config) *[]string { return &c.AddHosts }, func(h string) string {
				_, _, err := ParseAddHost(h)
				return errText(err)
			})},
		{flag: "log-network", help: "print one line per network attempt, allowed or blocked",
			kind: boolOf(func(c *Config) *bool { return &c.LogNetwork })},
		{flag: "seccomp", def: SeccompDefault, help: "syscall policy: default, strict, unconfined (unsafe), or an OCI/Docker JSON profile FILE",
			kind: textOf(func(c *Config) *string { return &c.Seccomp }, nil)},
		{flag: "mount", help: "bind SRC at DST inside: SRC:DST[:ro|rw], ro by default (repeatable)",
			kind: mountsOf(func(c *Config) *[]Mount { return &c.Mounts })},
		{flag: "virtual-fs", help: "show only the system dirs, the scratch space and the --mount targets (not --allow-* paths)",
			kind: boolOf(func(c *Config) *bool { return &c.VirtualFS })},
		{flag: "allow-sockets", help: "let unix sockets inside allowed paths be seen (each is a way out)",
			kind: boolOf(func(c *Config) *bool { return &c.AllowSockets })},
		{flag: "overlay", help: "make the whole system view writable; the writes (512M at most) vanish at exit",
			kind: boolOf(func(c *Config) *bool { return &c.Overlay })},
		{flag: "overlay-keep", help: "with --overlay, copy what the program changed into this empty DIR at the end",
			kind: textOf(func(c *Config) *string { return &c.OverlayKeep }, nil)},
		{flag: "env", help: "set K=V, pass the caller's K, or pass each caller variable whose name matches a pattern such as 'APCORE_*' (*, ?, [...]) (repeatable)",
			kind: textsOf(func(c *Config) *[]string { return &c.Env }, func(e string) string { return errText(checkEnvEntry(e)) })},
		{flag: "workdir", help: "working directory inside, absolute (default /workspace with --workspace, else " + DefaultWorkdir + ")",
			kind: textOf(func(c *Config) *string { return &c.Workdir }, func(s string) string {
				return why(!filepath.IsAbs(s), "must be an absolute path inside the sandbox")
			})},
		{flag: "output-limit", def: FormatSize(DefaultOutputLimit), help: "most bytes kept of each captured stream",
			kind: sizeOf(func(c *Config) *int64 { return &c.OutputLimit }, 1, "must be more than 0")},
		{flag: "sandbox-log", def: LogNormal, help: "what ward prints on stderr: quiet, normal or verbose",
			kind: textOf(func(c *Config) *string { return &c.Log }, oneOf("want quiet, normal or verbose", LogQuiet, LogNormal, LogVerbose))},
		{flag: "tty", help: "let the program use the caller's terminal (only when stdin is a tty)",
			kind: boolOf(func(c *Config) *bool { return &c.TTY })},
	}
}

// nameOf is s's name: given, else its key, else its flag with "_" for "-".
func (s *setting) nameOf() string {
	switch {
	case s.name != "":
		return s.name
	case s.key != "":
		return s.key
	}
	return strings.ReplaceAll(s.flag, "-", "_")
}

// errorKey names s in a *ConfigError: its flag, else the flag that sets
// it, else its name.
func (s *setting) errorKey() string {
	switch {
	case s.flag != "":
		return s.flag
	case s.via != "":
		return s.via
	}
	return s.nameOf()
}

// settingNamed is the setting called name and its index, or nil, -1.
func settingNamed(name string) (*setting, int) {
	for i, s := range settings() {
		if s.nameOf() == name {
			return s, i
		}
	}
	return nil, -1
}

// Setting describes one setting: what the command line and --help need of
// it. Settings lists them.
type Setting struct {
	Name     string // in --explain and in a Layer's JSON
	Flag     string // its flag, without "--"; "" for none
	Key      string // its config file key; "" for none
	Help     string // the flag's --help text
	Default  string // the built-in default, as the flag is written ("" for none)
	FlagType string // the flag's type as --help names it: string, int, bool, stringArray, intSlice
}

// Settings lists every setting, in the table's order.
func Settings() []Setting {
	out := make([]Setting, len(settings()))
	for i, s := range settings() {
		out[i] = Setting{Name: s.nameOf(), Flag: s.flag, Key: s.key, Help: s.help, Default: s.def, FlagType: s.flagType()}
	}
	return out
}

// checkSettings is the first value of c that breaks its setting's rule
// (the rule a flag or config file value is held to where it is read).
func (c *Config) checkSettings() error {
	for _, s := range settings() {
		if shown, reason := s.check(c); reason != "" {
			return &ConfigError{Key: s.errorKey(), Value: shown, Reason: reason}
		}
	}
	return nil
}

// Rules, for the table.

func why(bad bool, reason string) string {
	if bad {
		return reason
	}
	return ""
}

func errText(err error) string {
	if err != nil {
		return err.Error()
	}
	return ""
}

func between(lo, hi int, reason string) func(int) string {
	return func(n int) string { return why(n < lo || n > hi, reason) }
}

func oneOf(reason string, values ...string) func(string) string {
	return func(s string) string {
		for _, v := range values {
			if s == v {
				return ""
			}
		}
		return reason
	}
}

// errType: a config file value of the wrong type.
var errType = errors.New("wrong type")

func fromString[T any](parse func(string) (T, error)) func(any) (T, error) {
	return func(v any) (T, error) {
		s, ok := v.(string)
		if !ok {
			var zero T
			return zero, errType
		}
		return parse(s)
	}
}

func fromInt(v any) (int, error) {
	n, ok := v.(int64)
	if !ok || int64(int(n)) != n {
		return 0, errType
	}
	return int(n), nil
}

func fromBool(v any) (bool, error) {
	b, ok := v.(bool)
	if !ok {
		return false, errType
	}
	return b, nil
}

func same(s string) (string, error) { return s, nil }

func wantWhole(s string) (int, error) {
	n, err := strconv.Atoi(strings.TrimSpace(s))
	if err != nil {
		return 0, fmt.Errorf("want a whole number")
	}
	return n, nil
}

func wantBool(s string) (bool, error) {
	b, err := strconv.ParseBool(s)
	if err != nil {
		return false, fmt.Errorf("want true or false")
	}
	return b, nil
}

// showTOML prints a decoded config file value for an error.
func showTOML(v any) string {
	if s, ok := v.(string); ok {
		return strconv.Quote(s)
	}
	return fmt.Sprint(v)
}
