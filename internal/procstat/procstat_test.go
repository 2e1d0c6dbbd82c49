package procstat

import (
	"os"
	"os/exec"
	"syscall"
	"testing"

	"golang.org/x/sys/unix"
)

func TestParse(t *testing.T) {
	for _, tc := range []struct {
		in    string
		state byte
		start uint64
		bad   bool
	}{
		{"42 (sleep) S 1 42 42 0 -1 4194560 97 0 0 0 0 0 0 0 20 0 1 0 123456 5525504 200 18446744073709551615", 'S', 123456, false},
		// A command name with spaces and a ')' of its own.
		{"7 (a) b) Z 1 7 7 0 -1 4228364 1103 0 0 0 0 1 0 0 20 0 1 0 99 0 0", 'Z', 99, false},
		{"7 no-parens S 1", 0, 0, true},
		{"7 (short) S 1 2 3", 0, 0, true},
	} {
		st, err := Parse([]byte(tc.in))
		if tc.bad != (err != nil) || !tc.bad && (st.State != tc.state || st.StartTime != tc.start) {
			t.Errorf("Parse(%q) = %+v, %v", tc.in, st, err)
		}
	}
}

// TestDeadCountsAZombie: a child that exited but is not reaped yet is a
// zombie, which kill(pid, 0) still finds; Dead says it has ended. Once
// reaped it is gone; this process itself runs.
func TestDeadCountsAZombie(t *testing.T) {
	cmd := exec.Command("true")
	if err := cmd.Start(); err != nil {
		t.Skipf("cannot start true: %v", err)
	}
	pid := cmd.Process.Pid
	defer cmd.Wait()
	// Wait for the exit without reaping (WNOWAIT keeps the zombie).
	var info unix.Siginfo
	if err := unix.Waitid(unix.P_PID, pid, &info, unix.WEXITED|unix.WNOWAIT, nil); err != nil {
		t.Fatalf("waitid: %v", err)
	}
	if syscall.Kill(pid, 0) != nil {
		t.Fatalf("the zombie %d does not answer kill(pid, 0): the test shows nothing", pid)
	}
	if !Dead(pid) {
		t.Errorf("Dead(%d) = false for a zombie", pid)
	}
	if Dead(os.Getpid()) {
		t.Errorf("Dead(self) = true")
	}
	self, err := Self()
	if err != nil || self.StartTime == 0 || self.State == 'Z' {
		t.Errorf("Self() = %+v, %v", self, err)
	}
}
