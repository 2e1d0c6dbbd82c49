// Package nsexec starts the sandbox: the parent side clones ward's own
// binary into new namespaces and supervises it; the child side is the init
// (PID 1 of the sandbox), in C (init_linux.c): it builds the root, forks
// the program's process (spawn_linux.c), which drops privileges and execs
// the program, and supervises it. No Go runs in the sandbox but the proxy
// relay of --network=proxy ("ward relay", relay_linux.go).
//
// # Protocol
//
// The two sides talk over a unix stream socketpair, inherited by the init as
// fd 3. Down, one binary config (init_linux.h: magic, version, lengths,
// checked by the init before it reads a field); up, one JSON Msg per line,
// written by the init's C:
//
//	direction      type        when                              carries
//	parent->init   (config)    right after clone                 the init's part, the root plan, the gate (binary)
//	init->parent   error       a setup step failed (exit 71)     Step, What, Path, Errno (the parent words Message)
//	init->parent   ready       the root is built                 Steps (timings), Landlock (ABI); FDs 1: the upper layers (--overlay-keep)
//	init->parent   listener    the seccomp listener (verbose)    FDs 1: the listener, which the parent serves
//	init->parent   gate_error  the program's process failed      GateStep, Errno, Detail (the parent words it: gateError)
//	init->parent   exec_error  the program could not be exec'd   Path, Errno
//	init->parent   started     the program runs                  Pid (inside), StartUs (its exec), Steps (the program's process's)
//	init->parent   exit        the program ended                 Exit (with WallUs, TimedOut)
//
// Fds come with their message as SCM_RIGHTS, in order; FDs counts them.
// A long-lived sandbox's commands come over a second socket (SEQPACKET,
// init_linux.h's exec request: the command's packed gate and its three
// stdio fds, or a signal for a command): their messages carry its ID.
//
// The program's process is forked by the init and runs only C
// (spawn_linux.c) until it execs the program: the init forwards it the
// gate the parent packed over a SOCK_SEQPACKET socketpair, and the
// cgroup.procs files the parent opened come as fds 4...; it moves itself into the
// cgroup, drops every privilege and execs, so no code of the program runs
// outside the cgroup and no code of ward's counts in it. Its errors go to
// the init as binary reports, which the init relays as "gate_error" or
// "exec_error". A successful exec closes its socket (CLOEXEC).
//
// After "error", "gate_error", "exec_error" or "exit" the init exits; its
// death ends the PID namespace and with it every process of the sandbox.
// If the parent dies, the init sees EOF on fd 3 (and PR_SET_PDEATHSIG) and
// exits too.
package nsexec

import (
	"fmt"
	"os"
	"strings"
	"syscall"

	"golang.org/x/sys/unix"

	"github.com/wardbox/ward/fs"
	"github.com/wardbox/ward/seccomp"
)

// Message types.
const (
	MsgError     = "error"
	MsgReady     = "ready"
	MsgListener  = "listener"
	MsgGateError = "gate_error"
	MsgExecError = "exec_error"
	MsgStarted   = "started"
	MsgExit      = "exit"
	// MsgHooks (an OCI container with prestart or createRuntime hooks):
	// the init waits for one byte on fd 3 while the parent runs them.
	MsgHooks = "hooks"
)

// Spec is everything the init needs, fully resolved by the parent, which
// packs it for the init (packInit).
type Spec struct {
	Args     []string `json:"args"`
	Env      []string `json:"env"`
	Dir      string   `json:"dir"`
	Hostname string   `json:"hostname"`
	Plan     *fs.Plan `json:"plan"`
	// UserMounts are attached after the host's root is gone, by fd (after
	// the CgroupFDs); DenyPatterns are masked after them.
	UserMounts []fs.UserMount `json:"user_mounts,omitempty"`
	// RootSize is the root tmpfs's size (0: small); Overlay leaves the root
	// writable (the plan made the system view an overlay).
	RootSize     int64    `json:"root_size,omitempty"`
	Overlay      bool     `json:"overlay,omitempty"`
	DenyPatterns []string `json:"deny,omitempty"`
	// ProxyFD is the init's end of the proxy control socket (0: no proxy):
	// the init relays 127.0.0.1:3128 and :1080 inside through it.
	ProxyFD int `json:"proxy_fd,omitempty"`
	// DirectPorts and DirectNames configure the stub resolver for programs
	// that ignore the proxy variables (netns.StartDirect).
	DirectPorts []int    `json:"direct_ports,omitempty"`
	DirectNames []string `json:"direct_names,omitempty"`
	// OverlayKeep: the init hands the overlays' upper layers to the
	// parent, which copies them into the caller's --overlay-keep
	// directory once the sandbox is gone (Options.OverlayKeep).
	OverlayKeep bool `json:"overlay_keep,omitempty"`
	// LoopbackUp: the sandbox has its own network namespace; bring lo up.
	LoopbackUp bool `json:"lo"`
	UID        int  `json:"uid"`
	GID        int  `json:"gid"`
	// NoFile and NoFileHard are RLIMIT_NOFILE's soft and hard limits
	// (NoFileHard 0: NoFile).
	NoFile     uint64 `json:"nofile"`
	NoFileHard uint64 `json:"nofile_hard,omitempty"`
	// CPUSeconds is RLIMIT_CPU's soft limit (0: none), the backstop of the
	// supervisor's CPU time limit; the hard limit is one second more.
	CPUSeconds uint64 `json:"cpu_s,omitempty"`
	// FileSize is RLIMIT_FSIZE in bytes (0: none); SIGXFSZ is then ignored
	// so that a write past it fails with EFBIG instead of killing.
	FileSize uint64 `json:"fsize,omitempty"`
	// KeepGroups: the kernel denies setgroups(2) in this user namespace
	// (an unprivileged caller's single mapping); the program keeps the
	// groups it has. NProc is RLIMIT_NPROC (0: leave it), the process
	// limit where no cgroup holds one.
	KeepGroups bool `json:"keep_groups,omitempty"`
	// BecomeRoot: the init was cloned unmapped (an ordinary user's full
	// range, written by newuidmap before the config came): it becomes
	// root of its namespace first thing.
	BecomeRoot bool `json:"become_root,omitempty"`
	// NestUserns puts the program in a user namespace of its own (same
	// single mapping), so that RLIMIT_NPROC counts its processes only, not
	// the init's threads of the same uid.
	NestUserns bool `json:"nest_userns,omitempty"`
	// KeepCgroupNS (OCI): the container joined a cgroup namespace by
	// path; the program's process makes none of its own.
	KeepCgroupNS bool   `json:"keep_cgroupns,omitempty"`
	NProc        uint64 `json:"nproc,omitempty"`
	// DataBytes is RLIMIT_DATA (0: leave it): memory per process where no
	// cgroup holds the sandbox's (--limits=best-effort).
	DataBytes uint64 `json:"data,omitempty"`
	// TimeLimitUs is the program's wall-clock limit (0: none), timed by
	// the init from the program's exec: ward's setup never counts.
	TimeLimitUs int64 `json:"time_limit_us,omitempty"`
	// Session: a long-lived sandbox. The init starts no program; it runs
	// the commands that come over ExecFD (ExecRequest and three stdio fds
	// per SEQPACKET message) and reports each one's start and end by ID.
	Session bool `json:"session,omitempty"`
	ExecFD  int  `json:"exec_fd,omitempty"`
	// OCI: an OCI container (Create). The init becomes the program
	// itself, reporting its steps on ReportFD and waiting on the exec
	// fifo (StartFD, an O_PATH fd) before seccomp and exec.
	OCI bool `json:"oci,omitempty"`
	// Caps (OCI) are config.json's capability sets, kept where ward's
	// program keeps none: bounding, effective, permitted, inheritable,
	// ambient (bit N: capability N). nil: none at all, ward's rule.
	Caps *[5]uint64 `json:"caps,omitempty"`
	// OCIProc (OCI) is the rest of config.json's process (and sysctls)
	// where ward's own program has its own rules; nil: ward's.
	OCIProc  *OCIProc `json:"oci_proc,omitempty"`
	StartFD  int      `json:"start_fd,omitempty"`
	ReportFD int      `json:"report_fd,omitempty"`
	// ExitFD (OCI, ward.report), when above 0: the init stays as PID 1,
	// forks the program's process and writes the program's exit record
	// (ExitRecord's JSON) to this fd when it is reaped.
	ExitFD int `json:"exit_fd,omitempty"`
	// PreserveFDs (OCI, --preserve-fds), when above 0: the init's fds
	// PreserveFD..PreserveFD+PreserveFDs-1 (ward join's, for exec) become
	// the program's 3..3+PreserveFDs-1 as it execs; nothing else of
	// ward's stays open.
	PreserveFD  int `json:"preserve_fd,omitempty"`
	PreserveFDs int `json:"preserve_fds,omitempty"`
	// Console (OCI: process.terminal): the program's process allocates a
	// pty from the container's devpts, makes the slave its stdio and
	// controlling terminal, and sends the master up (Stdio.Console), of
	// ConsoleRows x ConsoleCols (0: the kernel's size).
	Console     bool   `json:"console,omitempty"`
	ConsoleRows uint16 `json:"console_rows,omitempty"`
	ConsoleCols uint16 `json:"console_cols,omitempty"`
	// OCI hooks the container runs itself (hooks_linux.c): CreateHooks
	// (createContainer) by the init before the host's root is detached,
	// StartHooks (startContainer) by the container's process once start
	// opened the exec fifo. HookState is the state JSON on their stdin.
	// RuntimeHooks: the init stops before the host's root is detached
	// while the parent runs prestart and createRuntime (Options.Hooks).
	CreateHooks, StartHooks []Hook `json:"-"`
	HookState               []byte `json:"-"`
	RuntimeHooks            bool   `json:"-"`
	// TTY: the program stays in the caller's session and process group.
	TTY bool `json:"tty"`
	// Seccomp are the BPF filters the gate loads last, in order.
	Seccomp []seccomp.Program `json:"seccomp,omitempty"`
	// SeccompNotify names the built-in policy whose denials the init
	// decides and counts (verbose mode): Seccomp is then the single filter
	// of seccomp.CompileNotify, loaded with a listener that the gate hands
	// to the init.
	SeccompNotify string `json:"seccomp_notify,omitempty"`
	// CgroupFDs is how many cgroup.procs files (fds 4...) the gate writes
	// itself into before exec.
	CgroupFDs int `json:"cgroup_fds"`
	// Landlock is the second layer's policy (nil: none); the init builds
	// the ruleset once the root is complete and every program's process
	// enforces it after no_new_privs.
	Landlock *fs.Landlock `json:"landlock,omitempty"`
}

// OCIProc is what an OCI container's process (or an exec'd command's)
// takes from config.json on top of ward's steps (spawn_linux.c).
type OCIProc struct {
	// NoNewPrivs is process.noNewPrivileges: false leaves no_new_privs
	// unset (the seccomp filters then load before the capabilities go).
	NoNewPrivs bool `json:"nnp"`
	// Groups are exactly the supplementary groups (additionalGids).
	Groups []uint32 `json:"groups,omitempty"`
	// Umask is the umask (0022 when config.json gives none, as runc).
	Umask uint32 `json:"umask"`
	// OOMScoreAdj, when set, is written before the privileges go.
	OOMScoreAdj *int `json:"oom_score_adj,omitempty"`
	// Rlimits are set after ward's own, in order.
	Rlimits []Rlimit `json:"rlimits,omitempty"`
	// Sysctl are "key=value", written in order by the container's init
	// before it builds the root (not for an exec'd command).
	Sysctl []string `json:"sysctl,omitempty"`
}

// Rlimit is one resource limit: an RLIMIT_* number, soft and hard.
type Rlimit struct {
	Resource int    `json:"resource"`
	Soft     uint64 `json:"soft"`
	Hard     uint64 `json:"hard"`
}

// Hook is an OCI hook (runtime-spec's): its absolute path, its argv
// (Args[0] first; none: the path), only its Env, killed after Timeout
// seconds (0: never).
type Hook struct {
	Path      string
	Args, Env []string
	Timeout   int
}

// Exit is how the program ended, with the resource use of every process
// the init reaped.
type Exit struct {
	Code     int   `json:"code"`   // exit code when it exited, else -1
	Signal   int   `json:"signal"` // the signal that killed it, else 0
	UserUs   int64 `json:"user_us"`
	SysUs    int64 `json:"sys_us"`
	MaxRSSKB int64 `json:"maxrss_kb"`
	// Voluntary and forced context switches (isolate's csw-*).
	NVCSw  int64 `json:"nvcsw"`
	NIVCSw int64 `json:"nivcsw"`
	// KeepError says why the overlay's changes could not be kept.
	KeepError string `json:"keep_error,omitempty"`
	// Denied are the syscalls the policy denied (SeccompNotify only).
	Denied []seccomp.Denial `json:"denied,omitempty"`
	Reaped int              `json:"reaped"`
	// WallUs is the program's own time: from its exec (the instant its
	// process, done with its steps, calls execve) to the init reaping it.
	WallUs int64 `json:"wall_us,omitempty"`
	// TimedOut: the init ended the program at Spec.TimeLimitUs.
	TimedOut bool `json:"timed_out,omitempty"`
}

// StepTime is how long one setup step took, and which side of the fork
// ran it: "parent" (ward), "init", or "program" (the program's process
// before exec).
type StepTime struct {
	Step string `json:"step"`
	Us   int64  `json:"us"`
	Side string `json:"side,omitempty"`
}

// MonoUs is CLOCK_MONOTONIC in microseconds: one clock on both sides of
// the fork (ward makes no time namespace).
func MonoUs() int64 { return monoUs() }

func monoUs() int64 {
	var ts unix.Timespec
	_ = unix.ClockGettime(unix.CLOCK_MONOTONIC, &ts)
	return ts.Nano() / 1000
}

// Msg is one line of the protocol, from the init.
type Msg struct {
	Type string `json:"type"`
	Step string `json:"step,omitempty"`
	// What is the operation that failed (error), on Path; the parent
	// words Message from them (setupError) unless the init sent one.
	What    string `json:"what,omitempty"`
	Path    string `json:"path,omitempty"`
	Errno   int    `json:"errno,omitempty"`
	Message string `json:"msg,omitempty"`
	// GateStep and Detail (gate_error) are spawn_linux.h's step and
	// detail: gateError words them.
	GateStep int   `json:"gate_step,omitempty"`
	Detail   int64 `json:"detail,omitempty"`
	// FDs is how many fds came with the message (SCM_RIGHTS).
	FDs int `json:"fds,omitempty"`
	Pid int `json:"pid,omitempty"`
	// ID names the command of a long-lived sandbox a message is about.
	ID    int        `json:"id,omitempty"`
	Exit  *Exit      `json:"exit,omitempty"`
	Steps []StepTime `json:"steps,omitempty"`
	// StartUs and ConfigUs (ready) are when the init's main began and when
	// it had the config (monoUs): the parent derives the Go runtime's start
	// from them. In "started", StartUs is when the program's exec
	// succeeded: its time limit counts from there.
	StartUs  int64 `json:"start_us,omitempty"`
	ConfigUs int64 `json:"config_us,omitempty"`
	// Landlock (ready) is the ABI of the Landlock ruleset every program
	// gets (0: none), LandlockNote why none where it was asked for.
	Landlock     int    `json:"landlock,omitempty"`
	LandlockNote string `json:"landlock_note,omitempty"`
}

// setupError is the error an "error" message reports.
func (m *Msg) setupError() *SetupError {
	msg := m.Message
	if msg == "" {
		msg = m.What
		if m.Path != "" {
			msg += " " + m.Path
		}
		if m.Errno != 0 {
			msg += ": " + syscall.Errno(m.Errno).Error()
		}
	}
	return &SetupError{Step: m.Step, Path: m.Path, Errno: syscall.Errno(m.Errno), Msg: msg}
}

// SetupError is a failed setup step, on either side of the fork.
type SetupError struct {
	Step  string
	Path  string
	Errno syscall.Errno
	Msg   string
}

func (e *SetupError) Error() string {
	s := e.Step + ": " + e.Msg
	if hint := hintFor(e); hint != "" {
		s += " (" + hint + ")"
	}
	return s
}

// Unwrap lets errors.Is(err, syscall.EPERM) and friends work.
func (e *SetupError) Unwrap() error {
	if e.Errno == 0 {
		return nil
	}
	return e.Errno
}

// ExecError is a program that could not be started: not found (127) or not
// executable (126).
type ExecError struct {
	Path  string
	Errno syscall.Errno
}

func (e *ExecError) Error() string {
	if e.Errno == syscall.ENOENT {
		return fmt.Sprintf("%s: command not found", e.Path)
	}
	return fmt.Sprintf("%s: cannot execute: %v", e.Path, e.Errno)
}

// ExitCode is the shell's convention: 127 not found, 126 not executable.
func (e *ExecError) ExitCode() int {
	if e.Errno == syscall.ENOENT {
		return 127
	}
	return 126
}

// hintFor tells the operator what to do about the usual setup failures.
func hintFor(e *SetupError) string {
	denied := e.Errno == syscall.EPERM || e.Errno == syscall.EACCES
	switch {
	case e.Step == "clone" && (denied || e.Errno == syscall.ENOSPC || e.Errno == syscall.EINVAL || e.Errno == syscall.EUSERS):
		return usernsHint(procSys, os.Geteuid() != 0, inContainer())
	case denied && (e.Step == "make-mounts-private" || e.Step == "enter-new-root"):
		// The namespace came, without the capabilities it should hold:
		// AppArmor's restriction does exactly that.
		if os.Geteuid() != 0 && procSys("kernel.apparmor_restrict_unprivileged_userns") == "1" {
			return usernsHint(procSys, true, false)
		}
		return "the sandbox's own user namespace holds no capabilities here; a security module (AppArmor, SELinux) or a container's profile may be removing them"
	case denied && e.Step == "create-cgroup":
		return "ward creates its cgroups under its own: as root, with the cgroup file systems writable; as another user, in a delegated cgroup v2 subtree"
	}
	return ""
}

// procSys reads a /proc/sys knob, "" when absent.
func procSys(name string) string {
	b, err := os.ReadFile("/proc/sys/" + strings.ReplaceAll(name, ".", "/"))
	if err != nil {
		return ""
	}
	return strings.TrimSpace(string(b))
}

// usernsHint names what keeps this host from giving ward a user namespace,
// and the fix, from the knobs and markers read through sysctl (a
// parameter, for the tests).
func usernsHint(sysctl func(string) string, unprivileged, container bool) string {
	switch {
	case sysctl("user.max_user_namespaces") == "0":
		return "user namespaces are off: sysctl user.max_user_namespaces is 0; set it above 0 (sysctl -w user.max_user_namespaces=15000)"
	case unprivileged && sysctl("kernel.unprivileged_userns_clone") == "0":
		return "this kernel refuses user namespaces to ordinary users: sysctl kernel.unprivileged_userns_clone is 0; set it to 1, or run ward as root"
	case unprivileged && sysctl("kernel.apparmor_restrict_unprivileged_userns") == "1":
		return "AppArmor restricts user namespaces to programs with a profile that allows them (kernel.apparmor_restrict_unprivileged_userns=1, Ubuntu 23.10 and later): install ward with make install, which loads its profile, or set that sysctl to 0"
	case seccompFiltered():
		return "this process runs under a seccomp filter (Seccomp: 2 in /proc/self/status) that refuses new namespaces: inside a ward sandbox, give the outer ward --allow-nested (config allow_nested = true); inside a container, see its seccomp profile"
	case container:
		return "this looks like a container whose seccomp profile refuses new namespaces (Docker's and Podman's defaults do without CAP_SYS_ADMIN): run the container with --security-opt seccomp=unconfined (and --security-opt apparmor=unconfined where AppArmor confines it), or a seccomp profile that allows clone, unshare and setns with namespace flags"
	}
	return "ward needs user, PID and mount namespaces: check sysctl user.max_user_namespaces > 0, and any security module or seccomp profile ward runs under"
}

// seccompFiltered: this process runs under a seccomp filter.
var seccompFiltered = func() bool {
	b, err := os.ReadFile("/proc/self/status")
	return err == nil && strings.Contains(string(b), "\nSeccomp:\t2")
}

// inContainer: the markers Docker and Podman leave.
func inContainer() bool {
	for _, p := range []string{"/.dockerenv", "/run/.containerenv"} {
		if _, err := os.Stat(p); err == nil {
			return true
		}
	}
	return false
}

// ExecRequest is a command for a long-lived sandbox (Sandbox.Exec): the
// parent packs its gate for the init (execRequest).
type ExecRequest struct {
	ID   int
	Args []string
	Env  []string
	Dir  string
}
