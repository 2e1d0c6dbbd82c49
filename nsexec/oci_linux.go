package nsexec

/*
#include "init_linux.h"
*/
import "C"

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"runtime"
	"strconv"
	"syscall"
	"unsafe"

	"golang.org/x/sys/unix"
)

// Create starts an OCI container's init (ward-oci create) and returns its
// pid on the host once the container is set up and waits for start: the
// init built the root, then turned into the program's process itself (the
// same steps as ward run's program's process, spawn_linux.c), entered the
// cgroup, dropped its privileges and now blocks opening the exec fifo
// (fifo, opened here O_PATH) for writing. Nothing of ward's stays behind:
// the init's parent is the caller of Create, whose exit re-parents it to
// the caller's subreaper (containerd's shim, conmon), which reaps it and
// learns the program's exit status. On error the init is killed and
// reaped.
func Create(spec *Spec, fifo string, stdio Stdio, opt Options) (int, error) {
	start, err := os.OpenFile(fifo, unix.O_PATH|unix.O_CLOEXEC, 0)
	if err != nil {
		return 0, &SetupError{Step: "open-exec-fifo", Errno: errno(err), Msg: err.Error()}
	}
	defer start.Close()
	sv, err := unix.Socketpair(unix.AF_UNIX, unix.SOCK_SEQPACKET|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		return 0, &SetupError{Step: "socketpair", Errno: errno(err), Msg: err.Error()}
	}
	report := os.NewFile(uintptr(sv[0]), "ward-report")
	theirs := os.NewFile(uintptr(sv[1]), "ward-report-init")
	defer report.Close()
	files := Files{list: append([]*os.File{}, opt.Files...)}
	spec.OCI, spec.StartFD, spec.ReportFD = true, files.Add(start), files.Add(theirs)
	spec.PreserveFD, spec.PreserveFDs = files.Next(), len(stdio.Preserve)
	for _, f := range stdio.Preserve {
		files.Add(f)
	}
	spec.RuntimeHooks = opt.Hooks != nil
	opt.Files, opt.OCI, opt.Session = files.List(), true, false
	sb, err := Start(spec, stdio, opt)
	theirs.Close()
	if err != nil {
		return 0, err
	}
	if err := sb.waitCreated(report, opt.Hooks, stdio.Console); err != nil {
		sb.Kill()
		_ = sb.cmd.Wait()
		sb.conn.Close()
		return 0, err
	}
	pid := sb.cmd.Process.Pid
	// The init is on its own now: no Wait (its parent's exit hands it to
	// the subreaper), and the protocol socket is done with.
	_ = sb.cmd.Process.Release()
	sb.conn.Close()
	return pid, nil
}

// waitCreated reads the init's messages until "ready" (or its error),
// running the runtime's hooks when the init says "hooks" (init_linux.c's
// table), then the report socket of the program's steps until "waiting";
// a pty master on the way goes to console.
func (sb *Sandbox) waitCreated(report *os.File, hooks func(pid int) error, console func(*os.File) error) error {
	ready := false
	for m := range sb.msgs {
		switch m.Type {
		case MsgReady:
			ready = true
		case MsgError:
			return m.setupError()
		case MsgHooks:
			if hooks == nil {
				return &SetupError{Step: "runtime-hooks", Msg: "the init waits for hooks nobody runs"}
			}
			if err := hooks(sb.cmd.Process.Pid); err != nil {
				return err
			}
			if _, err := sb.conn.Write([]byte{1}); err != nil {
				return &SetupError{Step: "runtime-hooks", Errno: errno(err), Msg: "tell the init to go on: " + err.Error()}
			}
		}
		if ready {
			break
		}
	}
	if !ready {
		return &SetupError{Step: "init", Msg: "the container's init exited during setup"}
	}
	var r C.struct_ward_report
	for {
		n, master, err := recvReport(report, &r)
		if err != nil || n != C.sizeof_struct_ward_report {
			return &SetupError{Step: "init", Errno: errno(err), Msg: "the container's process ended during setup"}
		}
		switch r.kind {
		case C.WARD_REPORT_CONSOLE:
			if err := takeConsole(master, console); err != nil {
				return err
			}
		case C.WARD_REPORT_WAITING:
			return nil
		case C.WARD_REPORT_ERROR:
			return gateError(sb.spec, int(r.step), syscall.Errno(r.err), int64(r.detail))
		case C.WARD_REPORT_EXEC_ERROR:
			return &ExecError{Path: sb.spec.Args[0], Errno: syscall.Errno(r.err)}
		default:
			return &SetupError{Step: "init", Msg: fmt.Sprintf("report kind %d before the exec fifo", r.kind)}
		}
	}
}

// joinOrder are the namespaces a command joins, in order: the user
// namespace first (the rest are owned by it), the mount namespace last
// (it changes the root the others' paths were opened from).
var joinOrder = []string{"user", "ipc", "uts", "net", "cgroup", "pid", "mnt"}

// Join runs spec's program in the namespaces of process pid (an OCI
// container's; ward-oci exec) and in its cgroup (cgroupProcs, its
// cgroup.procs files), with stdio as its 0, 1 and 2, through the same
// steps as every program's process (spawn_linux.c's joiner, then its early
// child). It returns the program's pid on the host once it exec'd; the
// process is then a child of the joiner, which has exited: it re-parents
// to the nearest subreaper.
func Join(spec *Spec, pid int, cgroupProcs []*os.File, stdio Stdio) (int, error) {
	sv, err := unix.Socketpair(unix.AF_UNIX, unix.SOCK_SEQPACKET|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		return 0, &SetupError{Step: "socketpair", Errno: errno(err), Msg: err.Error()}
	}
	ours := os.NewFile(uintptr(sv[0]), "ward-join")
	theirs := os.NewFile(uintptr(sv[1]), "ward-join-child")
	defer ours.Close()
	defer theirs.Close()
	files := append([]*os.File{theirs}, cgroupProcs...)
	nns := 0
	for _, ns := range joinOrder {
		f, err := os.Open(fmt.Sprintf("/proc/%d/ns/%s", pid, ns))
		if err != nil {
			return 0, &SetupError{Step: "join-namespaces", Errno: errno(err), Msg: err.Error()}
		}
		defer f.Close()
		var a, b unix.Stat_t
		if unix.Fstat(int(f.Fd()), &a) == nil && unix.Stat("/proc/self/ns/"+ns, &b) == nil && a.Ino == b.Ino && a.Dev == b.Dev {
			continue // ours already (joining one's own user namespace is an error)
		}
		files = append(files, f)
		nns++
	}
	spec.CgroupFDs = len(cgroupProcs)
	// The preserved files follow the namespaces' (ExtraFiles[i] is fd 3+i).
	spec.PreserveFD, spec.PreserveFDs = 3+len(files), len(stdio.Preserve)
	files = append(files, stdio.Preserve...)
	gate, err := packGate(spec)
	if err != nil {
		return 0, err
	}
	cmd := &exec.Cmd{Path: "/proc/self/exe", Args: []string{initArgv0, C.WARD_JOIN_ARG, strconv.Itoa(len(cgroupProcs)), strconv.Itoa(nns)},
		Env: []string{}, Dir: "/", Stdin: stdio.Stdin, Stdout: stdio.Stdout, Stderr: stdio.Stderr, ExtraFiles: files}
	if err := cmd.Start(); err != nil {
		return 0, &SetupError{Step: "join-namespaces", Errno: errno(err), Msg: err.Error()}
	}
	theirs.Close()
	var msg [2]int32
	n, rerr := unix.Read(int(ours.Fd()), unsafe.Slice((*byte)(unsafe.Pointer(&msg[0])), 8))
	_ = cmd.Wait()
	switch {
	case rerr != nil || n != 8:
		return 0, &SetupError{Step: "join-namespaces", Errno: errno(rerr), Msg: fmt.Sprintf("the joiner ended without a word (%v)", cmd.ProcessState)}
	case msg[0] < 0 && msg[1] >= 0:
		return 0, &SetupError{Step: "join-namespaces", Errno: syscall.Errno(-msg[0]), Msg: fmt.Sprintf("setns (namespace %d of %d): %v", msg[1]+1, nns, syscall.Errno(-msg[0]))}
	case msg[0] < 0:
		return 0, &SetupError{Step: "join-namespaces", Errno: syscall.Errno(-msg[0]), Msg: fmt.Sprintf("fork: %v", syscall.Errno(-msg[0]))}
	}
	child := int(msg[0])
	if err := unix.Sendmsg(int(ours.Fd()), gate, nil, nil, 0); err != nil {
		killReap(child)
		return 0, &SetupError{Step: "join-namespaces", Errno: errno(err), Msg: "send the command's config: " + err.Error()}
	}
	if err := readJoinReports(ours, spec, stdio.Console); err != nil {
		killReap(child)
		return 0, err
	}
	return child, nil
}

// killReap ends a command's process that failed to start, and reaps it
// when it is the caller's child (a caller that is its subreaper, as
// ward-oci exec waiting for it): a zombie left in the container's PID
// namespace holds its init, killed later, in the kernel's wait for the
// namespace to empty until whoever inherits the zombie reaps it. Not the
// caller's child, wait4 fails at once and the caller's subreaper reaps it.
func killReap(child int) {
	_ = unix.Kill(child, unix.SIGKILL)
	for {
		_, err := unix.Wait4(child, nil, 0, nil)
		if !errors.Is(err, unix.EINTR) {
			return
		}
	}
}

// readJoinReports reads the command's process's reports until its exec
// (EOF after "timings") or its failure; a pty master on the way goes to
// console.
func readJoinReports(sock *os.File, spec *Spec, console func(*os.File) error) error {
	var r C.struct_ward_report
	timed := false
	for {
		n, master, err := recvReport(sock, &r)
		if n == 0 && err == nil && timed {
			return nil
		}
		if err != nil || n != C.sizeof_struct_ward_report {
			return gateError(spec, C.WARD_STEP_EXEC, errno(err), -1)
		}
		switch r.kind {
		case C.WARD_REPORT_CONSOLE:
			if err := takeConsole(master, console); err != nil {
				return err
			}
		case C.WARD_REPORT_TIMINGS:
			timed = true
		case C.WARD_REPORT_ERROR:
			return gateError(spec, int(r.step), syscall.Errno(r.err), int64(r.detail))
		case C.WARD_REPORT_EXEC_ERROR:
			return &ExecError{Path: spec.Args[0], Errno: syscall.Errno(r.err)}
		}
	}
}

// recvReport reads one report of the program's process from sock into r,
// with the fd that came along (SCM_RIGHTS, only with "console": the pty
// master, named /dev/pts/N; any other is closed).
func recvReport(sock *os.File, r *C.struct_ward_report) (int, *os.File, error) {
	buf := unsafe.Slice((*byte)(unsafe.Pointer(r)), C.sizeof_struct_ward_report)
	oob := make([]byte, unix.CmsgSpace(4*4))
	for {
		n, oobn, _, _, err := unix.Recvmsg(int(sock.Fd()), buf, oob, unix.MSG_CMSG_CLOEXEC)
		if errors.Is(err, unix.EINTR) {
			continue
		}
		var fds []int
		if err == nil && oobn > 0 {
			msgs, _ := unix.ParseSocketControlMessage(oob[:oobn])
			for i := range msgs {
				got, _ := unix.ParseUnixRights(&msgs[i])
				fds = append(fds, got...)
			}
		}
		var f *os.File
		for _, fd := range fds {
			if f == nil && n == len(buf) && r.kind == C.WARD_REPORT_CONSOLE {
				f = os.NewFile(uintptr(fd), "/dev/pts/"+strconv.FormatInt(int64(r.detail), 10))
				continue
			}
			unix.Close(fd)
		}
		return n, f, err
	}
}

// takeConsole hands the pty master of a "console" report to console (the
// caller's Stdio.Console).
func takeConsole(master *os.File, console func(*os.File) error) error {
	step := gateSteps[C.WARD_STEP_CONSOLE]
	switch {
	case master == nil:
		return &SetupError{Step: step, Msg: "the pty master did not come with its report"}
	case console == nil:
		master.Close()
		return &SetupError{Step: step, Msg: "a pty came that the caller did not ask for"}
	}
	return console(master)
}

// MqueueIn mounts a new mqueue file system of the IPC namespace at ipcPath
// (an OCI container's, joined by path: a pod's) and returns it detached
// (fsmount: in no mount namespace), for the init to attach by fd. The
// init, root of ward's user namespace only, may not mount one for an IPC
// namespace host root owns; the caller may. An mqueue file system shows
// the IPC namespace of whoever mounts it, so a thread joins it first; that
// thread then ends with its goroutine, never going back to the runtime.
func MqueueIn(ipcPath string) (*os.File, error) {
	ns, err := os.Open(ipcPath)
	if err != nil {
		return nil, &SetupError{Step: "mount-mqueue", Path: ipcPath, Errno: errno(err), Msg: err.Error()}
	}
	defer ns.Close()
	type result struct {
		f   *os.File
		err error
	}
	c := make(chan result, 1)
	go func() {
		runtime.LockOSThread() // never unlocked: the thread ends in that namespace
		fail := func(what string, err error) {
			c <- result{err: &SetupError{Step: "mount-mqueue", Path: ipcPath, Errno: errno(err), Msg: fmt.Sprintf("%s (IPC namespace %s): %v", what, ipcPath, err)}}
		}
		if err := unix.Setns(int(ns.Fd()), unix.CLONE_NEWIPC); err != nil {
			fail("setns", err)
			return
		}
		fsfd, err := unix.Fsopen("mqueue", unix.FSOPEN_CLOEXEC)
		if err != nil {
			fail("fsopen mqueue", err)
			return
		}
		defer unix.Close(fsfd)
		if err := unix.FsconfigCreate(fsfd); err != nil {
			fail("fsconfig create", err)
			return
		}
		m, err := unix.Fsmount(fsfd, unix.FSMOUNT_CLOEXEC, unix.MOUNT_ATTR_NOSUID|unix.MOUNT_ATTR_NODEV|unix.MOUNT_ATTR_NOEXEC)
		if err != nil {
			fail("fsmount", err)
			return
		}
		c <- result{f: os.NewFile(uintptr(m), "mqueue:"+ipcPath)}
	}()
	r := <-c
	return r.f, r.err
}
