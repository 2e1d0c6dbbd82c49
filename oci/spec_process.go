package oci

import (
	"fmt"
	"path/filepath"
	"sort"
	"strings"
	"sync"

	specs "github.com/opencontainers/runtime-spec/specs-go"
	"golang.org/x/sys/unix"
)

// Process is config.json's process (or exec's process.json) in ward's
// terms.
type Process struct {
	Terminal      bool
	ConsoleHeight uint
	ConsoleWidth  uint
	UID, GID      uint32
	// AdditionalGids are the supplementary groups, as given.
	AdditionalGids []uint32
	// Umask is nil when not given (the runtime's default, 0022).
	Umask *uint32
	Args  []string
	Env   []string
	Cwd   string
	// Capabilities are the five sets as bit masks (bit N: capability N);
	// nil means no capabilities at all.
	Capabilities    *Capabilities
	Rlimits         []Rlimit
	NoNewPrivileges bool
	OOMScoreAdj     *int
}

// Capabilities are the five capability sets, bit N for capability N.
type Capabilities struct {
	Bounding, Effective, Inheritable, Permitted, Ambient uint64
}

// Rlimit is one process.rlimits entry: the RLIMIT_* number and its limits.
type Rlimit struct {
	Resource   int
	Soft, Hard uint64
}

// capabilities are the names runtime-spec uses, by number.
// (built on first use: a map literal here would cost every start of ward)
var capabilities = sync.OnceValue(func() map[string]int {
	return map[string]int{
		"CAP_CHOWN": unix.CAP_CHOWN, "CAP_DAC_OVERRIDE": unix.CAP_DAC_OVERRIDE,
		"CAP_DAC_READ_SEARCH": unix.CAP_DAC_READ_SEARCH, "CAP_FOWNER": unix.CAP_FOWNER,
		"CAP_FSETID": unix.CAP_FSETID, "CAP_KILL": unix.CAP_KILL, "CAP_SETGID": unix.CAP_SETGID,
		"CAP_SETUID": unix.CAP_SETUID, "CAP_SETPCAP": unix.CAP_SETPCAP,
		"CAP_LINUX_IMMUTABLE": unix.CAP_LINUX_IMMUTABLE, "CAP_NET_BIND_SERVICE": unix.CAP_NET_BIND_SERVICE,
		"CAP_NET_BROADCAST": unix.CAP_NET_BROADCAST, "CAP_NET_ADMIN": unix.CAP_NET_ADMIN,
		"CAP_NET_RAW": unix.CAP_NET_RAW, "CAP_IPC_LOCK": unix.CAP_IPC_LOCK, "CAP_IPC_OWNER": unix.CAP_IPC_OWNER,
		"CAP_SYS_MODULE": unix.CAP_SYS_MODULE, "CAP_SYS_RAWIO": unix.CAP_SYS_RAWIO,
		"CAP_SYS_CHROOT": unix.CAP_SYS_CHROOT, "CAP_SYS_PTRACE": unix.CAP_SYS_PTRACE,
		"CAP_SYS_PACCT": unix.CAP_SYS_PACCT, "CAP_SYS_ADMIN": unix.CAP_SYS_ADMIN, "CAP_SYS_BOOT": unix.CAP_SYS_BOOT,
		"CAP_SYS_NICE": unix.CAP_SYS_NICE, "CAP_SYS_RESOURCE": unix.CAP_SYS_RESOURCE,
		"CAP_SYS_TIME": unix.CAP_SYS_TIME, "CAP_SYS_TTY_CONFIG": unix.CAP_SYS_TTY_CONFIG,
		"CAP_MKNOD": unix.CAP_MKNOD, "CAP_LEASE": unix.CAP_LEASE, "CAP_AUDIT_WRITE": unix.CAP_AUDIT_WRITE,
		"CAP_AUDIT_CONTROL": unix.CAP_AUDIT_CONTROL, "CAP_SETFCAP": unix.CAP_SETFCAP,
		"CAP_MAC_OVERRIDE": unix.CAP_MAC_OVERRIDE, "CAP_MAC_ADMIN": unix.CAP_MAC_ADMIN,
		"CAP_SYSLOG": unix.CAP_SYSLOG, "CAP_WAKE_ALARM": unix.CAP_WAKE_ALARM,
		"CAP_BLOCK_SUSPEND": unix.CAP_BLOCK_SUSPEND, "CAP_AUDIT_READ": unix.CAP_AUDIT_READ,
		"CAP_PERFMON": unix.CAP_PERFMON, "CAP_BPF": unix.CAP_BPF, "CAP_CHECKPOINT_RESTORE": unix.CAP_CHECKPOINT_RESTORE,
	}
})

// CapabilityNames are the capabilities ward knows, in number order.
func CapabilityNames() []string {
	names := make([]string, 0, len(capabilities()))
	for n := range capabilities() {
		names = append(names, n)
	}
	sort.Slice(names, func(i, j int) bool { return capabilities()[names[i]] < capabilities()[names[j]] })
	return names
}

// rlimits are the process.rlimits types, by resource number.
// (built on first use: a map literal here would cost every start of ward)
var rlimits = sync.OnceValue(func() map[string]int {
	return map[string]int{
		"RLIMIT_AS": unix.RLIMIT_AS, "RLIMIT_CORE": unix.RLIMIT_CORE, "RLIMIT_CPU": unix.RLIMIT_CPU,
		"RLIMIT_DATA": unix.RLIMIT_DATA, "RLIMIT_FSIZE": unix.RLIMIT_FSIZE, "RLIMIT_LOCKS": unix.RLIMIT_LOCKS,
		"RLIMIT_MEMLOCK": unix.RLIMIT_MEMLOCK, "RLIMIT_MSGQUEUE": unix.RLIMIT_MSGQUEUE,
		"RLIMIT_NICE": unix.RLIMIT_NICE, "RLIMIT_NOFILE": unix.RLIMIT_NOFILE, "RLIMIT_NPROC": unix.RLIMIT_NPROC,
		"RLIMIT_RSS": unix.RLIMIT_RSS, "RLIMIT_RTPRIO": unix.RLIMIT_RTPRIO, "RLIMIT_RTTIME": unix.RLIMIT_RTTIME,
		"RLIMIT_SIGPENDING": unix.RLIMIT_SIGPENDING, "RLIMIT_STACK": unix.RLIMIT_STACK,
	}
})

// SpecProcess checks a process object (config.json's process, field
// "process", or exec's process.json, field "") and turns it into ward's.
func SpecProcess(sp *specs.Process, field string) (*Process, error) {
	f := func(name string) string {
		if field == "" {
			return name
		}
		return field + "." + name
	}
	for _, u := range []struct {
		name string
		set  bool
	}{{"apparmorProfile", sp.ApparmorProfile != ""}, {"selinuxLabel", sp.SelinuxLabel != ""},
		{"scheduler", sp.Scheduler != nil}, {"ioPriority", sp.IOPriority != nil},
		{"execCPUAffinity", sp.ExecCPUAffinity != nil}, {"commandLine", sp.CommandLine != ""},
		{"user.username", sp.User.Username != ""}} {
		if u.set {
			return nil, unsupported(f(u.name), "ward does not set it up yet")
		}
	}
	if len(sp.Args) == 0 || sp.Args[0] == "" {
		return nil, invalid(f("args"), "missing: the program to run")
	}
	if !filepath.IsAbs(sp.Cwd) {
		return nil, invalid(f("cwd"), "%q is not an absolute path", sp.Cwd)
	}
	for i, e := range sp.Env {
		if k, _, ok := strings.Cut(e, "="); !ok || k == "" {
			return nil, invalid(fmt.Sprintf("%s[%d]", f("env"), i), "%q: want KEY=VALUE", e)
		}
	}
	if sp.User.Umask != nil && *sp.User.Umask > 0o777 {
		return nil, invalid(f("user.umask"), "%#o: want 0 to 0777", *sp.User.Umask)
	}
	if sp.OOMScoreAdj != nil && (*sp.OOMScoreAdj < -1000 || *sp.OOMScoreAdj > 1000) {
		return nil, invalid(f("oomScoreAdj"), "%d: want -1000 to 1000", *sp.OOMScoreAdj)
	}
	p := &Process{
		Terminal:        sp.Terminal,
		UID:             sp.User.UID,
		GID:             sp.User.GID,
		AdditionalGids:  sp.User.AdditionalGids,
		Umask:           sp.User.Umask,
		Args:            sp.Args,
		Env:             sp.Env,
		Cwd:             filepath.Clean(sp.Cwd),
		NoNewPrivileges: sp.NoNewPrivileges,
		OOMScoreAdj:     sp.OOMScoreAdj,
	}
	if sp.ConsoleSize != nil {
		if sp.ConsoleSize.Height > 0xffff || sp.ConsoleSize.Width > 0xffff {
			return nil, invalid(f("consoleSize"), "%dx%d: want at most 65535 each", sp.ConsoleSize.Height, sp.ConsoleSize.Width)
		}
		p.ConsoleHeight, p.ConsoleWidth = sp.ConsoleSize.Height, sp.ConsoleSize.Width
	}
	if sp.Capabilities != nil {
		caps, err := specCapabilities(sp.Capabilities, f("capabilities"))
		if err != nil {
			return nil, err
		}
		p.Capabilities = caps
	}
	seen := map[string]bool{}
	for i, rl := range sp.Rlimits {
		where := fmt.Sprintf("%s[%d]", f("rlimits"), i)
		res, ok := rlimits()[rl.Type]
		if !ok {
			return nil, invalid(where+".type", "unknown resource %q", rl.Type)
		}
		if seen[rl.Type] {
			return nil, invalid(where+".type", "%s given twice", rl.Type)
		}
		seen[rl.Type] = true
		if rl.Soft > rl.Hard {
			return nil, invalid(where, "soft %d above hard %d", rl.Soft, rl.Hard)
		}
		p.Rlimits = append(p.Rlimits, Rlimit{Resource: res, Soft: rl.Soft, Hard: rl.Hard})
	}
	return p, nil
}

func specCapabilities(c *specs.LinuxCapabilities, field string) (*Capabilities, error) {
	var out Capabilities
	for _, set := range []struct {
		name  string
		names []string
		mask  *uint64
	}{{"bounding", c.Bounding, &out.Bounding}, {"effective", c.Effective, &out.Effective},
		{"inheritable", c.Inheritable, &out.Inheritable}, {"permitted", c.Permitted, &out.Permitted},
		{"ambient", c.Ambient, &out.Ambient}} {
		for i, n := range set.names {
			bit, ok := capabilities()[strings.ToUpper(n)]
			if !ok {
				return nil, invalid(fmt.Sprintf("%s.%s[%d]", field, set.name, i), "unknown capability %q", n)
			}
			*set.mask |= 1 << bit
		}
	}
	// An ambient capability that is not also permitted and inheritable
	// is not raised (the kernel refuses it): as with runc, whose own
	// `runc spec` asks for ambient capabilities without inheritable ones.
	return &out, nil
}
