package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/wardbox/ward/internal/procstat"
)

// TestAliveTellsTheSupervisorApart: a state directory names its
// supervisor by pid and start time. This process (a "ward..." binary) with
// its own start time is alive; with another start time it is a later
// process that reused the pid; a zombie, dead but not reaped, is dead.
func TestAliveTellsTheSupervisorApart(t *testing.T) {
	if _, err := procstat.Self(); err != nil {
		t.Skipf("no /proc/self/stat here: %v", err)
	}
	old := StateDir
	StateDir = t.TempDir()
	t.Cleanup(func() { StateDir = old })
	self, _ := procstat.Self()

	zombie := exec.Command("true")
	if err := zombie.Start(); err != nil {
		t.Fatal(err)
	}
	defer zombie.Wait()
	var info unix.Siginfo
	if err := unix.Waitid(unix.P_PID, zombie.Process.Pid, &info, unix.WEXITED|unix.WNOWAIT, nil); err != nil {
		t.Fatalf("waitid: %v", err)
	}

	for _, tc := range []struct {
		name      string
		pid       int
		starttime string // "": no starttime file (an older ward's state)
		want      bool
	}{
		{"self", os.Getpid(), strconv.FormatUint(self.StartTime, 10), true},
		{"self-no-starttime", os.Getpid(), "", true},
		{"reused-pid", os.Getpid(), strconv.FormatUint(self.StartTime+1, 10), false},
		{"zombie", zombie.Process.Pid, "", false},
	} {
		dir := filepath.Join(StateDir, tc.name)
		if err := os.Mkdir(dir, 0o700); err != nil {
			t.Fatal(err)
		}
		if tc.starttime != "" {
			if err := os.WriteFile(filepath.Join(dir, "starttime"), []byte(tc.starttime), 0o600); err != nil {
				t.Fatal(err)
			}
		}
		if err := os.WriteFile(filepath.Join(dir, "pid"), []byte(strconv.Itoa(tc.pid)), 0o600); err != nil {
			t.Fatal(err)
		}
		if _, got := alive(tc.name); got != tc.want {
			t.Errorf("%s: alive = %v, want %v", tc.name, got, tc.want)
		}
	}
}
