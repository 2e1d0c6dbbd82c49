package oci

import (
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	specs "github.com/opencontainers/runtime-spec/specs-go"
	"golang.org/x/sys/unix"
)

// child starts a sleeping process of this test's own, ended and reaped at
// cleanup.
func child(t *testing.T) *exec.Cmd {
	t.Helper()
	cmd := exec.Command("sleep", "600")
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
	})
	return cmd
}

// testStore is a store in a temp dir whose cgroup file system is a temp
// dir too: the tests touch no real cgroup.
func testStore(t *testing.T, unified bool) *Store {
	t.Helper()
	s := NewStore(filepath.Join(t.TempDir(), "root"))
	s.cgroupRoot = t.TempDir()
	// A cgroup's files go with its directory; a fake one's must be
	// removed with it.
	s.rmdir = func(dir string) error {
		ents, err := os.ReadDir(dir)
		if err != nil {
			return err
		}
		for _, e := range ents {
			if e.IsDir() {
				return syscall.ENOTEMPTY
			}
		}
		return os.RemoveAll(dir)
	}
	if unified {
		if err := os.WriteFile(filepath.Join(s.cgroupRoot, "cgroup.controllers"), []byte("cpu memory pids\n"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return s
}

func stateOf(t *testing.T, id string, pid int) *State {
	t.Helper()
	st := &State{ID: id, Bundle: "/b/" + id, Rootfs: "/b/" + id + "/rootfs", Created: time.Now().UTC(),
		Annotations: map[string]string{"k": "v"}, Config: &specs.Spec{Version: "1.0.2-dev"}}
	if pid > 0 {
		start, err := ProcessStartTime(pid)
		if err != nil {
			t.Fatal(err)
		}
		st.InitPid, st.InitStart = pid, start
	}
	return st
}

func TestStoreCreateLoadListRemove(t *testing.T) {
	s := testStore(t, true)
	if got, err := s.List(); err != nil || len(got) != 0 {
		t.Fatalf("List of a root not made yet: %v, %v", got, err)
	}
	for _, id := range []string{"b", "a"} {
		if err := s.Create(stateOf(t, id, 0)); err != nil {
			t.Fatal(err)
		}
	}
	if err := s.Create(stateOf(t, "a", 0)); !errors.Is(err, ErrExist) {
		t.Errorf("second create of a: %v, want ErrExist", err)
	}
	st, err := s.Load("a")
	if err != nil || st.Bundle != "/b/a" || st.Annotations["k"] != "v" || st.Config.Version != "1.0.2-dev" {
		t.Fatalf("Load: %+v, %v", st, err)
	}
	// A directory without a state (a create cut short) is not listed.
	if err := os.Mkdir(s.Dir("half"), 0o700); err != nil {
		t.Fatal(err)
	}
	list, err := s.List()
	if err != nil || len(list) != 2 || list[0].ID != "a" || list[1].ID != "b" {
		t.Fatalf("List: %v, %v", list, err)
	}
	if err := s.Remove("a"); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Load("a"); !errors.Is(err, ErrNotExist) || !strings.Contains(err.Error(), "does not exist") {
		t.Errorf("Load after Remove: %v, want ErrNotExist", err)
	}
	if fi, err := os.Stat(s.Root); err != nil || fi.Mode().Perm() != 0o700 {
		t.Errorf("root mode: %v, %v", fi, err)
	}
	left, _ := filepath.Glob(filepath.Join(s.Dir("b"), ".state.json.*"))
	if len(left) != 0 {
		t.Errorf("temporary files left: %v", left)
	}
}

func TestValidateID(t *testing.T) {
	for id, ok := range map[string]bool{"abc": true, "a.b-c_d+e": true, "0123abcd": true,
		"": false, ".": false, "..": false, "a/b": false, "../x": false, "a b": false, "a\x00": false} {
		if err := ValidateID(id); (err == nil) != ok {
			t.Errorf("ValidateID(%q) = %v", id, err)
		}
	}
	s := testStore(t, true)
	if err := s.Create(stateOf(t, "../escape", 0)); err == nil {
		t.Error("Create took ../escape")
	}
	if _, err := s.Load("../escape"); err == nil || errors.Is(err, ErrNotExist) {
		t.Errorf("Load(../escape) = %v, want an invalid id", err)
	}
}

func TestDefaultRoot(t *testing.T) {
	env := func(v string) func(string) string { return func(string) string { return v } }
	for _, tt := range []struct {
		euid int
		xdg  string
		want string
	}{{0, "/run/user/0", "/run/ward-oci"}, {1000, "/run/user/1000", "/run/user/1000/ward-oci"}, {1000, "", "/run/ward-oci"}} {
		if got := DefaultRoot(tt.euid, env(tt.xdg)); got != tt.want {
			t.Errorf("DefaultRoot(%d, %q) = %q, want %q", tt.euid, tt.xdg, got, tt.want)
		}
	}
}

// TestStatusIsDerived: the status comes from the init's pid and start
// time, the cgroup's freezer and the exec fifo, on every call.
func TestStatusIsDerived(t *testing.T) {
	for _, unified := range []bool{true, false} {
		name := map[bool]string{true: "v2", false: "v1"}[unified]
		t.Run(name, func(t *testing.T) {
			s := testStore(t, unified)
			cmd := child(t)
			st := stateOf(t, "c", cmd.Process.Pid)
			st.CgroupPath = "/ward-oci/c"
			if err := s.Create(st); err != nil {
				t.Fatal(err)
			}
			if got := s.Status(st); got != Running {
				t.Errorf("alive, no fifo: %s, want running", got)
			}
			fifo := filepath.Join(s.Dir("c"), ExecFifo)
			if err := unix.Mkfifo(fifo, 0o600); err != nil {
				t.Fatal(err)
			}
			if got := s.Status(st); got != Created {
				t.Errorf("with the exec fifo: %s, want created", got)
			}
			os.Remove(fifo)
			freeze(t, s, st.CgroupPath, unified, true)
			if got := s.Status(st); got != Paused {
				t.Errorf("frozen: %s, want paused", got)
			}
			freeze(t, s, st.CgroupPath, unified, false)
			other := *st
			other.InitStart++
			if got := s.Status(&other); got != Stopped {
				t.Errorf("the pid with another start time (reused): %s, want stopped", got)
			}
			if err := cmd.Process.Signal(syscall.SIGKILL); err != nil {
				t.Fatal(err)
			}
			waitState(t, cmd.Process.Pid, 'Z')
			if got := s.Status(st); got != Stopped {
				t.Errorf("a zombie: %s, want stopped", got)
			}
			_ = cmd.Wait()
			if got := s.Status(st); got != Stopped {
				t.Errorf("reaped: %s, want stopped", got)
			}
			if got := s.Status(stateOf(t, "never", 0)); got != Stopped {
				t.Errorf("no init: %s", got)
			}
		})
	}
}

// freeze writes the fake cgroup's freezer file as the kernel shows it.
func freeze(t *testing.T, s *Store, cg string, unified, frozen bool) {
	t.Helper()
	dir, file, val := filepath.Join(s.cgroupRoot, cg), "cgroup.freeze", map[bool]string{true: "1\n", false: "0\n"}[frozen]
	if !unified {
		dir, file, val = filepath.Join(s.cgroupRoot, "freezer", cg), "freezer.state", map[bool]string{true: "FROZEN\n", false: "THAWED\n"}[frozen]
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, file), []byte(val), 0o644); err != nil {
		t.Fatal(err)
	}
}

// waitState waits until pid's /proc stat shows state (a killed child's
// turn to a zombie is not instant); the test's own deadline bounds it.
func waitState(t *testing.T, pid int, state byte) {
	t.Helper()
	for {
		ps, err := readProcStat("/proc", pid)
		if err != nil {
			t.Fatal(err)
		}
		if ps.State == state {
			return
		}
		time.Sleep(time.Millisecond)
	}
}

func TestOutput(t *testing.T) {
	s := testStore(t, true)
	cmd := child(t)
	st := stateOf(t, "c", cmd.Process.Pid)
	if err := s.Create(st); err != nil {
		t.Fatal(err)
	}
	o := s.Output(st)
	if o.Pid != cmd.Process.Pid || o.Status != Running || o.OCIVersion != "1.0.2-dev" || o.Rootfs != "/b/c/rootfs" || o.Owner == "" {
		t.Errorf("running: %+v", o)
	}
	st.InitStart++
	if o := s.Output(st); o.Pid != 0 || o.Status != Stopped {
		t.Errorf("stopped: pid %d status %s, want 0 and stopped", o.Pid, o.Status)
	}
}
