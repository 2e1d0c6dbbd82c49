package integration

import (
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
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
	if m.name != "standard" {
		t.Errorf("create's pidfd came with %q, want runc's \"standard\"", m.name)
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
	if m.name != "setns" {
		t.Errorf("exec's pidfd came with %q, want runc's \"setns\"", m.name)
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

// --preserve-fds N: the process gets ward-oci's fds 3..3+N-1 at the same
// numbers, and no other fd of ward's.

// runExtra runs ward-oci with extra as its fds 3, 4, ... (closed here
// once it started) and fails the test unless it exits 0.
func (e *ociEnv) runExtra(extra []*os.File, args ...string) {
	e.t.Helper()
	e.runExtraEnv(extra, "", args...)
}

// runExtraEnv is runExtra with the variables env ("K=V K=V", shell
// words, expanded where ward-oci's shell's $$ is ward-oci's pid) set.
func (e *ociEnv) runExtraEnv(extra []*os.File, env string, args ...string) {
	e.t.Helper()
	out, err := os.Create(filepath.Join(e.t.TempDir(), "out"))
	if err != nil {
		e.t.Fatal(err)
	}
	defer out.Close()
	cmd := exec.Command(e.bin, append([]string{"--root", e.root}, args...)...)
	if env != "" {
		// exec keeps the shell's pid: $$ is ward-oci's.
		cmd = exec.Command("/bin/sh", append([]string{"-c", env + ` exec "$0" "$@"`, e.bin, "--root", e.root}, args...)...)
	}
	cmd.Stdout, cmd.Stderr, cmd.ExtraFiles = out, out, extra
	err = cmd.Start()
	for _, f := range extra {
		f.Close()
	}
	if err == nil {
		err = cmd.Wait()
	}
	if err != nil {
		b, _ := os.ReadFile(out.Name())
		e.t.Fatalf("ward-oci %v: %v: %s", args, err, b)
	}
}

// pipes makes n pipes and returns their read ends and write ends.
func pipes(t *testing.T, n int) (r, w []*os.File) {
	t.Helper()
	for i := 0; i < n; i++ {
		pr, pw, err := os.Pipe()
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { pr.Close(); pw.Close() })
		r, w = append(r, pr), append(w, pw)
	}
	return r, w
}

// readAll reads each pipe to its end.
func readAll(t *testing.T, r []*os.File) []string {
	t.Helper()
	var out []string
	for _, f := range r {
		b, err := io.ReadAll(f)
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, string(b))
	}
	return out
}

// TestOCIPreserveFDsCreate: create --preserve-fds 2 with pipes as
// ward-oci's fds 3, 4 and 5: the program writes into 3 and 4, and has no
// fd 5;
// also with ward.report (the init stays as PID 1 and forks the program,
// which loads its seccomp profile with a listener).
func TestOCIPreserveFDsCreate(t *testing.T) {
	const prog = `echo a >&3; echo b >&4; if [ -e /proc/self/fd/5 ]; then echo fd5 >&3; fi`
	for _, report := range []bool{false, true} {
		t.Run(fmt.Sprintf("report=%v", report), func(t *testing.T) {
			e := newOCIEnv(t)
			if report {
				e.reportConfig("f1", filepath.Join(t.TempDir(), "report.json"), "sh", "-c", prog)
			} else {
				e.config("f1", "sh", "-c", prog)
			}
			// A third pipe at ward-oci's fd 5, not preserved: the
			// program must not have it.
			r, w := pipes(t, 3)
			pidFile := filepath.Join(t.TempDir(), "pid")
			e.runExtra(w, "create", "--bundle", e.bundle, "--pid-file", pidFile, "--preserve-fds", "2", "f1")
			pid := readPid(t, pidFile)
			t.Cleanup(func() { _ = unix.Kill(pid, unix.SIGKILL); reapPid(pid) })
			e.must(nil, "start", "f1")
			if ws := reapPid(pid); ws.ExitStatus() != 0 {
				t.Errorf("the program exited %v, want 0", ws)
			}
			if got := readAll(t, r); got[0] != "a\n" || got[1] != "b\n" || got[2] != "" {
				t.Errorf("fd 3, 4 and 5 got %q, want \"a\\n\", \"b\\n\" and nothing (no fd 5)", got)
			}
			e.must(nil, "delete", "f1")
		})
	}
}

// TestOCIPreserveFDsListen: as runc, create passes the socket activation's
// fds ($LISTEN_FDS of them from 3, $LISTEN_PID being ward-oci's pid) before
// the preserved ones, and sets LISTEN_FDS and LISTEN_PID=1 for the program.
func TestOCIPreserveFDsListen(t *testing.T) {
	e := newOCIEnv(t)
	e.config("f3", "sh", "-c", `echo l >&3; echo p >&4; echo "$LISTEN_FDS $LISTEN_PID" >&3; if [ -e /proc/self/fd/5 ]; then echo fd5 >&3; fi`)
	r, w := pipes(t, 2)
	pidFile := filepath.Join(t.TempDir(), "pid")
	e.runExtraEnv(w, `LISTEN_PID=$$ LISTEN_FDS=1`, "create", "--bundle", e.bundle, "--pid-file", pidFile, "--preserve-fds", "1", "f3")
	pid := readPid(t, pidFile)
	t.Cleanup(func() { _ = unix.Kill(pid, unix.SIGKILL); reapPid(pid) })
	e.must(nil, "start", "f3")
	if ws := reapPid(pid); ws.ExitStatus() != 0 {
		t.Errorf("the program exited %v, want 0", ws)
	}
	if got := readAll(t, r); got[0] != "l\n1 1\n" || got[1] != "p\n" {
		t.Errorf("fd 3 and 4 got %q, want \"l\\n1 1\\n\" and \"p\\n\" (and no fd 5)", got)
	}
	e.must(nil, "delete", "f3")
}

// TestOCIPreserveFDsExec: exec --preserve-fds 1 with a pipe as ward-oci's
// fd 3: the command writes into it, and has no fd 4.
func TestOCIPreserveFDsExec(t *testing.T) {
	e := newOCIEnv(t)
	e.config("f2", "sleep", "1000")
	pid := e.create("f2", nil)
	e.must(nil, "start", "f2")
	r, w := pipes(t, 1)
	e.runExtra(w, "exec", "--preserve-fds", "1", "f2", "sh", "-c", `echo c >&3; if [ -e /proc/self/fd/4 ]; then echo fd4 >&3; fi`)
	if got := readAll(t, r); got[0] != "c\n" {
		t.Errorf("fd 3 got %q, want \"c\\n\" (and no fd 4)", got[0])
	}
	e.must(nil, "delete", "--force", "f2")
	reapPid(pid)
	e.gone("f2", pid)
}

// TestOCIPreserveFDsNotPassed: --preserve-fds naming an fd the caller did
// not pass is an error naming it, whatever ward-oci itself has open at that
// number by then, and no container is made.
func TestOCIPreserveFDsNotPassed(t *testing.T) {
	e := newOCIEnv(t)
	e.config("np", "true")
	r := e.run(nil, "create", "--bundle", e.bundle, "--preserve-fds", "3", "np")
	if r.code == 0 || !strings.Contains(r.stderr, "--preserve-fds 3: fd 3") {
		t.Errorf("create --preserve-fds 3 with no fd 3 passed: %+v, want an error naming fd 3", r)
	}
	if s := e.run(nil, "state", "np"); s.code == 0 {
		t.Errorf("state after the failed create: %+v, want no container", s)
	}
}
