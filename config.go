// Package ward runs untrusted programs inside a Linux sandbox made of
// namespaces, a cgroup, seccomp, a minimal read-only root and dropped
// privileges, and reports exactly what happened.
//
// A program that uses this package must call [Init] first thing in main:
// ward re-executes /proc/self/exe as the sandbox's init, and Init is where
// that init takes over.
package ward

import (
	"fmt"
	"io"
	"net/netip"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"time"
)

// Network modes.
const (
	NetworkNone = "none" // a private network namespace with only lo
	NetworkHost = "host" // the host's network namespace: no network isolation
	// NetworkProxy: only lo; ward's host-side proxy, reached through the
	// init, lets out what the allow list allows.
	NetworkProxy = "proxy"
)

// Built-in seccomp policies; any other value of Config.Seccomp is a file.
const (
	SeccompDefault    = "default"
	SeccompStrict     = "strict"
	SeccompUnconfined = "unconfined"
)

// How limits may be held where no cgroup is to be had (Config.Limits).
const (
	// LimitsStrict refuses a limit only a cgroup can hold for the whole
	// sandbox (memory, CPU share, CPU time across processes).
	LimitsStrict = "strict"
	// LimitsBestEffort holds such limits per process (rlimits) instead,
	// and says so in the result.
	LimitsBestEffort = "best-effort"
)

// Log levels for what ward itself prints on stderr.
const (
	LogQuiet   = "quiet"
	LogNormal  = "normal"
	LogVerbose = "verbose"
)

// Workspace access (Config.WorkspaceAccess; ash's workspace_access).
const (
	WorkspaceRW   = "rw"
	WorkspaceRO   = "ro"
	WorkspaceNone = "none" // no workspace, whatever Config.Workspace says
	// WorkspaceDir is where Config.Workspace is bound inside.
	WorkspaceDir = "/workspace"
)

// Defaults of the default profile (DESIGN.md sections 1 and 2).
const (
	DefaultWorkdir = "/home/sandbox"
	// DefaultFileDescriptors is RLIMIT_NOFILE's soft limit when the caller
	// sets none (select() cannot watch fds above 1023); the hard limit is
	// then DefaultFileDescriptorsHard, or ward's own hard limit if lower, so
	// that a program may raise its soft limit as Go's runtime does at start
	// (systemd's convention for services; docs/limits.md).
	DefaultFileDescriptors     = 1024
	DefaultFileDescriptorsHard = 524288
	DefaultProcesses           = 256
	DefaultOutputLimit         = 1 << 20
	DefaultTmpSize             = 256 << 20 // /tmp tmpfs size
	DefaultHomeSize            = 64 << 20  // /home/sandbox tmpfs size
	DefaultShmSize             = 256 << 20 // /dev/shm tmpfs size
	DefaultScratchInodes       = 16384     // inode cap of each scratch tmpfs
	DefaultOverlaySize         = 512 << 20 // writes through --overlay
	// MinMemoryLimit: below this even the program's exec cannot succeed,
	// and the result would be an OOM that says nothing about the program.
	MinMemoryLimit = 1 << 20
)

// Config is everything that decides one sandbox. The CLI builds it from
// flags; library callers fill it directly. It flows one way: Config -> the
// launcher's plan -> the init inside.
type Config struct {
	// Args is the program and its arguments. Args[0] is looked up in the
	// sandbox's PATH when it has no slash.
	Args []string
	// Env adds variables on top of the base environment (DESIGN.md
	// section 2): "K=V" sets K, "K" passes K from the caller's environment,
	// a pattern ("APCORE_*": *, ? and [...] on names) passes every caller
	// variable whose name matches, but those ward sets itself (HOME,
	// TMPDIR, USER, the proxy's). Anything else is refused.
	Env []string
	// EnvPass are names or patterns passed as a bare Env entry is, before
	// Env (the config file's env_pass).
	EnvPass []string
	// Workspace is a host directory bound at /workspace (WorkspaceDir), and
	// the working directory unless Workdir says otherwise. Relative to Cwd.
	// It is bound as a writable --mount is: what the program creates there
	// belongs to the caller, never with a setuid or setgid bit.
	Workspace string
	// WorkspaceAccess is WorkspaceRW (when empty), WorkspaceRO, or
	// WorkspaceNone (no workspace at all).
	WorkspaceAccess string
	// AllowRead are host files or directories bound read-only (nosuid,
	// nodev, noexec) at the same path inside. Relative paths are taken
	// against the caller's working directory; symlinks are resolved on the
	// host before the sandbox starts.
	AllowRead []string
	// AllowWrite are host files or directories bound read-write at the
	// same path; what the program creates there belongs to the caller.
	AllowWrite []string
	// Mounts are host paths bound at chosen paths inside (read-only unless
	// Writable).
	Mounts []Mount
	// VirtualFS shows only the system directories, the scratch space and
	// Mounts: AllowRead and AllowWrite are not added.
	VirtualFS bool
	// DenyPatterns are globs on paths inside; what they match is hidden
	// (an empty directory or file), but for fs.MustKeep.
	DenyPatterns []string
	// AllowSockets lets unix sockets inside allowed paths be seen (each one
	// is a way out of the sandbox); by default they are hidden.
	AllowSockets bool
	// Overlay makes the whole system view writable through a size-capped
	// tmpfs layer thrown away at exit (OverlaySize, 0: DefaultOverlaySize).
	Overlay     bool
	OverlaySize int64
	// OverlayKeep, a host directory that exists and is empty, receives the
	// overlay's changes (the upper layers) at the end; it implies Overlay.
	OverlayKeep string
	// LandlockTestOmit is for `ward verify` only (no flag, no config key):
	// the targets of writable mounts whose Landlock write rules are left
	// out, to show that the second layer alone refuses writes there.
	LandlockTestOmit []string
	// MaxFiles caps the inodes of each writable scratch tmpfs; 0 means
	// DefaultScratchInodes.
	MaxFiles int
	// Tmp, Home and Shm size the scratch tmpfs mounts /tmp (the TMPDIR),
	// /home/sandbox and /dev/shm. Their pages are charged to the sandbox's
	// memory, so an explicit size above MemoryLimit is refused.
	Tmp, Home, Shm Scratch
	// Workdir is the working directory inside; empty means /workspace with
	// a workspace, else /home/sandbox.
	Workdir string
	// Network is NetworkNone (default when empty), NetworkProxy (implied by
	// AllowNetwork) or NetworkHost.
	Network string
	// AllowNetwork are names, patterns (*.github.com, api.*.com) or URL
	// patterns (https://cdn.example.com/*) the proxy lets through;
	// DenyNetwork win over them; AllowPorts limits ports (empty: any).
	AllowNetwork []string
	DenyNetwork  []string
	AllowPorts   []int
	// AllowInternal turns off block_internal: names resolving to loopback,
	// private, link-local (cloud metadata) ... addresses are then allowed.
	AllowInternal bool
	// AddHosts are static answers NAME:IP for the proxy and /etc/hosts.
	AddHosts []string
	// LogNetwork prints one line per network attempt on LogWriter. Without
	// an allow list it implies NetworkProxy with nothing allowed, so that
	// the attempts reach ward's proxy to be refused and logged.
	LogNetwork bool
	// NetworkMaxBytes caps the bytes (both ways, all connections) the
	// proxy carries for the sandbox; 0 means netns.DefaultMaxBytes.
	NetworkMaxBytes int64
	// TimeLimit is the wall-clock limit of the program; 0 means none.
	TimeLimit time.Duration
	// CPUTimeLimit is the CPU time of the whole sandbox (every process and
	// thread, from its cgroup); 0 means none.
	CPUTimeLimit time.Duration
	// MemoryLimit is the memory of the whole sandbox in bytes, swap
	// included (no swap beyond it); 0 means none.
	MemoryLimit int64
	// CPULimit is the share of one CPU in percent (50 = half a core, 200 =
	// two); 0 means none.
	CPULimit int
	// Processes is the most tasks (processes and threads) of the program
	// alive at once; 0 means DefaultProcesses. ward's init is not counted.
	Processes int
	// FileDescriptors is RLIMIT_NOFILE, soft and hard alike; 0 means none
	// set: soft DefaultFileDescriptors, hard DefaultFileDescriptorsHard or
	// this process's own hard limit if lower (see FileDescriptorLimits).
	FileDescriptors int
	// MaxFileSize is RLIMIT_FSIZE in bytes: a larger write fails with
	// EFBIG; 0 means none.
	MaxFileSize int64
	// AllowNested lets the program make a sandbox of its own (ward,
	// bubblewrap): the default policy then allows new user, mount and PID
	// namespaces and mounting in them, /proc is left unmasked (the kernel
	// wants one fully visible for a new one) and Landlock is off (it
	// forbids mounting). Every other rule stays.
	AllowNested bool
	// Limits is LimitsStrict (when empty) or LimitsBestEffort: what to do
	// when this host gives ward no cgroup (an unprivileged caller without
	// a delegated cgroup v2 subtree) and a limit needs one.
	Limits string
	// Seccomp is the syscall policy: "default" (when empty), "strict",
	// "unconfined" (no filter: unsafe), or the path of an OCI/Docker JSON
	// seccomp profile.
	Seccomp string
	// Profile names the profile these values came from (for logs/reports).
	Profile string
	// AuditLog is a file (relative: to Cwd) that gets one JSON line per
	// execution: each Run, each Exec of a sandbox from Start, and a Start
	// whose setup failed (docs/audit.md). It is created 0600; when it
	// cannot be opened nothing runs. Empty: no audit log.
	AuditLog string
	// Name names the sandbox in the audit log (ward start --name); empty
	// means a random id per sandbox.
	Name string
	// Caller is who asked for the sandbox, for the audit log; nil means
	// this process (its uid and pid). A supervisor that starts sandboxes
	// for other processes sets it to theirs.
	Caller *Caller `json:"-"`
	// Cwd is the directory the host paths above (and a seccomp profile
	// file) are relative to; empty means this process's working directory.
	// CallerEnv is the environment the sandbox's allow-listed variables
	// (PATH, LANG, ..., WARD_*) are taken from; nil means this process's.
	// A supervisor that starts sandboxes for other processes (ward start)
	// sets both to theirs.
	Cwd       string
	CallerEnv []string

	// TTY keeps the program in the caller's session so it can use the
	// caller's terminal (job control, a controlling tty). Without it the
	// program gets a session of its own and cannot inject keystrokes.
	// With it, this process ignores SIGTTOU and SIGTTIN from then on, so
	// that the program cannot stop it through the terminal.
	TTY bool

	// Stdin, Stdout and Stderr are the program's streams; nil means
	// /dev/null for Stdin and discard for the others. An *os.File is passed
	// straight through (no copying).
	Stdin          io.Reader `json:"-"`
	Stdout, Stderr io.Writer `json:"-"`
	// Capture keeps up to OutputLimit bytes of each stream in the Result
	// (in addition to writing them to Stdout/Stderr when those are set).
	Capture     bool
	OutputLimit int64
	// Log is what ward prints on LogWriter: LogQuiet, LogNormal (default)
	// or LogVerbose.
	Log       string
	LogWriter io.Writer `json:"-"`
	// ForwardSignals relays SIGINT, SIGTERM, SIGHUP, SIGQUIT, SIGUSR1 and
	// SIGUSR2 received by this process to the program while it runs.
	ForwardSignals bool
	// OnResult, if set, is called once by Run with the Result and error
	// Run is about to return, as soon as they are known: for a program
	// that ran, once every process of its sandbox is gone, its figures
	// read, and lent directories given back, but before its cgroup is
	// removed and the rest released, which Run does before it returns.
	// A caller hands the result on from here without waiting for that
	// teardown (the CLI writes its report and output from it).
	OnResult func(*Result, error) `json:"-"`
}

// Scratch is the size of one scratch tmpfs: Size bytes (0: the default)
// and Files inodes (0: MaxFiles, else DefaultScratchInodes).
type Scratch struct {
	Size  int64
	Files int
}

// scratchDirs names each scratch tmpfs, its flag prefix and default size.
func (c *Config) scratchDirs() []struct {
	flag, path string
	s          *Scratch
	def        int64
} {
	return []struct {
		flag, path string
		s          *Scratch
		def        int64
	}{{"tmp", "/tmp", &c.Tmp, DefaultTmpSize}, {"home", "/home/" + SandboxUser, &c.Home, DefaultHomeSize}, {"shm", "/dev/shm", &c.Shm, DefaultShmSize}}
}

// effective is the size and inode cap a scratch tmpfs gets: the explicit
// values, else MaxFiles, else the defaults. Its root directory takes one
// inode, so maxFiles files need maxFiles+1.
func (s Scratch) effective(def int64, maxFiles int) (size int64, inodes int) {
	size, files := s.Size, s.Files
	if size == 0 {
		size = def
	}
	if files == 0 {
		files = maxFiles
	}
	if files == 0 {
		return size, DefaultScratchInodes
	}
	return size, files + 1
}

// ConfigError is an invalid value in a Config: Key is the flag/TOML name of
// the setting (e.g. "workdir"), Value what was given.
type ConfigError struct {
	Key, Value, Reason string
}

func (e *ConfigError) Error() string {
	return fmt.Sprintf("--%s=%s: %s", e.Key, e.Value, e.Reason)
}

// withDefaults returns c with empty fields set to the default profile's.
func (c Config) withDefaults() Config {
	if c.Cwd == "" {
		c.Cwd, _ = os.Getwd()
	}
	if c.CallerEnv == nil {
		c.CallerEnv = os.Environ()
	}
	if c.Workdir == "" {
		c.Workdir = DefaultWorkdir
		if _, _, ok := c.workspace(); ok {
			c.Workdir = WorkspaceDir
		}
	}
	if c.Network == "" || (c.Network == NetworkNone && (len(c.AllowNetwork) > 0 || c.LogNetwork)) {
		c.Network = NetworkNone
		if len(c.AllowNetwork) > 0 || c.LogNetwork {
			// Only ward's proxy sees attempts: with an empty allow list it
			// refuses and logs each one.
			c.Network = NetworkProxy
		}
	}
	if c.Processes == 0 {
		c.Processes = DefaultProcesses
	}
	if c.OutputLimit == 0 {
		c.OutputLimit = DefaultOutputLimit
	}
	if c.Log == "" {
		c.Log = LogNormal
	}
	if c.Profile == "" {
		c.Profile = "default"
	}
	if c.Seccomp == "" {
		c.Seccomp = SeccompDefault
	}
	if c.Limits == "" {
		c.Limits = LimitsStrict
	}
	return c
}

// Validate reports the first invalid setting of a config for Run as a
// *ConfigError: no command, or what ValidateSettings reports.
func (c Config) Validate() error {
	if len(c.Args) == 0 || c.Args[0] == "" {
		return &ConfigError{Key: "command", Value: "", Reason: "no command given (usage: ward run [flags] -- COMMAND [ARG...])"}
	}
	return c.ValidateSettings()
}

// ValidateSettings reports the first invalid setting as a *ConfigError,
// Args aside (Start needs none): a value that breaks its setting's rule
// (settings.go: the rule a flag or config file value is held to where it
// is read, with the same message), or settings that contradict each
// other. Zero values mean "not set" and pass.
func (c Config) ValidateSettings() error {
	c = c.withDefaults()
	if !filepath.IsAbs(c.Cwd) {
		return &ConfigError{Key: "cwd", Value: c.Cwd, Reason: "must be an absolute host path (the directory relative paths are resolved in)"}
	}
	if err := c.checkSettings(); err != nil {
		return err
	}
	if c.Network == NetworkHost && len(c.AllowNetwork) > 0 {
		return &ConfigError{Key: "allow-network", Value: c.AllowNetwork[0], Reason: "contradicts --network=host (no proxy there: everything is reachable)"}
	}
	if c.AllowNested && c.Seccomp == SeccompStrict {
		return &ConfigError{Key: "allow-nested", Value: "true", Reason: "the strict policy allows no namespaces: use the default policy (or a profile of your own)"}
	}
	for _, d := range c.scratchDirs() {
		if c.MemoryLimit > 0 && d.s.Size > c.MemoryLimit {
			return &ConfigError{Key: d.flag + "-size", Value: FormatSize(d.s.Size), Reason: fmt.Sprintf(
				"larger than --memory-limit=%s: what the program writes to %s is charged to the sandbox's memory (raise the memory limit or lower the size)",
				FormatSize(c.MemoryLimit), d.path)}
		}
	}
	return c.checkWorkspace()
}

// FileDescriptorLimits is the RLIMIT_NOFILE the program starts with: n for
// both when n > 0; else soft DefaultFileDescriptors and hard
// DefaultFileDescriptorsHard, each lowered to this process's own hard limit
// (a sandbox never gets more than its caller has).
func FileDescriptorLimits(n int) (soft, hard uint64) {
	if n > 0 {
		return uint64(n), uint64(n)
	}
	soft, hard = DefaultFileDescriptors, DefaultFileDescriptorsHard
	var own syscall.Rlimit
	if err := syscall.Getrlimit(syscall.RLIMIT_NOFILE, &own); err == nil && own.Max < hard {
		hard = own.Max
	}
	return min(soft, hard), hard
}

// ParseAddHost reads NAME:IP (IPv6 allowed after the first colon).
func ParseAddHost(s string) (string, netip.Addr, error) {
	name, ip, ok := strings.Cut(s, ":")
	// The name becomes a line of the sandbox's /etc/hosts: no blank, control
	// character or "#" (a newline would add a line, "#" start a comment).
	if !ok || name == "" || strings.ContainsFunc(name, func(r rune) bool { return r <= ' ' || r == 0x7f || r == '/' || r == '#' }) {
		return "", netip.Addr{}, fmt.Errorf("want NAME:IP")
	}
	a, err := netip.ParseAddr(strings.Trim(ip, "[]"))
	if err != nil {
		return "", netip.Addr{}, fmt.Errorf("%q is not an IP address", ip)
	}
	return strings.ToLower(name), a, nil
}
