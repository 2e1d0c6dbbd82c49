package integration

import (
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"golang.org/x/sys/unix"
)

// --pidfd-socket: as runc 1.2, ward-oci sends a pidfd of the container's
// process (create) or of the command (exec) over a unix socket the caller
// listens on, in one message with one SCM_RIGHTS descriptor.

// pidfdSocket listens on a socket in a temp dir and returns its path and
// the fd its first connection brings (or the error).
func pidfdSocket(t *testing.T) (string, <-chan consoleMsg) {
	t.Helper()
	path := filepath.Join(t.TempDir(), "pidfd.sock")
	l, err := net.ListenUnix("unix", &net.UnixAddr{Name: path, Net: "unix"})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { l.Close() })
	ch := make(chan consoleMsg, 1)
	go func() {
		name, f, err := recvMaster(l) // go-runc's receiver: the same checks
		ch <- consoleMsg{name: name, master: f, err: err}
	}()
	return path, ch
}

// pidfdPid is the pid a pidfd refers to (fdinfo's Pid: line).
func pidfdPid(t *testing.T, f *os.File) int {
	t.Helper()
	b, err := os.ReadFile(fmt.Sprintf("/proc/self/fdinfo/%d", f.Fd()))
	if err != nil {
		t.Fatal(err)
	}
	for _, l := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(l, "Pid:"); ok {
			n, err := strconv.Atoi(strings.TrimSpace(v))
			if err != nil {
				t.Fatalf("fdinfo %q: %v", l, err)
			}
			return n
		}
	}
	t.Fatalf("the fd received is no pidfd: its fdinfo has no Pid: line:\n%s", b)
	return 0
}

// readPid reads a pid file (a number, no newline).
func readPid(t *testing.T, path string) int {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	pid, err := strconv.Atoi(string(b))
	if err != nil || pid <= 0 {
		t.Fatalf("pid file %q: want a number with no newline", b)
	}
	return pid
}

// TestOCIPidfdSocket: create and exec send a pidfd of the pid they write
// to the pid file; a socket nobody listens on is an error naming it.
func TestOCIPidfdSocket(t *testing.T) {
	e := newOCIEnv(t)
	e.config("p1", "sleep", "1000")
	sock, ch := pidfdSocket(t)
	pidFile := filepath.Join(t.TempDir(), "pid")
	e.must(nil, "create", "--bundle", e.bundle, "--pid-file", pidFile, "--pidfd-socket", sock, "p1")
	pid := readPid(t, pidFile)
	t.Cleanup(func() { _ = unix.Kill(pid, unix.SIGKILL); reapPid(pid) })
	m := <-ch
	if m.err != nil {
		t.Fatalf("create's pidfd socket: %v", m.err)
	}
	if got := pidfdPid(t, m.master); got != pid {
		t.Errorf("create sent a pidfd of %d, want the container's process %d", got, pid)
	}
	m.master.Close()
	e.must(nil, "start", "p1")

	sock, ch = pidfdSocket(t)
	proc := filepath.Join(t.TempDir(), "process.json")
	if err := os.WriteFile(proc, []byte(`{"args":["sleep","1000"],"cwd":"/","env":["PATH=/bin"],"user":{"uid":0,"gid":0}}`), 0o644); err != nil {
		t.Fatal(err)
	}
	execPid := filepath.Join(t.TempDir(), "exec.pid")
	e.must(nil, "exec", "--process", proc, "--detach", "--pid-file", execPid, "--pidfd-socket", sock, "p1")
	epid := readPid(t, execPid)
	t.Cleanup(func() { _ = unix.Kill(epid, unix.SIGKILL); reapPid(epid) })
	m = <-ch
	if m.err != nil {
		t.Fatalf("exec's pidfd socket: %v", m.err)
	}
	if got := pidfdPid(t, m.master); got != epid {
		t.Errorf("exec sent a pidfd of %d, want the command %d", got, epid)
	}
	m.master.Close()

	// The socket is dialled before anything starts: a bad one leaves
	// nothing behind.
	nobody := filepath.Join(t.TempDir(), "nobody.sock")
	r := e.run(nil, "exec", "--process", proc, "--detach", "--pidfd-socket", nobody, "p1")
	if r.code == 0 || !strings.Contains(r.stderr, nobody) {
		t.Errorf("exec with a socket nobody listens on: %+v, want an error naming %s", r, nobody)
	}
	r = e.run(nil, "create", "--bundle", e.bundle, "--pidfd-socket", nobody, "p2")
	if r.code == 0 || !strings.Contains(r.stderr, nobody) {
		t.Errorf("create with a socket nobody listens on: %+v, want an error naming %s", r, nobody)
	}
	// The subreaper reaps the command while delete waits (TestOCIExec).
	reaped := make(chan unix.WaitStatus, 1)
	go func() { reaped <- reapPid(epid) }()
	e.must(nil, "delete", "--force", "p1")
	reapPid(pid)
	<-reaped
	e.gone("p1", pid)
}
