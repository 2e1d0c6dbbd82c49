package integration

import (
	"encoding/json"
	"errors"
	"io"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"golang.org/x/sys/unix"
)

// The console socket, as containerd's shim (go-runc) and conmon use it:
// the caller listens on a unix socket, passes its path as
// --console-socket, and receives the pty master of a process with a
// terminal, once, in one message.

// consoleSocket listens on a socket in a temp dir and returns its path
// and what its first connection brings: the pty master, or the error
// go-runc's receiver would give.
func consoleSocket(t *testing.T) (string, <-chan consoleMsg) {
	t.Helper()
	path := filepath.Join(t.TempDir(), "console.sock")
	l, err := net.ListenUnix("unix", &net.UnixAddr{Name: path, Net: "unix"})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { l.Close() })
	ch := make(chan consoleMsg, 1)
	go func() {
		name, master, err := recvMaster(l)
		ch <- consoleMsg{name: name, master: master, err: err}
	}()
	return path, ch
}

type consoleMsg struct {
	name   string
	master *os.File
	err    error
}

// recvMaster is go-runc's ReceiveFile with its checks: one message whose
// payload (the name) is not empty and shorter than 4096 bytes, and one
// control message of exactly one descriptor; then nothing more.
func recvMaster(l *net.UnixListener) (string, *os.File, error) {
	c, err := l.AcceptUnix()
	if err != nil {
		return "", nil, err
	}
	defer c.Close()
	name := make([]byte, 4096)
	oob := make([]byte, unix.CmsgSpace(4))
	n, oobn, _, _, err := c.ReadMsgUnix(name, oob)
	if err != nil {
		return "", nil, err
	}
	if n >= 4096 || n == 0 || oobn != unix.CmsgSpace(4) {
		return "", nil, errors.New("recvfd: incorrect number of bytes read")
	}
	scms, err := unix.ParseSocketControlMessage(oob[:oobn])
	if err != nil || len(scms) != 1 {
		return "", nil, errors.New("recvfd: number of SCMs is not 1")
	}
	fds, err := unix.ParseUnixRights(&scms[0])
	if err != nil || len(fds) != 1 {
		return "", nil, errors.New("recvfd: number of fds is not 1")
	}
	f := os.NewFile(uintptr(fds[0]), string(name[:n]))
	if more, err := c.Read(make([]byte, 1)); more != 0 || err != io.EOF {
		f.Close()
		return "", nil, errors.New("more than one message on the console socket")
	}
	return string(name[:n]), f, nil
}

// master waits for the pty master the console socket received.
func (e *ociEnv) master(ch <-chan consoleMsg) *os.File {
	e.t.Helper()
	m := <-ch
	if m.err != nil {
		e.t.Fatalf("the console socket: %v", m.err)
	}
	if !strings.HasPrefix(m.name, "/dev/pts/") {
		e.t.Errorf("the console socket's payload is %q, want the pty's name /dev/pts/N", m.name)
	}
	e.t.Cleanup(func() { m.master.Close() })
	return m.master
}

// readPty reads the pty's output until every holder of its slave has
// closed it (EIO), with the line discipline's \r\n as \n.
func readPty(m *os.File) string {
	b, _ := io.ReadAll(m) // ends with EIO
	return strings.ReplaceAll(string(b), "\r\n", "\n")
}

// terminal sets config.json's process.terminal and consoleSize, and links
// the busybox applets the tests run.
func (e *ociEnv) terminal(on bool) {
	e.t.Helper()
	e.edit(func(c map[string]any) {
		p := c["process"].(map[string]any)
		p["terminal"] = on
		p["consoleSize"] = map[string]any{"height": 33, "width": 101}
	})
	for _, a := range []string{"tty", "stty", "stat"} {
		if err := os.Symlink("busybox", filepath.Join(e.bundle, "rootfs", "bin", a)); err != nil && !errors.Is(err, os.ErrExist) {
			e.t.Fatal(err)
		}
	}
}

// ttyScript prints what the tests check of a process's terminal: its
// name, that stdin and stdout are terminals, that it is the controlling
// terminal (/dev/tty opens), its size, and who owns it.
const ttyScript = `tty; [ -t 0 ] && [ -t 1 ] && echo isatty; echo ctty >/dev/tty; stty size; stat -c 'owner %u' $(tty); exit 3`

// TestOCIConsoleCreate: create with a terminal sends the pty master to
// the console socket (one message, go-runc's checks);
// the program, started, has the pty from the container's own devpts as
// its stdio and controlling terminal, at config.json's consoleSize, and
// /dev/console is that pty.
func TestOCIConsoleCreate(t *testing.T) {
	e := newOCIEnv(t)
	e.config("t1", "sh", "-c", strings.Replace(ttyScript, "exit 3", "[ /dev/console -ef /dev/pts/0 ] && echo console; exit 3", 1))
	e.terminal(true)
	sock, ch := consoleSocket(t)
	pidFile := filepath.Join(t.TempDir(), "pid")
	e.must(nil, "create", "--bundle", e.bundle, "--console-socket", sock, "--pid-file", pidFile, "t1")
	pid := readPid(t, pidFile)
	t.Cleanup(func() { _ = unix.Kill(pid, unix.SIGKILL); reapPid(pid) })
	m := e.master(ch)
	e.must(nil, "start", "t1")
	out := readPty(m)
	if ws := reapPid(pid); !ws.Exited() || ws.ExitStatus() != 3 {
		t.Errorf("the subreaper saw %v, want exit 3 (the program's)", ws)
	}
	if want := "/dev/pts/0\nisatty\nctty\n33 101\nowner 0\nconsole\n"; out != want {
		t.Errorf("the program wrote %q on its terminal, want %q", out, want)
	}
	e.must(nil, "delete", "t1")
	e.gone("t1", pid)
}

// TestOCIConsoleRun: run with a terminal and no console socket serves the
// pty itself, as runc does: the program's output comes on run's stdout,
// and run exits with its status.
func TestOCIConsoleRun(t *testing.T) {
	e := newOCIEnv(t)
	e.config("t2", "sh", "-c", ttyScript)
	e.terminal(true)
	out, err := os.Create(filepath.Join(t.TempDir(), "out"))
	if err != nil {
		t.Fatal(err)
	}
	defer out.Close()
	if r := e.run(out, "run", "--bundle", e.bundle, "t2"); r.code != 3 {
		t.Fatalf("run: exit %d, want 3 (the program's)", r.code)
	}
	b, _ := os.ReadFile(out.Name())
	if got, want := strings.ReplaceAll(string(b), "\r\n", "\n"), "/dev/pts/0\nisatty\nctty\n33 101\nowner 0\n"; got != want {
		t.Errorf("run's output is %q, want %q", got, want)
	}
}

// TestOCIConsoleRunDetach: run --detach with a terminal sends the pty
// master to the console socket, as create does, and the program, started,
// re-parents to the caller's subreaper.
func TestOCIConsoleRunDetach(t *testing.T) {
	e := newOCIEnv(t)
	e.config("t5", "sh", "-c", ttyScript)
	e.terminal(true)
	sock, ch := consoleSocket(t)
	pidFile := filepath.Join(t.TempDir(), "pid")
	e.must(nil, "run", "--detach", "--bundle", e.bundle, "--console-socket", sock, "--pid-file", pidFile, "t5")
	pid := readPid(t, pidFile)
	t.Cleanup(func() { _ = unix.Kill(pid, unix.SIGKILL); reapPid(pid) })
	out := readPty(e.master(ch))
	if ws := reapPid(pid); !ws.Exited() || ws.ExitStatus() != 3 {
		t.Errorf("the subreaper saw %v, want exit 3 (the program's)", ws)
	}
	if want := "/dev/pts/0\nisatty\nctty\n33 101\nowner 0\n"; out != want {
		t.Errorf("the program wrote %q on its terminal, want %q", out, want)
	}
	e.must(nil, "delete", "t5")
	e.gone("t5", pid)
}

// TestOCIConsoleExec: exec --tty gives the command a pty of its own from
// the container's devpts, owned by its user: detached, the master goes to
// the console socket (also for --process with terminal true); without
// --detach, exec serves it and exits with the command's status.
func TestOCIConsoleExec(t *testing.T) {
	e := newOCIEnv(t)
	e.config("t3", "sleep", "1000")
	e.terminal(false)
	pid := e.create("t3", nil)
	e.must(nil, "start", "t3")
	script := strings.Replace(ttyScript, "stty size; ", "", 1)
	want := "/dev/pts/0\nisatty\nctty\nowner 1000\n"

	sock, ch := consoleSocket(t)
	pidFile := filepath.Join(t.TempDir(), "exec.pid")
	e.must(nil, "exec", "--tty", "--detach", "--console-socket", sock, "--pid-file", pidFile, "--user", "1000:1000", "t3", "sh", "-c", script)
	m := e.master(ch)
	b, _ := os.ReadFile(pidFile)
	epid, err := strconv.Atoi(string(b))
	if err != nil {
		t.Fatalf("exec's pid file %q", b)
	}
	t.Cleanup(func() { _ = unix.Kill(epid, unix.SIGKILL); reapPid(epid) })
	out := readPty(m)
	m.Close() // its number is free again
	if out != want {
		t.Errorf("exec --tty --detach: the command wrote %q, want %q", out, want)
	}
	if ws := reapPid(epid); !ws.Exited() || ws.ExitStatus() != 3 {
		t.Errorf("exec --tty --detach: the subreaper saw %v, want exit 3", ws)
	}

	proc := filepath.Join(t.TempDir(), "process.json")
	pj, _ := json.Marshal(map[string]any{"terminal": true, "args": []string{"sh", "-c", script}, "cwd": "/",
		"env": []string{"PATH=/bin"}, "user": map[string]any{"uid": 1000, "gid": 1000}})
	if err := os.WriteFile(proc, pj, 0o644); err != nil {
		t.Fatal(err)
	}
	sock, ch = consoleSocket(t)
	e.must(nil, "exec", "--process", proc, "--detach", "--console-socket", sock, "--pid-file", pidFile, "t3")
	m = e.master(ch)
	b, _ = os.ReadFile(pidFile)
	if epid, err = strconv.Atoi(string(b)); err != nil {
		t.Fatalf("exec's pid file %q", b)
	}
	out = readPty(m)
	m.Close()
	if out != want {
		t.Errorf("exec --process (terminal): the command wrote %q, want %q", out, want)
	}
	if ws := reapPid(epid); !ws.Exited() || ws.ExitStatus() != 3 {
		t.Errorf("exec --process (terminal): the subreaper saw %v, want exit 3", ws)
	}

	f, err := os.Create(filepath.Join(t.TempDir(), "out"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	r := e.run(f, "exec", "--tty", "--user", "1000:1000", "t3", "sh", "-c", script)
	b, _ = os.ReadFile(f.Name())
	if got := strings.ReplaceAll(string(b), "\r\n", "\n"); r.code != 3 || got != want {
		t.Errorf("exec --tty: exit %d, output %q; want 3 and %q", r.code, got, want)
	}

	e.must(nil, "delete", "--force", "t3")
	reapPid(pid)
	e.gone("t3", pid)
}

// TestOCIConsoleMismatch: a terminal that would be detached without a
// console socket, or a console socket without a terminal (or with a
// process ward-oci does not detach from), is an error, with runc's
// wording, and creates nothing.
func TestOCIConsoleMismatch(t *testing.T) {
	e := newOCIEnv(t)
	e.config("t4", "sleep", "1000")
	sock := filepath.Join(t.TempDir(), "unused.sock")
	noSocket := "cannot allocate tty if ward-oci will detach without setting console socket"
	noTTY := "cannot use console socket if ward-oci will not detach or allocate tty"
	e.terminal(true)
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"create", "--bundle", e.bundle, "t4"}, noSocket},
		{[]string{"run", "--bundle", e.bundle, "--console-socket", sock, "t4"}, noTTY},
	} {
		if r := e.run(nil, c.args...); r.code != 1 || !strings.Contains(r.stderr, c.want) {
			t.Errorf("%v: exit %d, stderr %q; want 1 and %q", c.args, r.code, r.stderr, c.want)
		}
	}
	e.terminal(false)
	if r := e.run(nil, "create", "--bundle", e.bundle, "--console-socket", sock, "t4"); r.code != 1 || !strings.Contains(r.stderr, noTTY) {
		t.Errorf("create --console-socket without a terminal: exit %d, stderr %q; want 1 and %q", r.code, r.stderr, noTTY)
	}
	if _, err := os.Stat(filepath.Join(e.root, "t4")); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("a refused create left state: %v", err)
	}
	pid := e.create("t4", nil)
	e.must(nil, "start", "t4")
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"exec", "--tty", "--detach", "t4", "true"}, noSocket},
		{[]string{"exec", "--console-socket", sock, "--detach", "t4", "true"}, noTTY},
		{[]string{"exec", "--tty", "--console-socket", sock, "t4", "true"}, noTTY},
	} {
		if r := e.run(nil, c.args...); r.code != 1 || !strings.Contains(r.stderr, c.want) {
			t.Errorf("%v: exit %d, stderr %q; want 1 and %q", c.args, r.code, r.stderr, c.want)
		}
	}
	e.must(nil, "delete", "--force", "t4")
	reapPid(pid)
	e.gone("t4", pid)
}
