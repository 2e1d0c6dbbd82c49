package ward

import (
	"context"
	"syscall"
	"testing"
	"time"

	"github.com/wardbox/ward/nsexec"
)

func TestDecideEveryStatus(t *testing.T) {
	exited := func(code int) *nsexec.Exit { return &nsexec.Exit{Code: code} }
	killed := func(sig syscall.Signal) *nsexec.Exit { return &nsexec.Exit{Code: -1, Signal: int(sig)} }
	lim := ending{TimeLimit: time.Second, CPUTimeLimit: 2 * time.Second, MemoryLimit: 64 << 20}
	with := func(f func(e *ending)) ending { e := lim; f(&e); return e }
	for _, tc := range []struct {
		name     string
		e        ending
		status   string
		wardExit int
		code     *int
		signal   *int
	}{
		{"exited 0", with(func(e *ending) { e.Exit = exited(0) }), StatusExited, 0, ptr(0), nil},
		{"exited 3", with(func(e *ending) { e.Exit = exited(3) }), StatusExited, 3, ptr(3), nil},
		{"signaled by SIGTERM", with(func(e *ending) { e.Exit = killed(syscall.SIGTERM) }), StatusSignaled, 128 + 15, nil, ptr(15)},
		{"the init's clock ended it", with(func(e *ending) { e.Exit = killed(syscall.SIGKILL); e.Exit.TimedOut = true }), StatusTimeout, 124, nil, ptr(9)},
		{"ward's timer ended it, no exit reported", with(func(e *ending) { e.TimedOut = true }), StatusTimeout, 124, nil, nil},
		{"ward's timer ended an exec", with(func(e *ending) { e.Exit = killed(syscall.SIGKILL); e.TimedOut = true }), StatusTimeout, 124, nil, ptr(9)},
		{"ward ended it at the CPU limit", with(func(e *ending) { e.CPUKilled = true }), StatusCPUTimeout, 124, nil, nil},
		{"the kernel's SIGXCPU at the CPU limit", with(func(e *ending) {
			e.Exit, e.HaveCPU, e.CPUUsed = killed(syscall.SIGXCPU), true, 2*time.Second
		}), StatusCPUTimeout, 124, nil, ptr(int(syscall.SIGXCPU))},
		{"SIGXCPU below the CPU limit is a signal", with(func(e *ending) {
			e.Exit, e.HaveCPU, e.CPUUsed = killed(syscall.SIGXCPU), true, time.Second
		}), StatusSignaled, 128 + int(syscall.SIGXCPU), nil, ptr(int(syscall.SIGXCPU))},
		{"OOM-killed", with(func(e *ending) { e.Exit, e.OOMKills = killed(syscall.SIGKILL), 1 }), StatusMemory, 125, nil, ptr(9)},
		{"a child OOM-killed, then the parent exits 1", with(func(e *ending) { e.Exit, e.OOMKills = exited(1), 1 }), StatusMemory, 125, nil, nil},
		{"a child OOM-killed, the parent exits 0", with(func(e *ending) { e.Exit, e.OOMKills = exited(0), 1 }), StatusExited, 0, ptr(0), nil},
		{"OOM kill and no exit reported", with(func(e *ending) { e.OOMKills = 1 }), StatusMemory, 125, nil, nil},
		{"the sandbox was killed", with(func(e *ending) { e.CtxErr = context.Canceled }), StatusSignaled, 137, nil, ptr(9)},
		{"the time limit wins over memory", with(func(e *ending) { e.Exit, e.TimedOut, e.OOMKills = killed(syscall.SIGKILL), true, 1 }), StatusTimeout, 124, nil, ptr(9)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			v := decide(tc.e)
			if v.Status != tc.status || v.WardExit != tc.wardExit {
				t.Errorf("status %s, ward exit %d; want %s, %d", v.Status, v.WardExit, tc.status, tc.wardExit)
			}
			if !eqPtr(v.ExitCode, tc.code) || !eqPtr(v.Signal, tc.signal) {
				t.Errorf("exit code %v, signal %v; want %v, %v", deref(v.ExitCode), deref(v.Signal), deref(tc.code), deref(tc.signal))
			}
			if (v.Error != nil) != (tc.status != StatusExited && tc.status != StatusSignaled || tc.e.CtxErr != nil) {
				t.Errorf("error %v for status %s", deref(v.Error), v.Status)
			}
		})
	}
}

func eqPtr[T comparable](a, b *T) bool {
	return a == nil && b == nil || a != nil && b != nil && *a == *b
}

func deref[T any](p *T) any {
	if p == nil {
		return nil
	}
	return *p
}
