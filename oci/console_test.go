package oci

import (
	"errors"
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
