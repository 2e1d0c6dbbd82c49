package nsexec

/*
#include "init_linux.h"
*/
import "C"

import (
	"errors"
	"fmt"
	"os"
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
	opt.Files, opt.OCI, opt.Session = files.List(), true, false
	sb, err := Start(spec, stdio, opt)
	theirs.Close()
	if err != nil {
		return 0, err
	}
	if err := sb.waitCreated(report); err != nil {
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
// then the report socket of the program's steps until "waiting".
func (sb *Sandbox) waitCreated(report *os.File) error {
	ready := false
	for m := range sb.msgs {
		switch m.Type {
		case MsgReady:
			ready = true
		case MsgError:
			return m.setupError()
		}
		if ready {
			break
		}
	}
	if !ready {
		return &SetupError{Step: "init", Msg: "the container's init exited during setup"}
	}
	var r C.struct_ward_report
	buf := unsafe.Slice((*byte)(unsafe.Pointer(&r)), C.sizeof_struct_ward_report)
	for {
		n, err := unix.Read(int(report.Fd()), buf)
		if errors.Is(err, unix.EINTR) {
			continue
		}
		if err != nil || n != len(buf) {
			return &SetupError{Step: "init", Errno: errno(err), Msg: "the container's process ended during setup"}
		}
		switch r.kind {
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
