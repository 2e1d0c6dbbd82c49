package oci

import (
	"errors"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"

	"golang.org/x/sys/unix"
)

func TestKill(t *testing.T) {
	s := testStore(t, true)
	cmd := child(t)
	st := stateOf(t, "c", cmd.Process.Pid)
	if err := s.Create(st); err != nil {
		t.Fatal(err)
	}
	reused := *st
	reused.InitStart++
	if err := s.Kill(&reused, unix.SIGKILL, false); !errors.Is(err, ErrNotRunning) || !strings.Contains(err.Error(), "container not running") {
		t.Errorf("kill of a reused pid: %v, want ErrNotRunning", err)
	}
	if err := s.Kill(st, unix.SIGTERM, false); err != nil {
		t.Fatal(err)
	}
	err := cmd.Wait()
	var ee interface{ Sys() any }
	if !errors.As(err, &ee) || ee.Sys().(syscall.WaitStatus).Signal() != syscall.SIGTERM {
		t.Fatalf("the init ended with %v, want SIGTERM", err)
	}
	if err := s.Kill(st, unix.SIGTERM, false); !errors.Is(err, ErrNotRunning) {
		t.Errorf("kill of a stopped container: %v, want ErrNotRunning", err)
	}
}

// TestKillAll signals the processes listed in the container's cgroup too.
func TestKillAll(t *testing.T) {
	s := testStore(t, true)
	initCmd, other := child(t), child(t)
	st := stateOf(t, "c", initCmd.Process.Pid)
	st.CgroupPath = "/ward-oci/c"
	sub := filepath.Join(s.cgroupRoot, st.CgroupPath, "sub")
	if err := os.MkdirAll(sub, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(sub, "cgroup.procs"), []byte(strconv.Itoa(other.Process.Pid)+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := s.Kill(st, unix.SIGKILL, true); err != nil {
		t.Fatal(err)
	}
	for _, c := range []interface{ Wait() error }{initCmd, other} {
		if err := c.Wait(); err == nil || !strings.Contains(err.Error(), "killed") {
			t.Errorf("a process of the cgroup ended with %v, want killed", err)
		}
	}
}

func TestDelete(t *testing.T) {
	s := testStore(t, true)

	stopped := stateOf(t, "stopped", 0)
	if err := s.Create(stopped); err != nil {
		t.Fatal(err)
	}
	if err := s.Delete(stopped, false); err != nil {
		t.Fatalf("delete of a stopped container: %v", err)
	}
	if _, err := os.Stat(s.Dir("stopped")); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("its directory is still there: %v", err)
	}

	cmd := child(t)
	running := stateOf(t, "running", cmd.Process.Pid)
	running.CgroupPath = "/ward-oci/running"
	if err := os.MkdirAll(filepath.Join(s.cgroupRoot, running.CgroupPath, "inner"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := s.Create(running); err != nil {
		t.Fatal(err)
	}
	err := s.Delete(running, false)
	if err == nil || !strings.Contains(err.Error(), "not stopped: running") {
		t.Fatalf("delete of a running container without --force: %v", err)
	}
	if err := s.Delete(running, true); err != nil {
		t.Fatalf("delete --force: %v", err)
	}
	if err := cmd.Wait(); err == nil || !strings.Contains(err.Error(), "killed") {
		t.Errorf("the init ended with %v, want killed", err)
	}
	if _, err := os.Stat(filepath.Join(s.cgroupRoot, running.CgroupPath)); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("the cgroup is still there: %v", err)
	}

	// A created container (exec fifo there) is killed without --force:
	// its program never ran.
	cmd = child(t)
	created := stateOf(t, "created", cmd.Process.Pid)
	if err := s.Create(created); err != nil {
		t.Fatal(err)
	}
	if err := unix.Mkfifo(filepath.Join(s.Dir("created"), ExecFifo), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := s.Delete(created, false); err != nil {
		t.Fatalf("delete of a created container: %v", err)
	}
	if err := cmd.Wait(); err == nil || !strings.Contains(err.Error(), "killed") {
		t.Errorf("the created init ended with %v, want killed", err)
	}
	if list, _ := s.List(); len(list) != 0 {
		t.Errorf("left: %v", list)
	}
}

func TestParseSignal(t *testing.T) {
	for _, tt := range []struct {
		in   string
		want unix.Signal
		ok   bool
	}{
		{"9", unix.SIGKILL, true}, {"0", 0, true}, {"15", unix.SIGTERM, true}, {"64", 64, true},
		{"KILL", unix.SIGKILL, true}, {"SIGKILL", unix.SIGKILL, true}, {"sigterm", unix.SIGTERM, true},
		{"term", unix.SIGTERM, true}, {"SIGHUP", unix.SIGHUP, true}, {"winch", unix.SIGWINCH, true},
		{"USR1", unix.SIGUSR1, true}, {"RTMIN", 34, true}, {"SIGRTMIN+3", 37, true}, {"rtmax-1", 63, true},
		{"RTMAX", 64, true},
		{"65", 0, false}, {"-1", 0, false}, {"SIGFOO", 0, false}, {"", 0, false}, {"RTMIN+31", 0, false},
		{"RTMIN-1", 0, false}, {"RTMAX+1", 0, false}, {"RTMIN+", 0, false}, {"RTMIN++1", 0, false}, {"SIG", 0, false},
	} {
		got, err := ParseSignal(tt.in)
		if (err == nil) != tt.ok || got != tt.want {
			t.Errorf("ParseSignal(%q) = %d, %v; want %d, ok %v", tt.in, got, err, tt.want, tt.ok)
		}
	}
}

func TestWritePidFile(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "init.pid")
	if err := os.WriteFile(path, []byte("old contents"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := WritePidFile(path, 4242); err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(path)
	if err != nil || string(b) != "4242" {
		t.Errorf("pid file %q, %v; want 4242 and no newline", b, err)
	}
	if ents, _ := os.ReadDir(dir); len(ents) != 1 {
		t.Errorf("files beside it: %v", ents)
	}
	if err := WritePidFile(filepath.Join(dir, "no/such/dir/pid"), 1); err == nil {
		t.Error("a pid file in a missing directory was written")
	}
	if err := WritePidFile(path, 0); err == nil {
		t.Error("pid 0 written")
	}
}

// TestDeleteForceKillsLeftovers: with --force, what is left in the cgroup
// of a stopped container (its init gone) is killed too.
func TestDeleteForceKillsLeftovers(t *testing.T) {
	s := testStore(t, true)
	left := child(t)
	st := stateOf(t, "c", 0)
	st.CgroupPath = "/ward-oci/c"
	if err := s.Create(st); err != nil {
		t.Fatal(err)
	}
	dir := filepath.Join(s.cgroupRoot, st.CgroupPath)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	procs := filepath.Join(dir, "cgroup.procs")
	if err := os.WriteFile(procs, []byte(strconv.Itoa(left.Process.Pid)+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := s.Delete(st, true); err != nil {
		t.Fatal(err)
	}
	if err := left.Wait(); err == nil || !strings.Contains(err.Error(), "killed") {
		t.Errorf("the leftover ended with %v, want killed", err)
	}
	if _, err := os.Stat(dir); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("the cgroup is still there: %v", err)
	}
}
