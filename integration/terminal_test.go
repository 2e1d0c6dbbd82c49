package integration

import "testing"

// TestProgramIsNotASessionLeader: a pty the program opens does not become
// its controlling terminal, and hanging it up does not kill the program,
// as for any program started from a shell (issue 20: Go's os and
// os/signal tests died or failed inside ward for this). The program is
// still in a session without the caller's terminal.
func TestProgramIsNotASessionLeader(t *testing.T) {
	r := run(t, opts{stdin: `import os
print("leader", os.getsid(0) == os.getpid(), "group", os.getpgid(0) == os.getpid())
m, s = os.openpty()
fd = os.open(os.ttyname(s), os.O_RDWR)  # no O_NOCTTY
try:
    os.open("/dev/tty", os.O_RDWR)
    print("controlling terminal")
except OSError as e:
    print("no controlling terminal", e.errno)
os.close(m)
os.close(fd)
os.close(s)
print("alive")
`}, "run", "--", "python3", "-")
	want := "leader False group True\nno controlling terminal 6\nalive\n"
	if r.code != 0 || r.stdout != want {
		t.Errorf("printed %q, want %q\n%s", r.stdout, want, r)
	}
}
