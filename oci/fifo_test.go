package oci

import (
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// initOnFifo stands in for a created container's init: it opens the exec
// fifo for writing (blocking until start), writes its byte, and goes on.
func initOnFifo(t *testing.T, fifo, script string) *exec.Cmd {
	t.Helper()
	cmd := exec.Command("sh", "-c", script, "sh", fifo)
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
	})
	return cmd
}

func TestExecFifo(t *testing.T) {
	s := testStore(t, true)
	st := stateOf(t, "c", 0)
	if err := s.Create(st); err != nil {
		t.Fatal(err)
	}
	fifo, err := s.MakeExecFifo("c", os.Getuid(), os.Getgid())
	if err != nil {
		t.Fatal(err)
	}
	if fi, err := os.Stat(fifo); err != nil || fi.Mode()&os.ModeNamedPipe == 0 || fi.Mode().Perm() != 0o622 {
		t.Fatalf("fifo %v, %v", fi, err)
	}
	if _, err := s.MakeExecFifo("c", 0, 0); err == nil {
		t.Error("a second exec fifo was made")
	}
	cmd := initOnFifo(t, fifo, `printf 0 > "$1" && exec sleep 600`)
	start, err := ProcessStartTime(cmd.Process.Pid)
	if err != nil {
		t.Fatal(err)
	}
	st.InitPid, st.InitStart = cmd.Process.Pid, start
	if got := s.Status(st); got != Created {
		t.Fatalf("before start: %s, want created", got)
	}
	if err := s.ReleaseExecFifo(st); err != nil {
		t.Fatal(err)
	}
	if got := s.Status(st); got != Running {
		t.Errorf("after start: %s, want running", got)
	}
	if _, err := os.Stat(fifo); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("the fifo is still there: %v", err)
	}
	if err := s.ReleaseExecFifo(st); err == nil || !strings.Contains(err.Error(), "already running") {
		t.Errorf("a second start: %v", err)
	}
}

// TestExecFifoInitDies: start does not wait for an init that died without
// its byte.
func TestExecFifoInitDies(t *testing.T) {
	s := testStore(t, true)
	st := stateOf(t, "c", 0)
	if err := s.Create(st); err != nil {
		t.Fatal(err)
	}
	fifo, err := s.MakeExecFifo("c", os.Getuid(), os.Getgid())
	if err != nil {
		t.Fatal(err)
	}
	// An init that dies while start waits: it sleeps in the foreground,
	// never opening the fifo, and is killed once start has the fifo open.
	cmd := initOnFifo(t, fifo, `exec sleep 600`)
	start, _ := ProcessStartTime(cmd.Process.Pid)
	st.InitPid, st.InitStart = cmd.Process.Pid, start
	done := make(chan error, 1)
	go func() { done <- s.ReleaseExecFifo(st) }()
	_ = cmd.Process.Kill()
	err = <-done
	if !errors.Is(err, ErrNotRunning) {
		t.Errorf("start with a dead init: %v, want ErrNotRunning", err)
	}
	if _, err := os.Stat(filepath.Join(s.Dir("c"), ExecFifo)); err != nil {
		t.Errorf("the fifo went although the program never started: %v", err)
	}
}
