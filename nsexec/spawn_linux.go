package nsexec

/*
#cgo CFLAGS: -Wall -Wextra -Werror
#include <stdlib.h>
#include <string.h>
#include "init_linux.h"
*/
import "C"

import (
	"fmt"
	"strconv"
	"strings"
	"syscall"
	"unsafe"

	"golang.org/x/sys/unix"
)

// What Go and C agree on, from spawn_linux.h.
const (
	initArgv0 = C.WARD_ARGV0      // "ward init [N]" is the sandbox init
	initArg   = C.WARD_INIT_ARG   // (N: spawn_linux.c's early child's cgroups)
	protoFd   = C.WARD_PROTO_FD   // the protocol socket in the init (to the parent)
	cgroupFD0 = C.WARD_CGROUP_FD0 // the first fd the init inherits past it
	// ExitSetup (71) is the exit status of a setup failure: the init's, the
	// program's process's before exec, and ward's.
	ExitSetup = C.WARD_EXIT_SETUP
	// MaxGroups is how many supplementary groups an OCI process may have
	// (spawn_linux.h).
	MaxGroups = C.WARD_MAX_GROUPS
)

// gateSteps name the steps of the program's process from fork to exec
// (spawn_linux.c), from spawn_linux.h's WARD_STEPS. The name is what the
// operator sees in "ward: <step>: <cause>".
var gateSteps = func() (names [C.WARD_NSTEPS]string) {
	for i := range names {
		names[i] = C.GoString(C.ward_step_name(C.int(i)))
	}
	return names
}()

// buildGate fills spawn_linux.h's struct for spec, in C memory that free
// releases.
func buildGate(spec *Spec) (*C.struct_ward_gate, func(), *SetupError) {
	if spec.CgroupFDs > C.WARD_MAX_CGROUPS || len(spec.Seccomp) > C.WARD_MAX_FILTERS {
		return nil, nil, &SetupError{Step: gateSteps[C.WARD_STEP_FORK], Msg: fmt.Sprintf("%d cgroup files, %d filters: too many", spec.CgroupFDs, len(spec.Seccomp))}
	}
	g := (*C.struct_ward_gate)(C.calloc(1, C.sizeof_struct_ward_gate))
	var cstrs []unsafe.Pointer
	free := func() {
		for _, p := range cstrs {
			C.free(p)
		}
		C.free(unsafe.Pointer(g))
	}
	cstr := func(s string) *C.char {
		c := C.CString(s)
		cstrs = append(cstrs, unsafe.Pointer(c))
		return c
	}
	cvec := func(ss []string) **C.char {
		v := (**C.char)(C.calloc(C.size_t(len(ss)+1), C.size_t(unsafe.Sizeof(uintptr(0)))))
		cstrs = append(cstrs, unsafe.Pointer(v))
		vs := unsafe.Slice(v, len(ss)+1)
		for i, s := range ss {
			vs[i] = cstr(s)
		}
		return v
	}
	g.stdio = [3]C.int{-1, -1, -1} // the init's, or a command's (the init fills them in)
	g.setpgid = 1
	if spec.TTY {
		g.setpgid = 0
	}
	g.ncgroup = C.int(spec.CgroupFDs)
	for i := 0; i < spec.CgroupFDs; i++ {
		g.cgroup_fds[i] = C.int(C.WARD_CGROUP_FD0 + i)
	}
	g.wait_fd, g.report_fd, g.start_fd = -1, -1, -1
	g.nofile, g.nofile_hard = C.uint64_t(spec.NoFile), C.uint64_t(spec.NoFileHard)
	g.cpu_seconds, g.file_size = C.uint64_t(spec.CPUSeconds), C.uint64_t(spec.FileSize)
	if spec.FileSize > 0 {
		g.ignore_xfsz = 1
	}
	g.uid, g.gid = C.int(spec.UID), C.int(spec.GID)
	g.nproc, g.data = C.uint64_t(spec.NProc), C.uint64_t(spec.DataBytes)
	if spec.KeepGroups {
		g.keep_groups = 1
	}
	if spec.NestUserns {
		g.nest_userns = 1
	}
	if spec.KeepCgroupNS {
		g.keep_cgroupns = 1
	}
	g.landlock_fd = -1 // the init's ruleset, which it fills in
	if spec.PreserveFDs > 0 {
		g.preserve_fd, g.npreserve = C.int(spec.PreserveFD), C.int(spec.PreserveFDs)
	}
	if c := spec.Caps; c != nil {
		g.oci_caps = 1
		g.cap_bounding, g.cap_effective, g.cap_permitted = C.uint64_t(c[0]), C.uint64_t(c[1]), C.uint64_t(c[2])
		g.cap_inheritable, g.cap_ambient = C.uint64_t(c[3]), C.uint64_t(c[4])
	}
	if o := spec.OCIProc; o != nil {
		if len(o.Groups) > C.WARD_MAX_GROUPS || len(o.Rlimits) > C.WARD_MAX_RLIMITS {
			free()
			return nil, nil, &SetupError{Step: gateSteps[C.WARD_STEP_FORK], Msg: fmt.Sprintf("%d groups, %d rlimits: too many", len(o.Groups), len(o.Rlimits))}
		}
		if !o.NoNewPrivs {
			g.oci_nnp_off = 1
		}
		g.set_umask, g.umask = 1, C.uint32_t(o.Umask)
		if o.OOMScoreAdj != nil {
			g.set_oom, g.oom_score_adj = 1, C.int(*o.OOMScoreAdj)
		}
		g.oci_proc, g.ngroups = 1, C.int(len(o.Groups))
		for i, gid := range o.Groups {
			g.groups[i] = C.uint32_t(gid)
		}
		g.nrlimits = C.int(len(o.Rlimits))
		for i, rl := range o.Rlimits {
			g.rlimits[i].resource, g.rlimits[i].cur, g.rlimits[i].max = C.int32_t(rl.Resource), C.uint64_t(rl.Soft), C.uint64_t(rl.Hard)
		}
		if len(o.Sysctl) > 0 {
			g.sysctl = cvec(o.Sysctl)
		}
	}
	if spec.SeccompNotify != "" {
		g.notify = 1
	}
	if spec.Console {
		g.console, g.console_rows, g.console_cols = 1, C.uint16_t(spec.ConsoleRows), C.uint16_t(spec.ConsoleCols)
	}
	g.nfilters = C.int(len(spec.Seccomp))
	for i, p := range spec.Seccomp {
		if len(p) == 0 || len(p)%8 != 0 || len(p)/8 > 0xffff {
			free()
			return nil, nil, &SetupError{Step: gateSteps[C.WARD_STEP_SECCOMP], Msg: fmt.Sprintf("filter %d: %d bytes is not a BPF program", i, len(p))}
		}
		g.filter_len[i] = C.uint16_t(len(p) / 8)
		g.filters[i] = C.CBytes(p)
		cstrs = append(cstrs, g.filters[i])
	}
	g.dir, g.file, g.path = cstr(spec.Dir), cstr(spec.Args[0]), cstr(envPath(spec.Env))
	g.argv, g.envp = cvec(spec.Args), cvec(spec.Env)
	return g, free, nil
}

// packGate packs spec's gate (buildGate, ward_pack_gate): the program's
// process's config, which the init forwards to it (spawn_linux.c).
func packGate(spec *Spec) ([]byte, error) {
	g, free, failed := buildGate(spec)
	if failed != nil {
		return nil, failed
	}
	defer free()
	var n C.size_t
	buf := C.ward_pack_gate(g, &n)
	if buf == nil {
		return nil, &SetupError{Step: gateSteps[C.WARD_STEP_FORK], Errno: syscall.ENOMEM, Msg: "pack the program's config: out of memory"}
	}
	defer C.free(unsafe.Pointer(buf))
	return C.GoBytes(unsafe.Pointer(buf), C.int(n)), nil
}

// gateError says what a step of spawn_linux.c was doing when it failed
// (the init relays the step's number, errno and detail: "gate_error").
func gateError(spec *Spec, step int, errno syscall.Errno, detail int64) *SetupError {
	if step < 0 || step >= len(gateSteps) {
		return &SetupError{Step: gateSteps[C.WARD_STEP_FORK], Msg: fmt.Sprintf("step %d: %v", step, errno), Errno: errno}
	}
	m := &SetupError{Step: gateSteps[step], Errno: errno}
	idx := int((detail%3 + 3) % 3)
	var what, hint string
	switch step {
	case C.WARD_STEP_STDIO:
		what = fmt.Sprintf("set up fd %d", detail)
		if detail == -3 {
			what = "close the inherited fds"
		} else if detail < -3 {
			what = "move the preserved fds into place (--preserve-fds)"
		}
	case C.WARD_STEP_FORK:
		what = fmt.Sprintf("take the config (detail %d)", detail)
		if detail == 0 {
			what = "fork"
		}
	case C.WARD_STEP_EXEC:
		// It died before exec without a word: killed, most likely.
		what = "the program's process ended before it could exec " + spec.Args[0]
	case C.WARD_STEP_SESSION:
		what = "setpgid"
	case C.WARD_STEP_CONSOLE:
		what = "detail " + strconv.FormatInt(detail, 10)
		if detail >= 0 && detail < int64(len(consoleSteps)) {
			what = consoleSteps[detail]
		}
	case C.WARD_STEP_CGROUP:
		what, hint = fmt.Sprintf("write 0 to cgroup.procs (fd %d)", detail), " (ward needs Linux 5.16 or later)"
	case C.WARD_STEP_RLIMITS:
		names := map[int64]string{unix.RLIMIT_NOFILE: "RLIMIT_NOFILE", unix.RLIMIT_CORE: "RLIMIT_CORE", unix.RLIMIT_CPU: "RLIMIT_CPU", unix.RLIMIT_FSIZE: "RLIMIT_FSIZE", unix.RLIMIT_NPROC: "RLIMIT_NPROC", unix.RLIMIT_DATA: "RLIMIT_DATA",
			unix.RLIMIT_AS: "RLIMIT_AS", unix.RLIMIT_LOCKS: "RLIMIT_LOCKS", unix.RLIMIT_MEMLOCK: "RLIMIT_MEMLOCK", unix.RLIMIT_MSGQUEUE: "RLIMIT_MSGQUEUE", unix.RLIMIT_NICE: "RLIMIT_NICE",
			unix.RLIMIT_RSS: "RLIMIT_RSS", unix.RLIMIT_RTPRIO: "RLIMIT_RTPRIO", unix.RLIMIT_RTTIME: "RLIMIT_RTTIME", unix.RLIMIT_SIGPENDING: "RLIMIT_SIGPENDING", unix.RLIMIT_STACK: "RLIMIT_STACK"}
		what = "setrlimit " + names[detail]
		if errno == syscall.EPERM {
			hint = " (raising a hard limit needs CAP_SYS_RESOURCE)"
		}
	case C.WARD_STEP_CGROUPNS:
		what = "unshare(CLONE_NEWCGROUP)"
	case C.WARD_STEP_BOUNDING:
		what = fmt.Sprintf("PR_CAPBSET_DROP %d", detail)
		if detail < 0 {
			what = "PR_CAP_AMBIENT_CLEAR_ALL"
		}
	case C.WARD_STEP_SECUREBITS:
		what = fmt.Sprintf("PR_SET_SECUREBITS %#x", detail)
	case C.WARD_STEP_USER:
		what = [...]string{fmt.Sprintf("setgroups(%d)", spec.GID), fmt.Sprintf("setresgid(%d)", spec.GID), fmt.Sprintf("setresuid(%d)", spec.UID)}[idx]
	case C.WARD_STEP_CAPS:
		what = [...]string{"capset", "capget", "capabilities still set after capset"}[idx]
	case C.WARD_STEP_OOM:
		what = fmt.Sprintf("write %d to /proc/self/oom_score_adj", detail)
		if errno == syscall.EACCES || errno == syscall.EPERM {
			hint = " (lowering it below the caller's needs CAP_SYS_RESOURCE)"
		}
	case C.WARD_STEP_NNP:
		what = "PR_SET_NO_NEW_PRIVS"
	case C.WARD_STEP_LANDLOCK:
		what = "landlock_restrict_self"
	case C.WARD_STEP_WORKDIR:
		what, m.Path = "chdir "+spec.Dir, spec.Dir
	case C.WARD_STEP_SECCOMP:
		what = fmt.Sprintf("seccomp filter %d of %d", detail+1, len(spec.Seccomp))
		if spec.SeccompNotify != "" && errno == syscall.EPERM {
			what += ": the init could not take the listener (pidfd_getfd; is ptrace forbidden here, Yama ptrace_scope 3?)"
		}
	}
	m.Msg = what
	if errno != 0 {
		m.Msg += ": " + errno.Error()
	}
	m.Msg += hint
	return m
}

// consoleSteps are step_console's operations, by detail.
var consoleSteps = [...]string{"open /dev/ptmx (the container needs a devpts at /dev/pts and /dev/ptmx linked to pts/ptmx)",
	"unlock the pty", "TIOCGPTN", "open the pty's slave (TIOCGPTPEER)", "set the console size", "give the pty to the process's user",
	"send the pty master up", "make the pty stdin, stdout and stderr", "setsid", "make the pty the controlling terminal (TIOCSCTTY)",
	"make /dev/console", "bind the pty on /dev/console"}

// envPath is the PATH the program's getenv will see: the first.
func envPath(env []string) string {
	for _, e := range env {
		if v, ok := strings.CutPrefix(e, "PATH="); ok {
			return v
		}
	}
	return DefaultPath
}

// DefaultPath is the program's PATH when the caller has none.
const DefaultPath = "/usr/local/bin:/usr/bin:/bin"
