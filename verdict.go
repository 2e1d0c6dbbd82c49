package ward

import (
	"fmt"
	"syscall"
	"time"

	"github.com/wardbox/ward/nsexec"
)

// ending is everything the verdict depends on: the limits the program ran
// under, how it ended as the init saw it, the cgroup's figures, and how
// ward's supervision ended. Run, Exec and --stdio-json all decide through
// verdict, so one program ending one way gets one status everywhere.
type ending struct {
	TimeLimit, CPUTimeLimit time.Duration
	MemoryLimit             int64

	// Exit is the program's end as the init reported it; nil when the init
	// ended (or was ended) without reporting one.
	Exit *nsexec.Exit
	// TimedOut: ward's own timer ended the program (the exec deadline, or
	// the backstop behind the init's).
	TimedOut bool
	// CPUKilled: ward ended the sandbox at the CPU time limit.
	CPUKilled bool
	// CPUUsed is the cgroup's CPU time (HaveCPU: it could be read).
	CPUUsed time.Duration
	HaveCPU bool
	// OOMKills counts the cgroup's OOM kills while the program ran.
	OOMKills uint64
	// CtxErr is the caller's context's end, when that ended the program.
	CtxErr error
}

// verdict is the status a Result carries, the program's exit code or
// signal where they stand, the error text, and ward's exit code.
type verdict struct {
	Status   string
	ExitCode *int
	Signal   *int
	Error    *string
	WardExit int
}

// decide is the one rule from an ending to a verdict, first match wins:
//
//	timeout      the init's clock or ward's timer ended it at the time limit
//	cpu_timeout  ward ended it at the CPU time limit, or the kernel did
//	             (SIGXCPU/SIGKILL with the cgroup's CPU time at the limit)
//	memory       the cgroup OOM-killed a process while it ran, and the
//	             program did not end cleanly (a child killed for memory
//	             whose parent then exits 1 is memory: 125)
//	signaled     a signal ended it
//	exited       it exited (its code)
//	signaled     none of the above: ward killed the sandbox (SIGKILL)
//
// Where a limit is the verdict, the signal that ended the program stays in
// Signal.
func decide(e ending) verdict {
	var v verdict
	ex := e.Exit
	cpuOver := e.CPUTimeLimit > 0 && e.HaveCPU && e.CPUUsed >= e.CPUTimeLimit
	switch {
	case ex != nil && ex.TimedOut, e.TimedOut:
		v.Status = StatusTimeout
		v.Error = ptr(fmt.Sprintf("execution exceeded time limit (%s)", FormatDuration(e.TimeLimit)))
	case e.CPUKilled && ex == nil, ex != nil && cpuOver && (ex.Signal == int(syscall.SIGXCPU) || ex.Signal == int(syscall.SIGKILL)):
		v.Status = StatusCPUTimeout
		v.Error = ptr(fmt.Sprintf("execution exceeded CPU time limit (%s)", FormatDuration(e.CPUTimeLimit)))
	case e.OOMKills > 0 && (ex == nil || ex.Signal != 0 || ex.Code != 0):
		v.Status = StatusMemory
		v.Error = ptr(fmt.Sprintf("memory limit exceeded (%s)", FormatSize(e.MemoryLimit)))
	case ex != nil && ex.Signal != 0:
		v.Status, v.Signal = StatusSignaled, ptr(ex.Signal)
	case ex != nil:
		v.Status, v.ExitCode = StatusExited, ptr(ex.Code)
	default:
		v.Status, v.Signal = StatusSignaled, ptr(int(syscall.SIGKILL))
		msg := "the sandbox was killed"
		if e.CtxErr != nil {
			msg += ": " + e.CtxErr.Error()
		}
		v.Error = ptr(msg)
	}
	if ex != nil && ex.Signal != 0 && v.Status != StatusExited && v.Status != StatusSignaled {
		v.Signal = ptr(ex.Signal) // how the program itself ended, next to the verdict
	}
	r := Result{Status: v.Status, ExitCode: v.ExitCode, Signal: v.Signal}
	v.WardExit = exitCodeFor(&r)
	return v
}

// apply puts the verdict into res.
func (v verdict) apply(res *Result) {
	res.Status, res.ExitCode, res.Signal, res.Error, res.WardExitCode = v.Status, v.ExitCode, v.Signal, v.Error, v.WardExit
}
