package oci

import (
	"fmt"
	"io"
	"net"
	"os"
	"os/signal"

	"golang.org/x/sys/unix"
)

// maxConsoleName is runc's limit on the payload (the pty's name), which
// go-runc's receiver reads into a buffer of this size.
const maxConsoleName = 4096

// SendConsole sends a pty master to the caller's --console-socket as runc
// does, which is what containerd's shim (go-runc) and conmon accept: over a
// SOCK_STREAM connection, one sendmsg whose payload is the pty's name
// (never empty) and whose control message carries exactly one SCM_RIGHTS
// descriptor.
func SendConsole(socketPath string, master *os.File) error {
	name := master.Name()
	if name == "" {
		name = "/dev/ptmx"
	}
	s, err := DialFDSocket("console socket", socketPath)
	if err != nil {
		return err
	}
	defer s.Close()
	return s.send(name, int(master.Fd()))
}

// FDSocket is a connection to a caller's unix socket that receives one fd
// (--console-socket, --pidfd-socket).
type FDSocket struct {
	what, path string
	c          *net.UnixConn
}

// DialFDSocket connects to the unix socket at path; what names it in
// errors ("pidfd socket"). ward-oci dials --pidfd-socket before it starts
// anything, as runc does, so that a bad socket fails early.
func DialFDSocket(what, path string) (*FDSocket, error) {
	c, err := net.DialUnix("unix", nil, &net.UnixAddr{Name: path, Net: "unix"})
	if err != nil {
		return nil, fmt.Errorf("%s: %w", what, err)
	}
	return &FDSocket{what: what, path: path, c: c}, nil
}

// Close closes the connection.
func (s *FDSocket) Close() error { return s.c.Close() }

// SendPidfd sends a pidfd of process pid as runc 1.2 does for
// --pidfd-socket: the same single sendmsg as SendConsole's, its payload
// runc's: "standard" for a container's process, "setns" for an exec'd
// command (exec true). The pidfd is opened here and closed once sent.
func (s *FDSocket) SendPidfd(pid int, exec bool) error {
	name := "standard"
	if exec {
		name = "setns"
	}
	fd, err := unix.PidfdOpen(pid, 0)
	if err != nil {
		return fmt.Errorf("%s %s: pidfd_open %d: %w", s.what, s.path, pid, err)
	}
	defer unix.Close(fd)
	return s.send(name, fd)
}

// send sends fd with payload name in one sendmsg.
func (s *FDSocket) send(name string, fd int) error {
	if len(name) >= maxConsoleName {
		return fmt.Errorf("%s %s: name too long", s.what, s.path)
	}
	oob := unix.UnixRights(fd)
	n, oobn, err := s.c.WriteMsgUnix([]byte(name), oob, nil)
	if err == nil && (n != len(name) || oobn != len(oob)) {
		err = fmt.Errorf("short write (%d of %d bytes, %d of %d control bytes)", n, len(name), oobn, len(oob))
	}
	if err != nil {
		return fmt.Errorf("%s %s: %w", s.what, s.path, err)
	}
	return nil
}

// ConsoleProxy serves a pty master in ward-oci itself, as runc does for a
// process with a terminal that it does not detach from (run, exec --tty
// without --detach): what comes on the caller's stdin goes to the pty, the
// pty's output to the caller's stdout. When stdin is a terminal, it is
// raw meanwhile (the container's pty does the line editing and turns ^C
// into SIGINT), and its size is the pty's, at the start and on SIGWINCH.
type ConsoleProxy struct {
	master  *os.File
	out     chan struct{} // closed when the pty's output is all copied
	winch   chan os.Signal
	restore func()
}

// ProxyConsole starts serving master (it owns it) with in and out.
func ProxyConsole(master, in *os.File, out io.Writer) *ConsoleProxy {
	p := &ConsoleProxy{master: master, out: make(chan struct{}), restore: func() {}}
	if restore, err := makeRaw(int(in.Fd())); err == nil {
		p.restore = restore
		resize := func() {
			if ws, err := unix.IoctlGetWinsize(int(in.Fd()), unix.TIOCGWINSZ); err == nil {
				_ = unix.IoctlSetWinsize(int(master.Fd()), unix.TIOCSWINSZ, ws)
			}
		}
		resize()
		p.winch = make(chan os.Signal, 1)
		signal.Notify(p.winch, unix.SIGWINCH)
		go func() {
			for range p.winch {
				resize()
			}
		}()
	}
	// The input's copy ends with ward-oci (a read of stdin cannot be
	// stopped); the output's when every holder of the pty's slave has
	// closed it (EIO).
	go func() { _, _ = io.Copy(master, in) }()
	go func() {
		defer close(p.out)
		_, _ = io.Copy(out, master)
	}()
	return p
}

// Wait waits until the pty's output is all copied (every process that had
// the slave open has closed it: the container's, or the command's, and
// what they started), then puts the caller's terminal back as it was.
func (p *ConsoleProxy) Wait() {
	<-p.out
	if p.winch != nil {
		signal.Stop(p.winch)
		close(p.winch)
	}
	p.restore()
	p.master.Close()
}

// makeRaw puts the terminal fd in raw mode (cfmakeraw's flags) and
// returns what puts it back; an error when fd is not a terminal.
func makeRaw(fd int) (func(), error) {
	t, err := unix.IoctlGetTermios(fd, unix.TCGETS)
	if err != nil {
		return nil, err
	}
	old := *t
	t.Iflag &^= unix.IGNBRK | unix.BRKINT | unix.PARMRK | unix.ISTRIP | unix.INLCR | unix.IGNCR | unix.ICRNL | unix.IXON
	t.Oflag &^= unix.OPOST
	t.Lflag &^= unix.ECHO | unix.ECHONL | unix.ICANON | unix.ISIG | unix.IEXTEN
	t.Cflag &^= unix.CSIZE | unix.PARENB
	t.Cflag |= unix.CS8
	t.Cc[unix.VMIN], t.Cc[unix.VTIME] = 1, 0
	if err := unix.IoctlSetTermios(fd, unix.TCSETS, t); err != nil {
		return nil, err
	}
	return func() { _ = unix.IoctlSetTermios(fd, unix.TCSETS, &old) }, nil
}
