package netns

import (
	"io"
	"net"
	"os"

	"golang.org/x/sys/unix"
)

// Inside addresses of the proxy, as the program's environment names them.
const (
	HTTPProxyAddr  = "127.0.0.1:3128"
	SOCKSProxyAddr = "127.0.0.1:1080"
)

// ProxyEnv is what a sandbox in proxy mode finds in its environment.
func ProxyEnv() []string {
	httpProxy, socks := "http://"+HTTPProxyAddr, "socks5h://"+SOCKSProxyAddr
	var env []string
	for _, kv := range [][2]string{
		{"HTTP_PROXY", httpProxy}, {"HTTPS_PROXY", httpProxy}, {"ALL_PROXY", socks}, {"NO_PROXY", "localhost,127.0.0.1,::1"},
	} {
		env = append(env, kv[0]+"="+kv[1], lower(kv[0])+"="+kv[1])
	}
	return env
}

func lower(s string) string {
	b := []byte(s)
	for i, c := range b {
		if c >= 'A' && c <= 'Z' {
			b[i] = c + 32
		}
	}
	return string(b)
}

// StartRelay listens inside the sandbox on HTTPProxyAddr and
// SOCKSProxyAddr and hands every connection to the host-side proxy: a new
// socketpair per connection, one end sent over ctl (SCM_RIGHTS, one byte
// saying which proxy), the other relayed to the client. Nothing inside
// listens on a host port, and the proxy holds the whole policy. Runs in
// the init, in the sandbox's network namespace.
func StartRelay(ctl int) error {
	for _, l := range []struct {
		addr string
		kind byte
	}{{HTTPProxyAddr, KindHTTP}, {SOCKSProxyAddr, KindSOCKS}} {
		ln, err := net.Listen("tcp", l.addr)
		if err != nil {
			return err
		}
		go accept(ln, l.kind, ctl)
	}
	return nil
}

func accept(ln net.Listener, kind byte, ctl int) {
	for {
		c, err := ln.Accept()
		if err != nil {
			return
		}
		go relay(c, kind, ctl)
	}
}

func relay(c net.Conn, kind byte, ctl int) { relayMsg(c, []byte{kind}, ctl) }

// MaxRelayed is the most connections the init relays at once (twice the
// proxy's DefaultMaxConns, which ward refuses past anyway). The init is
// outside the sandbox's cgroup: past this, a connection is closed at
// once, so that its fds, goroutines and threads stay bounded.
const MaxRelayed = 2 * DefaultMaxConns

var relaySlots = make(chan struct{}, MaxRelayed)

// relayMsg hands c to ward with msg (the kind, and for KindDirect the
// destination) and relays its bytes.
func relayMsg(c net.Conn, msg []byte, ctl int) {
	defer c.Close()
	select {
	case relaySlots <- struct{}{}:
		defer func() { <-relaySlots }()
	default:
		return
	}
	fds, err := unix.Socketpair(unix.AF_UNIX, unix.SOCK_STREAM|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		return
	}
	err = unix.Sendmsg(ctl, msg, unix.UnixRights(fds[1]), nil, 0)
	unix.Close(fds[1])
	if err != nil {
		unix.Close(fds[0])
		return
	}
	f := os.NewFile(uintptr(fds[0]), "ward-relay")
	up, err := net.FileConn(f)
	f.Close()
	if err != nil {
		return
	}
	defer up.Close()
	done := make(chan struct{})
	go func() {
		_, _ = io.Copy(up, c)
		if uc, ok := up.(*net.UnixConn); ok {
			_ = uc.CloseWrite()
		}
		close(done)
	}()
	_, _ = io.Copy(c, up)
	if tc, ok := c.(*net.TCPConn); ok {
		_ = tc.CloseWrite()
	}
	<-done
}

// ServeRelay receives the connections an init's relay hands over ctl and
// serves each with p, until the init is gone (ctl reaches EOF). Runs in
// ward, on the host side.
func ServeRelay(ctl *os.File, p *Proxy) {
	fd := int(ctl.Fd())
	buf, oob := make([]byte, 512), make([]byte, unix.CmsgSpace(4))
	for {
		n, oobn, _, _, err := unix.Recvmsg(fd, buf, oob, 0)
		if err == unix.EINTR {
			continue
		}
		if err != nil || n == 0 {
			return
		}
		msgs, err := unix.ParseSocketControlMessage(oob[:oobn])
		if err != nil || len(msgs) == 0 {
			continue
		}
		fds, err := unix.ParseUnixRights(&msgs[0])
		if err != nil || len(fds) == 0 {
			continue
		}
		f := os.NewFile(uintptr(fds[0]), "ward-proxy-conn")
		c, err := net.FileConn(f)
		f.Close()
		if err != nil {
			continue
		}
		if buf[0] == KindDirect {
			go p.ServeDirect(c, string(buf[1:n]))
			continue
		}
		go p.ServeConn(c, buf[0])
	}
}
