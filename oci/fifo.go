package oci

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"time"

	"golang.org/x/sys/unix"
)

// The exec fifo holds a created container's init between create and start,
// as runc's does: create makes <root>/<id>/exec.fifo and the init opens it
// for writing (which blocks until start opens it for reading), writes one
// byte and goes on to exec the program. While the fifo exists the status
// is created.

// MakeExecFifo makes the container's exec fifo (mode 0622, owned by uid and
// gid: the container's root as the host sees it, so that the init can open
// it after it changed its credentials) and returns its path.
func (s *Store) MakeExecFifo(id string, uid, gid int) (string, error) {
	if err := ValidateID(id); err != nil {
		return "", err
	}
	path := filepath.Join(s.Dir(id), ExecFifo)
	if err := unix.Mkfifo(path, 0o622); err != nil {
		return "", fmt.Errorf("exec fifo %s: %w", path, err)
	}
	// Mkfifo's mode is masked by the umask; the init needs the write bit.
	if err := os.Chmod(path, 0o622); err != nil {
		os.Remove(path)
		return "", fmt.Errorf("exec fifo %s: %w", path, err)
	}
	if err := os.Chown(path, uid, gid); err != nil {
		os.Remove(path)
		return "", fmt.Errorf("exec fifo %s: %w", path, err)
	}
	return path, nil
}

// ReleaseExecFifo is start's side: it opens the fifo for reading, which
// lets the init's open return, waits for the init's byte (or its death,
// through a pidfd: a dead init would never write), and removes the fifo,
// so that the status is running from then on.
func (s *Store) ReleaseExecFifo(st *State) error {
	path := filepath.Join(s.Dir(st.ID), ExecFifo)
	// The init is checked before the fifo is opened: the open releases
	// it, and a short program may have ended (a zombie) by the next line.
	pidfd, err := unix.PidfdOpen(st.InitPid, 0)
	if err != nil || !s.initAlive(st) {
		if err == nil {
			unix.Close(pidfd)
		}
		return fmt.Errorf("%s: the init is gone before start: %w", st.ID, ErrNotRunning)
	}
	defer unix.Close(pidfd)
	started := time.Now() // the open releases the program
	fd, err := unix.Open(path, unix.O_RDONLY|unix.O_NONBLOCK|unix.O_CLOEXEC, 0)
	if errors.Is(err, fs.ErrNotExist) {
		return errors.New("cannot start an already running container")
	}
	if err != nil {
		return fmt.Errorf("exec fifo %s: %w", path, err)
	}
	defer unix.Close(fd)
	// Linux reports no hang-up on a fifo whose reader came before any
	// writer: poll wakes on the init's byte, its close, or its death.
	fds := []unix.PollFd{{Fd: int32(fd), Events: unix.POLLIN}, {Fd: int32(pidfd), Events: unix.POLLIN}}
	for {
		_, err := unix.Poll(fds, -1)
		if errors.Is(err, unix.EINTR) {
			continue
		}
		if err != nil {
			return fmt.Errorf("exec fifo %s: %w", path, err)
		}
		break
	}
	var b [1]byte
	n, err := unix.Read(fd, b[:])
	if n != 1 {
		if err == nil && fds[1].Revents != 0 {
			return fmt.Errorf("%s: the init died before start: %w", st.ID, ErrNotRunning)
		}
		return fmt.Errorf("%s: the init closed the exec fifo without a byte (%v)", st.ID, err)
	}
	if err := s.MarkStarted(st, started); err != nil {
		return err
	}
	if err := os.Remove(path); err != nil {
		return fmt.Errorf("exec fifo %s: %w", path, err)
	}
	return nil
}
