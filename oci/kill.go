package oci

import (
	"errors"
	"fmt"
	"time"

	"golang.org/x/sys/unix"
)

// Kill sends sig to the container's init; with all, to every process in
// its cgroup as well. A stopped container is ErrNotRunning, as runc says.
// The signal goes through a pidfd opened before the start time is checked
// again, so a pid reused in between never receives it.
func (s *Store) Kill(st *State, sig unix.Signal, all bool) error {
	if s.Status(st) == Stopped {
		return fmt.Errorf("%s: %w", st.ID, ErrNotRunning)
	}
	if err := s.signalInit(st, sig); err != nil {
		return err
	}
	if !all {
		return nil
	}
	pids, err := s.cgroupPids(st)
	if err != nil {
		return fmt.Errorf("%s: the cgroup's processes: %w", st.ID, err)
	}
	for _, pid := range pids {
		if pid != st.InitPid {
			// One that ended meanwhile is not an error.
			_ = unix.Kill(pid, sig)
		}
	}
	return nil
}

func (s *Store) signalInit(st *State, sig unix.Signal) error {
	fd, err := unix.PidfdOpen(st.InitPid, 0)
	if errors.Is(err, unix.ESRCH) {
		return fmt.Errorf("%s: %w", st.ID, ErrNotRunning)
	}
	if err != nil {
		return fmt.Errorf("%s: pidfd_open %d: %w", st.ID, st.InitPid, err)
	}
	defer unix.Close(fd)
	if !s.initAlive(st) {
		return fmt.Errorf("%s: %w", st.ID, ErrNotRunning)
	}
	if err := unix.PidfdSendSignal(fd, sig, nil, 0); err != nil {
		if errors.Is(err, unix.ESRCH) {
			return fmt.Errorf("%s: %w", st.ID, ErrNotRunning)
		}
		return fmt.Errorf("%s: signal %d to %d: %w", st.ID, sig, st.InitPid, err)
	}
	return nil
}

// Delete removes a container as runc does: a stopped one at once; a
// created one after killing its init (its program never ran); a running or
// paused one only with force. With force every process left in its cgroup
// is SIGKILLed first, even when the init is gone (without a PID namespace
// of its own, its children outlive it). Then its cgroup and its directory
// go; the init, reparented to the caller's subreaper, is reaped there.
func (s *Store) Delete(st *State, force bool) error {
	status := s.Status(st)
	switch {
	case force || status == Created:
		if err := s.killAndWait(st); err != nil {
			return err
		}
	case status != Stopped:
		return fmt.Errorf("cannot delete container %s that is not stopped: %s", st.ID, status)
	}
	// ward.report: written while the cgroup's figures are there; a
	// failure is a warning (the container still goes).
	if err := s.WriteReport(st); err != nil && s.Warn != nil {
		s.Warn(err)
	}
	if err := s.removeCgroup(st); err != nil {
		return fmt.Errorf("%s: %w", st.ID, err)
	}
	return s.Remove(st.ID)
}

// killAndWait SIGKILLs the init and every process of the container's
// cgroup, thaws a frozen cgroup so that they can die, and waits (at most
// 10 s) for the init to exit.
func (s *Store) killAndWait(st *State) error {
	fd := -1
	if st.InitPid > 0 {
		var err error
		fd, err = unix.PidfdOpen(st.InitPid, 0)
		if err != nil && !errors.Is(err, unix.ESRCH) {
			return fmt.Errorf("%s: pidfd_open %d: %w", st.ID, st.InitPid, err)
		}
		if err != nil {
			fd = -1
		} else if !s.initAlive(st) {
			unix.Close(fd) // the pid names another process now
			fd = -1
		}
		if fd >= 0 {
			defer unix.Close(fd)
		}
	}
	if fd >= 0 {
		if err := unix.PidfdSendSignal(fd, unix.SIGKILL, nil, 0); err != nil && !errors.Is(err, unix.ESRCH) {
			return fmt.Errorf("%s: SIGKILL to %d: %w", st.ID, st.InitPid, err)
		}
	}
	pids, err := s.cgroupPids(st)
	if err != nil {
		return fmt.Errorf("%s: the cgroup's processes: %w", st.ID, err)
	}
	for _, pid := range pids {
		if pid != st.InitPid {
			_ = unix.Kill(pid, unix.SIGKILL) // one that ended meanwhile is fine
		}
	}
	if err := s.thaw(st); err != nil {
		return fmt.Errorf("%s: %w", st.ID, err)
	}
	if fd < 0 {
		return nil
	}
	// The pidfd turns readable when the init exits (a zombie counts).
	pfd := []unix.PollFd{{Fd: int32(fd), Events: unix.POLLIN}}
	deadline := time.Now().Add(10 * time.Second)
	for {
		ms := int(time.Until(deadline) / time.Millisecond)
		if ms <= 0 {
			return fmt.Errorf("%s: the init (%d) is still alive 10 s after SIGKILL", st.ID, st.InitPid)
		}
		n, err := unix.Poll(pfd, ms)
		if n > 0 {
			return nil
		}
		if err != nil && !errors.Is(err, unix.EINTR) {
			return fmt.Errorf("%s: waiting for the init (%d) to die: %w", st.ID, st.InitPid, err)
		}
	}
}
