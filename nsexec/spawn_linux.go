package nsexec

/*
#cgo CFLAGS: -Wall -Wextra -Werror
#include <stdlib.h>
#include <string.h>
#include "spawn_linux.h"
*/
import "C"

import (
	"errors"
	"fmt"
	"os"
	"syscall"
	"unsafe"

	"golang.org/x/sys/unix"

	"github.com/wardbox/ward/seccomp"
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

// gate is the program's process until it execs the program.
type gate struct {
	pid    int
	report int      // our end of the report socket
	wake   *os.File // the write end of the wait pipe (nil: it does not wait)
}

// spawnGate forks the program's process for spec with stdio as its 0, 1
// and 2 (nil: the init's own). With wait it enters the cgroup at once and
// waits for release before the rest.
func spawnGate(spec *Spec, stdio *[3]int, wait bool) (*gate, *Msg) {
	fds, err := unix.Socketpair(unix.AF_UNIX, unix.SOCK_SEQPACKET|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		return nil, errMsg(gateSteps[C.WARD_STEP_FORK], "socketpair", err)
	}
	g, free, failed := buildGate(spec, stdio)
	if failed != nil {
		unix.Close(fds[0])
		unix.Close(fds[1])
		return nil, failed
	}
	defer free()
	var wakeR, wakeW *os.File
	if wait {
		if wakeR, wakeW, err = os.Pipe(); err != nil {
			unix.Close(fds[0])
			unix.Close(fds[1])
			return nil, errMsg(gateSteps[C.WARD_STEP_FORK], "pipe", err)
		}
		defer wakeR.Close()
		g.wait_fd = C.int(wakeR.Fd())
	}
	g.report_fd = C.int(fds[1])
	pid := int(C.ward_spawn(g))
	unix.Close(fds[1])
	if pid < 0 {
		unix.Close(fds[0])
		if wakeW != nil {
			wakeW.Close()
		}
		return nil, errMsg(gateSteps[C.WARD_STEP_FORK], "clone", syscall.Errno(-pid))
	}
	return &gate{pid: pid, report: fds[0], wake: wakeW}, nil
}

// haveEarly says whether the constructor in spawn_linux.c forked the
// program's process before the Go runtime started.
func haveEarly() bool { return C.ward_early_pid > 0 }

// sendEarly hands spec to the early child, which goes on from there. If it
// cannot take it (a config larger than the socket's buffer), the child is
// ended and the init forks another.
func sendEarly(spec *Spec) (*gate, *Msg) {
	pid, fd := int(C.ward_early_pid), int(C.ward_early_fd)
	C.ward_early_pid, C.ward_early_fd = -1, -1
	g, free, failed := buildGate(spec, nil)
	if failed == nil {
		e := C.ward_send_gate_to(g, C.int(fd))
		free()
		if e == 0 {
			return &gate{pid: pid, report: fd}, nil
		}
	}
	_ = unix.Kill(pid, unix.SIGKILL)
	unix.Close(fd)
	if failed != nil {
		return nil, failed
	}
	return spawnGate(spec, nil, false)
}

// buildGate fills spawn_linux.h's struct for spec, in C memory that free
// releases.
func buildGate(spec *Spec, stdio *[3]int) (*C.struct_ward_gate, func(), *Msg) {
	if spec.CgroupFDs > C.WARD_MAX_CGROUPS || len(spec.Seccomp) > C.WARD_MAX_FILTERS {
		return nil, nil, &Msg{Type: MsgError, Step: gateSteps[C.WARD_STEP_FORK], Message: fmt.Sprintf("%d cgroup files, %d filters: too many", spec.CgroupFDs, len(spec.Seccomp))}
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
	g.stdio = [3]C.int{-1, -1, -1}
	if stdio != nil {
		g.stdio = [3]C.int{C.int(stdio[0]), C.int(stdio[1]), C.int(stdio[2])}
	}
	g.setpgid = 1
	if spec.TTY {
		g.setpgid = 0
	}
	g.ncgroup = C.int(spec.CgroupFDs)
	for i := 0; i < spec.CgroupFDs; i++ {
		g.cgroup_fds[i] = C.int(C.WARD_CGROUP_FD0 + i)
	}
	g.wait_fd, g.report_fd = -1, -1
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
	g.landlock_fd = -1
	if spec.Landlock != nil && spec.LandlockFD >= 0 {
		g.landlock_fd = C.int(spec.LandlockFD)
	}
	if spec.SeccompNotify != "" {
		g.notify = 1
	}
	g.nfilters = C.int(len(spec.Seccomp))
	for i, p := range spec.Seccomp {
		if len(p) == 0 || len(p)%8 != 0 || len(p)/8 > 0xffff {
			free()
			return nil, nil, &Msg{Type: MsgError, Step: gateSteps[C.WARD_STEP_SECCOMP], Message: fmt.Sprintf("filter %d: %d bytes is not a BPF program", i, len(p))}
		}
		g.filter_len[i] = C.uint16_t(len(p) / 8)
		g.filters[i] = C.CBytes(p)
		cstrs = append(cstrs, g.filters[i])
	}
	g.dir, g.file, g.path = cstr(spec.Dir), cstr(spec.Args[0]), cstr(envPath(spec.Env))
	g.argv, g.envp = cvec(spec.Args), cvec(spec.Env)
	return g, free, nil
}

func errMsg(step, what string, err error) *Msg {
	var en syscall.Errno
	errors.As(err, &en)
	return &Msg{Type: MsgError, Step: step, Message: what + ": " + err.Error(), Errno: int(en)}
}

// wait lets a waiting gate go on and waits until it execs the program
// (nil) or reports why it could not (the message to relay). It returns the
// gate's step timings, and in notify mode the seccomp listener, serving.
func (g *gate) wait(spec *Spec) (*Msg, []StepTime, *seccomp.Listener) {
	defer unix.Close(g.report)
	if g.wake != nil {
		_, err := g.wake.Write([]byte{1})
		g.wake.Close()
		if err != nil {
			return errMsg(gateSteps[C.WARD_STEP_FORK], "wake the program's process", err), nil, nil
		}
	}
	var (
		rep      C.struct_ward_report
		steps    []StepTime
		listener *seccomp.Listener
		timed    bool
	)
	buf := unsafe.Slice((*byte)(unsafe.Pointer(&rep)), C.sizeof_struct_ward_report)
	for {
		n, err := unix.Read(g.report, buf)
		if err == unix.EINTR {
			continue
		}
		if err == nil && n == 0 && timed {
			return nil, steps, listener // exec closed the socket
		}
		if err != nil || n == 0 {
			// It died before exec without a word: killed, most likely.
			return &Msg{Type: MsgError, Step: gateSteps[C.WARD_STEP_EXEC], Message: fmt.Sprintf("the program's process ended before it could exec %s (read: %v)", spec.Args[0], err)}, steps, listener
		}
		switch rep.kind {
		case C.WARD_REPORT_LISTENER:
			// Take the listener out of the child (it waits for the answer):
			// 1 when the init has it, 0 when not (the child then fails).
			ok := byte(0)
			if fd, err := takeFd(g.pid, int(rep.detail)); err == nil {
				listener = seccomp.NewListener(fd, seccomp.Builtin(spec.SeccompNotify))
				go listener.Serve()
				ok = 1
			}
			if _, err := unix.Write(g.report, []byte{ok}); err != nil {
				return errMsg(gateSteps[C.WARD_STEP_SECCOMP], "answer the program's process", err), steps, listener
			}
		case C.WARD_REPORT_TIMINGS:
			timed = true
			for i := 0; i < C.WARD_STEP_EXEC; i++ {
				steps = append(steps, StepTime{Step: gateSteps[i], Us: int64(rep.us[i]), Side: "program"})
			}
		case C.WARD_REPORT_EXEC_ERROR:
			return &Msg{Type: MsgExecError, Path: spec.Args[0], Errno: int(rep.err)}, steps, listener
		case C.WARD_REPORT_ERROR:
			return gateError(spec, int(rep.step), syscall.Errno(rep.err), int64(rep.detail)), steps, listener
		}
	}
}

// takeFd duplicates fd of process pid into this one (pidfd_getfd: the init
// may, it holds CAP_SYS_PTRACE in the sandbox's user namespace).
func takeFd(pid, fd int) (int, error) {
	pidfd, err := unix.PidfdOpen(pid, 0)
	if err != nil {
		return -1, err
	}
	defer unix.Close(pidfd)
	return unix.PidfdGetfd(pidfd, fd, 0)
}

// gateError says what a step of spawn_linux.c was doing when it failed.
func gateError(spec *Spec, step int, errno syscall.Errno, detail int64) *Msg {
	if step < 0 || step >= len(gateSteps) {
		return &Msg{Type: MsgError, Step: gateSteps[C.WARD_STEP_FORK], Message: fmt.Sprintf("step %d: %v", step, errno), Errno: int(errno)}
	}
	m := &Msg{Type: MsgError, Step: gateSteps[step], Errno: int(errno)}
	var what, hint string
	switch step {
	case C.WARD_STEP_STDIO:
		what = fmt.Sprintf("set up fd %d", detail)
		if detail < 0 {
			what = "close the inherited fds"
		}
	case C.WARD_STEP_FORK:
		what = fmt.Sprintf("take the config (detail %d)", detail)
	case C.WARD_STEP_SESSION:
		what = "setpgid"
	case C.WARD_STEP_CGROUP:
		what, hint = fmt.Sprintf("write 0 to cgroup.procs (fd %d)", detail), " (ward needs Linux 5.16 or later)"
	case C.WARD_STEP_RLIMITS:
		names := map[int64]string{unix.RLIMIT_NOFILE: "RLIMIT_NOFILE", unix.RLIMIT_CORE: "RLIMIT_CORE", unix.RLIMIT_CPU: "RLIMIT_CPU", unix.RLIMIT_FSIZE: "RLIMIT_FSIZE", unix.RLIMIT_NPROC: "RLIMIT_NPROC", unix.RLIMIT_DATA: "RLIMIT_DATA"}
		what = "setrlimit " + names[detail]
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
		what = [...]string{fmt.Sprintf("setgroups(%d)", spec.GID), fmt.Sprintf("setresgid(%d)", spec.GID), fmt.Sprintf("setresuid(%d)", spec.UID)}[detail%3]
	case C.WARD_STEP_CAPS:
		what = [...]string{"capset", "capget", "capabilities still set after capset"}[detail%3]
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
	m.Message = fmt.Sprintf("%s: %v%s", what, errno, hint)
	return m
}
