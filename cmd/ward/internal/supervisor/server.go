package supervisor

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"sync"
	"time"

	"golang.org/x/sys/unix"

	"github.com/wardbox/ward"
)

// requestWait bounds how long a connection may take to send its request:
// clients send it as soon as they are connected, and one that does not
// must not keep the supervisor (and Serve) waiting.
const requestWait = 10 * time.Second

// Server is a supervisor: it starts sandboxes on request and serves each
// one's socket until it is stopped.
type Server struct {
	Dir Dir

	mu        sync.Mutex
	ln        net.Listener
	sandboxes map[string]*sandbox // nil value: being started
	closing   bool                // no more starts: the last sandbox is gone, or Serve's ctx ended
	stopAll   bool                // Serve's ctx ended: stop each sandbox as it is registered
	lnOnce    sync.Once
	handlers  sync.WaitGroup // connections being served
}

type sandbox struct {
	sb      *ward.Sandbox
	started time.Time
	stop    chan struct{} // closed (once: closeOnce) to stop it
}

// NewServer is a supervisor of dir's sandboxes.
func NewServer(dir Dir) *Server {
	return &Server{Dir: dir, sandboxes: map[string]*sandbox{}}
}

// Serve listens on the supervisor's socket, calls ready (nil once it
// listens, else the error, which Serve returns too), and serves start
// requests until its last sandbox is gone. ctx's end stops every sandbox
// as OpStop does, and Serve returns once they are gone. A supervisor that
// never got a sandbox serves until ctx ends.
func (s *Server) Serve(ctx context.Context, ready func(error)) error {
	err := s.Dir.Ensure()
	if err == nil {
		err = os.MkdirAll(s.Dir.supervisorDir(), 0o700)
	}
	var ln net.Listener
	if err == nil {
		sock := s.Dir.supervisorSock()
		_ = os.Remove(sock) // a dead supervisor's: the lock says none runs
		ln, err = net.Listen("unix", sock)
	}
	if err != nil {
		ready(err)
		return err
	}
	s.mu.Lock()
	s.ln = ln
	s.mu.Unlock()
	ready(nil)
	ctxDone := make(chan struct{})
	defer close(ctxDone)
	go func() {
		select {
		case <-ctx.Done():
			s.stopEverything()
		case <-ctxDone:
		}
	}()
	for {
		c, err := ln.Accept()
		if err != nil {
			if s.isClosing() {
				break
			}
			time.Sleep(10 * time.Millisecond) // EMFILE and the like: wait, then go on
			continue
		}
		s.handlers.Add(1)
		go func() {
			defer s.handlers.Done()
			s.serveStart(c)
		}()
	}
	s.handlers.Wait()
	return nil
}

func (s *Server) isClosing() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.closing
}

// stopEverything stops every sandbox, and those being started once they
// are; with none left, Serve ends.
func (s *Server) stopEverything() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.closing, s.stopAll = true, true
	for _, sb := range s.sandboxes {
		if sb != nil {
			closeOnce(sb.stop)
		}
	}
	if len(s.sandboxes) == 0 {
		s.closeListener()
	}
}

// closeListener ends Serve's loop; s.mu is held. Close unlinks the socket
// before it closes it: a ward start that then finds no socket starts a
// new supervisor, whose socket this one must not remove (no os.Remove
// here).
func (s *Server) closeListener() {
	s.lnOnce.Do(func() { s.ln.Close() })
}

func closeOnce(ch chan struct{}) {
	select {
	case <-ch:
	default:
		close(ch)
	}
}

// serveStart answers one StartRequest.
func (s *Server) serveStart(c net.Conn) {
	defer c.Close()
	enc := json.NewEncoder(c)
	_ = c.SetReadDeadline(time.Now().Add(requestWait))
	var req StartRequest
	if err := json.NewDecoder(c).Decode(&req); err != nil {
		_ = enc.Encode(StartReply{Error: "bad request: " + err.Error(), Code: ward.ExitUsage})
		return
	}
	_ = c.SetReadDeadline(time.Time{})
	if err := CheckName(req.Name); err != nil {
		_ = enc.Encode(StartReply{Error: err.Error(), Code: ward.ExitUsage})
		return
	}
	s.mu.Lock()
	if s.closing {
		s.mu.Unlock()
		_ = enc.Encode(StartReply{Error: "the supervisor is closing", Retry: true})
		return
	}
	if _, taken := s.sandboxes[req.Name]; taken {
		s.mu.Unlock()
		_ = enc.Encode(StartReply{Error: fmt.Sprintf("--name=%s: a sandbox of that name is running", req.Name), Code: ward.ExitUsage})
		return
	}
	s.sandboxes[req.Name] = nil
	s.mu.Unlock()

	if err := s.start(req.Name, req.Config(peerCaller(c))); err != nil { // the audit log's caller: ward start's
		code := ward.ExitSetup
		var ce *ward.ConfigError
		if errors.As(err, &ce) {
			code = ward.ExitUsage
		}
		_ = enc.Encode(StartReply{Error: err.Error(), Code: code})
		c.Close()
		s.forget(req.Name) // may end Serve: after the reply
		return
	}
	_ = enc.Encode(StartReply{})
}

// start makes sandbox name's state directory, starts the sandbox,
// registers it and serves its socket until it is stopped; then it
// removes it all.
func (s *Server) start(name string, cfg ward.Config) error {
	dir := s.Dir.Of(name)
	_ = os.RemoveAll(dir) // a dead supervisor's (Alive said so)
	if err := os.Mkdir(dir, 0o700); err != nil {
		return err
	}
	sb, err := ward.Start(context.Background(), cfg)
	if err != nil {
		os.RemoveAll(dir)
		return err
	}
	ln, err := net.Listen("unix", s.Dir.sock(name))
	if err == nil {
		err = writeOwner(dir)
	}
	if err != nil {
		if ln != nil {
			ln.Close()
		}
		sb.Close()
		os.RemoveAll(dir)
		return err
	}
	ss := &sandbox{sb: sb, started: time.Now(), stop: make(chan struct{})}
	// Registered before its socket is served: a stop that comes before the
	// start's reply finds it.
	s.mu.Lock()
	s.sandboxes[name] = ss
	if s.stopAll {
		closeOnce(ss.stop)
	}
	s.mu.Unlock()
	s.handlers.Add(1)
	go func() {
		defer s.handlers.Done()
		for {
			c, err := ln.Accept()
			if err != nil {
				select {
				case <-ss.stop: // its socket is closed
					return
				default: // EMFILE and the like: wait, then go on
					time.Sleep(10 * time.Millisecond)
					continue
				}
			}
			s.handlers.Add(1)
			go func() {
				defer s.handlers.Done()
				s.serveSandbox(c.(*net.UnixConn), name, ss)
			}()
		}
	}()
	go func() {
		<-ss.stop
		ln.Close()
		sb.Close()
		os.RemoveAll(dir) // last: ward stop waits for it
		s.forget(name)
	}()
	return nil
}

// forget drops a sandbox; with the last one gone, Serve returns (after
// this has unlocked).
func (s *Server) forget(name string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	delete(s.sandboxes, name)
	if len(s.sandboxes) == 0 {
		s.closing = true
		s.closeListener()
	}
}

// maxRequest bounds one request on a sandbox's socket (arguments and
// environment of a command included).
const maxRequest = 64 << 20

// serveSandbox answers one Request on sandbox name's socket.
func (s *Server) serveSandbox(c *net.UnixConn, name string, ss *sandbox) {
	defer c.Close()
	enc := json.NewEncoder(c)
	_ = c.SetReadDeadline(time.Now().Add(requestWait))
	// The fds come with the request's first bytes; a long request (a
	// command's arguments) goes on in further reads of the stream.
	buf, oob := make([]byte, 64<<10), make([]byte, unix.CmsgSpace(3*4))
	n, oobn, _, _, err := c.ReadMsgUnix(buf, oob)
	files := receivedFiles(oob[:oobn])
	defer func() {
		for _, f := range files {
			f.Close()
		}
	}()
	if err != nil {
		return
	}
	var req Request
	dec := json.NewDecoder(io.MultiReader(bytes.NewReader(buf[:n]), io.LimitReader(c, maxRequest)))
	err = dec.Decode(&req)
	_ = c.SetReadDeadline(time.Time{})
	if err != nil {
		_ = enc.Encode(errorReply{Error: "bad request: " + err.Error()})
		return
	}
	switch req.Op {
	case OpStop:
		_ = enc.Encode(StopReply{Stopped: name})
		closeOnce(ss.stop)
	case OpInfo:
		_ = enc.Encode(InfoReply{Info: ss.info(name)})
	case OpExec:
		_ = enc.Encode(ss.exec(c, req.Exec, files))
	default:
		_ = enc.Encode(errorReply{Error: fmt.Sprintf("bad request: op %q", req.Op)})
	}
}

// receivedFiles are the fds that came with a request, as files.
func receivedFiles(oob []byte) []*os.File {
	msgs, err := unix.ParseSocketControlMessage(oob)
	if err != nil {
		return nil
	}
	var files []*os.File
	for i := range msgs {
		fds, err := unix.ParseUnixRights(&msgs[i])
		if err != nil {
			continue
		}
		for _, fd := range fds {
			files = append(files, os.NewFile(uintptr(fd), "stdio"))
		}
	}
	return files
}

func (ss *sandbox) info(name string) *Info {
	info := &Info{Name: name, Pid: os.Getpid(), StartedUnix: ss.started.Unix(), AgeSeconds: int64(time.Since(ss.started).Seconds())}
	if st, err := ss.sb.Stats(); err == nil {
		info.MemoryBytes, info.Processes = &st.MemoryCurrent, &st.Processes
	}
	return info
}

// exec runs req with files as its stdin, stdout and stderr. The client
// closing its end of c kills the command.
func (ss *sandbox) exec(c *net.UnixConn, req *ExecRequest, files []*os.File) ExecReply {
	if req == nil {
		return ExecReply{Error: "bad request: exec without its command"}
	}
	if len(files) != 3 {
		return ExecReply{Error: "want the caller's stdin, stdout and stderr"}
	}
	if req.TimeLimit < 0 {
		return ExecReply{Error: fmt.Sprintf("bad request: time limit %v", req.TimeLimit)}
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go func() { // the client going away ends the command
		_, _ = io.Copy(io.Discard, c)
		cancel()
	}()
	res, err := ss.sb.Exec(ctx, ward.Command{Args: req.Args, Env: req.Env, Dir: req.Dir,
		Stdin: files[0], Stdout: files[1], Stderr: files[2], TimeLimit: req.TimeLimit, Caller: peerCaller(c)})
	var ae *ward.AuditError
	switch {
	case res != nil && errors.As(err, &ae):
		return ExecReply{Result: res, AuditError: ae.Error()}
	case err != nil:
		return ExecReply{Error: err.Error()}
	case res == nil:
		return ExecReply{Error: "no result"}
	}
	return ExecReply{Result: res}
}

// peerCaller is the process at the other end of c (SO_PEERCRED: as it
// was when it connected), for the audit log; nil if unknown.
func peerCaller(c net.Conn) *ward.Caller {
	uc, ok := c.(*net.UnixConn)
	if !ok {
		return nil
	}
	rc, err := uc.SyscallConn()
	if err != nil {
		return nil
	}
	var cred *unix.Ucred
	if cerr := rc.Control(func(fd uintptr) { cred, err = unix.GetsockoptUcred(int(fd), unix.SOL_SOCKET, unix.SO_PEERCRED) }); cerr != nil || err != nil {
		return nil
	}
	return &ward.Caller{UID: int(cred.Uid), PID: int(cred.Pid)}
}
