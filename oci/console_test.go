package oci

import (
	"errors"
	"io"
	"net"
	"os"
	"path/filepath"
	"testing"

	"golang.org/x/sys/unix"
)

// recvConsole is go-runc's receiving side (console.go's ReceiveFile), its
// checks included: a name shorter than the buffer, one control message of
// exactly one descriptor.
func recvConsole(l *net.UnixListener) (string, int, error) {
	c, err := l.AcceptUnix()
	if err != nil {
		return "", -1, err
	}
	defer c.Close()
	name := make([]byte, maxConsoleName)
	oob := make([]byte, unix.CmsgSpace(4))
	n, oobn, _, _, err := c.ReadMsgUnix(name, oob)
	if err != nil {
		return "", -1, err
	}
	if n >= maxConsoleName || oobn != unix.CmsgSpace(4) || n == 0 {
		return "", -1, errors.New("recvfd: incorrect number of bytes read")
	}
	scms, err := unix.ParseSocketControlMessage(oob[:oobn])
	if err != nil || len(scms) != 1 {
		return "", -1, errors.New("recvfd: number of SCMs is not 1")
	}
	fds, err := unix.ParseUnixRights(&scms[0])
	if err != nil || len(fds) != 1 {
		return "", -1, errors.New("recvfd: number of fds is not 1")
	}
	return string(name[:n]), fds[0], nil
}

func TestSendConsole(t *testing.T) {
	sock := filepath.Join(t.TempDir(), "console.sock")
	l, err := net.ListenUnix("unix", &net.UnixAddr{Name: sock, Net: "unix"})
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	// A real pty master, as the init will send.
	master, err := os.OpenFile("/dev/ptmx", os.O_RDWR|unix.O_NOCTTY|unix.O_CLOEXEC, 0)
	if err != nil {
		t.Skipf("no /dev/ptmx here: %v", err)
	}
	defer master.Close()
	type got struct {
		name string
		fd   int
		err  error
	}
	ch := make(chan got, 1)
	go func() {
		name, fd, err := recvConsole(l)
		ch <- got{name, fd, err}
	}()
	if err := SendConsole(sock, master); err != nil {
		t.Fatal(err)
	}
	g := <-ch
	if g.err != nil {
		t.Fatalf("go-runc's receiver refused it: %v", g.err)
	}
	defer unix.Close(g.fd)
	if g.name != "/dev/ptmx" {
		t.Errorf("payload %q", g.name)
	}
	var a, b unix.Stat_t
	if err := unix.Fstat(int(master.Fd()), &a); err != nil {
		t.Fatal(err)
	}
	if err := unix.Fstat(g.fd, &b); err != nil || a.Ino != b.Ino || a.Rdev != b.Rdev {
		t.Errorf("the descriptor received is not the master: %v", err)
	}
	if err := SendConsole(filepath.Join(t.TempDir(), "none.sock"), master); err == nil {
		t.Error("a socket that is not there took the console")
	}
}

// openPty opens a pty pair on the test's own devpts: master, slave.
func openPty(t *testing.T) (*os.File, *os.File) {
	t.Helper()
	m, err := os.OpenFile("/dev/ptmx", os.O_RDWR|unix.O_NOCTTY, 0)
	if err != nil {
		t.Skipf("no pty here: %v", err)
	}
	t.Cleanup(func() { m.Close() })
	if err := unix.IoctlSetPointerInt(int(m.Fd()), unix.TIOCSPTLCK, 0); err != nil {
		t.Fatalf("unlockpt: %v", err)
	}
	fd, _, errno := unix.Syscall(unix.SYS_IOCTL, m.Fd(), unix.TIOCGPTPEER, unix.O_RDWR|unix.O_NOCTTY|unix.O_CLOEXEC)
	if errno != 0 {
		t.Fatalf("TIOCGPTPEER: %v", errno)
	}
	return m, os.NewFile(uintptr(fd), "slave")
}

// TestProxyConsoleCopiesBothWays: the caller's input reaches the pty's
// slave, the slave's output the caller's output, and Wait returns once the
// slave is closed, with everything written before it copied.
func TestProxyConsoleCopiesBothWays(t *testing.T) {
	master, slave := openPty(t)
	inR, inW, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	defer inR.Close()
	defer inW.Close()
	outR, outW, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	defer outR.Close()
	p := ProxyConsole(master, inR, outW)
	if _, err := inW.Write([]byte("typed\n")); err != nil {
		t.Fatal(err)
	}
	buf := make([]byte, 64)
	n, err := slave.Read(buf) // canonical mode: one line
	if err != nil || string(buf[:n]) != "typed\n" {
		t.Fatalf("the slave read %q (%v), want the caller's input", buf[:n], err)
	}
	if _, err := slave.Write([]byte("printed\n")); err != nil {
		t.Fatal(err)
	}
	slave.Close()
	p.Wait()
	outW.Close()
	got, _ := io.ReadAll(outR)
	// The pty's line discipline echoes the input and turns \n into \r\n.
	if want := "typed\r\nprinted\r\n"; string(got) != want {
		t.Errorf("the caller's output is %q, want %q", got, want)
	}
}

// TestProxyConsoleTerminal: a caller's terminal is raw while the proxy
// runs and as it was after Wait, and its size is the pty's.
func TestProxyConsoleTerminal(t *testing.T) {
	master, slave := openPty(t)
	_, caller := openPty(t) // the caller's terminal: its slave
	defer caller.Close()
	want := &unix.Winsize{Row: 42, Col: 137}
	if err := unix.IoctlSetWinsize(int(caller.Fd()), unix.TIOCSWINSZ, want); err != nil {
		t.Fatal(err)
	}
	before, err := unix.IoctlGetTermios(int(caller.Fd()), unix.TCGETS)
	if err != nil {
		t.Fatal(err)
	}
	if before.Lflag&unix.ICANON == 0 {
		t.Fatal("a new pty is not in canonical mode")
	}
	p := ProxyConsole(master, caller, io.Discard)
	during, _ := unix.IoctlGetTermios(int(caller.Fd()), unix.TCGETS)
	if during.Lflag&(unix.ICANON|unix.ECHO|unix.ISIG) != 0 || during.Oflag&unix.OPOST != 0 {
		t.Errorf("the caller's terminal is not raw while proxied: lflag %#x oflag %#x", during.Lflag, during.Oflag)
	}
	if ws, err := unix.IoctlGetWinsize(int(master.Fd()), unix.TIOCGWINSZ); err != nil || ws.Row != want.Row || ws.Col != want.Col {
		t.Errorf("the pty's size is %+v (%v), want the caller's %+v", ws, err, want)
	}
	slave.Close()
	p.Wait()
	after, _ := unix.IoctlGetTermios(int(caller.Fd()), unix.TCGETS)
	if *after != *before {
		t.Errorf("the caller's terminal after Wait is %+v, want %+v", after, before)
	}
}
