package supervisor

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"golang.org/x/sys/unix"

	"github.com/wardbox/ward"
	"github.com/wardbox/ward/internal/procstat"
)

// Client talks to the supervisor of Dir and to its sandboxes.
type Client struct {
	Dir Dir
	// Spawn starts a supervisor of Dir and returns once it listens (or
	// could not start); Start calls it, under Dir's lock, when none
	// answers. The CLI's runs `ward supervise` through Spawn.
	Spawn func() error
}

// Start asks the supervisor (spawned if need be) to start sandbox name
// with cfg. The error is a failure to reach the supervisor; the reply's
// Error, the sandbox's failure to start.
func (c Client) Start(name string, cfg ward.Config) (StartReply, error) {
	var last error
	for attempt := 0; attempt < 5; attempt++ {
		conn, err := c.dialSupervisor()
		if err != nil {
			last = err
			continue
		}
		var reply StartReply
		err = json.NewEncoder(conn).Encode(NewStartRequest(name, cfg))
		if err == nil {
			err = json.NewDecoder(conn).Decode(&reply)
		}
		conn.Close()
		switch {
		case err != nil:
			last = fmt.Errorf("the supervisor went away: %w", err)
		case reply.Retry:
			last = errors.New(reply.Error)
			time.Sleep(10 * time.Millisecond)
		default:
			if reply.Error != "" && reply.Code == 0 {
				reply.Code = ward.ExitSetup
			}
			return reply, nil
		}
	}
	return StartReply{}, last
}

// dialSupervisor connects to the supervisor, spawning it first (under
// Dir's lock) when none answers.
func (c Client) dialSupervisor() (net.Conn, error) {
	sock := c.Dir.supervisorSock()
	if conn, err := net.Dial("unix", sock); err == nil {
		return conn, nil
	}
	if err := c.Dir.Ensure(); err != nil {
		return nil, err
	}
	if err := os.MkdirAll(c.Dir.supervisorDir(), 0o700); err != nil {
		return nil, err
	}
	lock, err := os.OpenFile(filepath.Join(c.Dir.supervisorDir(), "lock"), os.O_CREATE|os.O_RDWR, 0o600)
	if err != nil {
		return nil, err
	}
	defer lock.Close()
	if err := unix.Flock(int(lock.Fd()), unix.LOCK_EX); err != nil {
		return nil, fmt.Errorf("lock %s: %w", lock.Name(), err)
	}
	if conn, err := net.Dial("unix", sock); err == nil {
		return conn, nil // another ward start spawned it meanwhile
	}
	if c.Spawn == nil {
		return nil, errors.New("no supervisor runs, and none can be spawned")
	}
	if err := c.Spawn(); err != nil {
		return nil, err
	}
	return net.Dial("unix", sock)
}

// Spawn runs argv as a detached supervisor (its own session, no
// terminal, cwd /) with the write end of a pipe as fd 3, and waits for its
// readiness line there (Ready writes it).
func Spawn(argv ...string) error {
	r, w, err := os.Pipe()
	if err != nil {
		return err
	}
	defer r.Close()
	cmd := exec.Command(argv[0], argv[1:]...)
	cmd.Dir = "/"
	cmd.ExtraFiles = []*os.File{w} // fd 3: the readiness line
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
	if err := cmd.Start(); err != nil {
		w.Close()
		return fmt.Errorf("start the supervisor: %w", err)
	}
	w.Close()
	line, _ := bufio.NewReader(r).ReadString('\n')
	_ = cmd.Process.Release()
	if strings.TrimSpace(line) != "ready" {
		msg := strings.TrimSpace(strings.TrimPrefix(line, "error "))
		if msg == "" {
			msg = "the supervisor exited before it was ready"
		}
		return errors.New(msg)
	}
	return nil
}

// Ready is Serve's ready for a supervisor that Spawn started: it writes
// the readiness line ("ready", or "error MSG") on w and closes it.
func Ready(w *os.File) func(error) {
	return func(err error) {
		if err != nil {
			fmt.Fprintln(w, "error "+err.Error())
		} else {
			fmt.Fprintln(w, "ready")
		}
		w.Close()
	}
}

// call sends req (with fds) on sandbox name's socket and decodes the reply
// into out. sent runs once the fds are on their way: the caller's copies
// may go.
func (c Client) call(name string, req Request, fds []int, out any, sent func()) error {
	conn, err := net.Dial("unix", c.Dir.sock(name))
	if err != nil {
		return fmt.Errorf("no running sandbox %q (%w)", name, err)
	}
	defer conn.Close()
	uc := conn.(*net.UnixConn)
	b, err := json.Marshal(req)
	if err != nil {
		return err
	}
	var oob []byte
	if len(fds) > 0 {
		oob = unix.UnixRights(fds...)
	}
	// The fds go with the first bytes; a stream socket may take the rest
	// of a long request in further writes.
	n, _, err := uc.WriteMsgUnix(b, oob, nil)
	if err != nil {
		return err
	}
	if n < len(b) {
		// Only what is left: the supervisor may already have answered a
		// whole request and closed its end (a write then fails, EPIPE).
		if _, err := uc.Write(b[n:]); err != nil {
			return err
		}
	}
	if sent != nil {
		sent()
	}
	if err := json.NewDecoder(uc).Decode(out); err != nil {
		return fmt.Errorf("the supervisor of %q went away: %w", name, err)
	}
	return nil
}

// Exec runs req in sandbox name with fds as its stdin, stdout and stderr,
// and waits for it. The error is a failure to reach the sandbox; the
// reply's Error, the command's failure to run.
func (c Client) Exec(name string, req ExecRequest, fds [3]int, sent func()) (ExecReply, error) {
	var reply ExecReply
	err := c.call(name, Request{Op: OpExec, Exec: &req}, fds[:], &reply, sent)
	if err == nil && reply.Error == "" && reply.Result == nil {
		err = fmt.Errorf("exec: no result from the supervisor of %q", name)
	}
	return reply, err
}

// Info reads sandbox name's figures.
func (c Client) Info(name string) (Info, error) {
	var reply InfoReply
	if err := c.call(name, Request{Op: OpInfo}, nil, &reply, nil); err != nil {
		return Info{}, err
	}
	if reply.Error != "" {
		return Info{}, errors.New(reply.Error)
	}
	if reply.Info == nil {
		return Info{}, fmt.Errorf("info: no answer from the supervisor of %q", name)
	}
	return *reply.Info, nil
}

// List is the Info of every sandbox with a live supervisor, in name
// order; one that does not answer is left out.
func (c Client) List() []Info {
	var infos []Info
	for _, name := range c.Dir.Names() {
		if info, err := c.Info(name); err == nil {
			infos = append(infos, info)
		}
	}
	return infos
}

// Stop stops sandbox name, whose supervisor is pid, and waits until the
// supervisor has cleaned up: it removes the state directory last, after
// the sandbox and its cgroup are gone. (Its pid alone would not do: as a
// zombie waiting for its parent to reap it, it still answers kill(pid,
// 0).)
func (c Client) Stop(name string, pid int) error {
	var reply StopReply
	if err := c.call(name, Request{Op: OpStop}, nil, &reply, nil); err != nil {
		return err
	}
	if reply.Error != "" {
		return errors.New(reply.Error)
	}
	for i := 0; i < 2000; i++ {
		if _, err := os.Stat(c.Dir.Of(name)); os.IsNotExist(err) || procstat.Dead(pid) {
			return nil
		}
		time.Sleep(time.Millisecond)
	}
	return fmt.Errorf("stop: the supervisor of %q (pid %d) is still running", name, pid)
}
