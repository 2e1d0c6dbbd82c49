package nsexec

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"os/user"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"syscall"

	"golang.org/x/sys/unix"

	"github.com/wardbox/ward/fs"
	"github.com/wardbox/ward/seccomp"
)

// HostUIDBase is the host uid that root inside the sandbox's user namespace
// maps to; inside uids 0..65535 map to HostUIDBase+0..65535. The sandbox
// user (uid 1000 inside) is host uid HostUIDBase+1000: a uid that owns
// nothing on the host, and never host root.
const HostUIDBase = 1_000_000_000

// IDRange is how many uids/gids the sandbox's user namespace maps.
const IDRange = 65536

// Stdio are the init's (and so the program's) standard streams. An
// *os.File is passed straight through; any other reader or writer is
// copied through a pipe.
type Stdio struct {
	Stdin          io.Reader
	Stdout, Stderr io.Writer
	// Console takes the pty master of a program whose spec asks for a
	// terminal of its own (Spec.Console: an OCI container's, Create and
	// Join), once, before they return; it owns the file. Its error fails
	// the setup.
	Console func(master *os.File) error
	// Preserve (OCI, Create and Join: --preserve-fds) are files the
	// program gets as its fds 3, 4, ... in order (Spec.PreserveFDs).
	Preserve []*os.File
}

// Options say how to clone the init.
type Options struct {
	HostNetwork bool // share the host's network namespace
	TTY         bool // keep the caller's session (no setsid)
	// Session starts a long-lived sandbox: no program; commands come with
	// Exec.
	Session bool
	// OverlayKeep is the caller's --overlay-keep directory (nil: none):
	// once the sandbox is gone, Wait copies the overlays' upper layers
	// (whose fd the init passes up) into it.
	OverlayKeep *os.File
	// OverlayKeepLimit caps the bytes that copy writes (the overlay's
	// size; 0: no cap).
	OverlayKeepLimit int64
	// Files are the fds the init inherits past its protocol socket, as
	// numbered by Files.Add: first the cgroup.procs files the program's
	// process writes itself into (spec.CgroupFDs of them), then the
	// sources the plan names by fd.
	Files []*os.File
	// OCI (Create): the init outlives its parent (no parent-death
	// signal); CloneFlags, when not 0, are the namespaces to make (a new
	// user and mount namespace always); UIDMap and GIDMap, when set,
	// replace ward's mapping.
	OCI            bool
	CloneFlags     uintptr
	UIDMap, GIDMap []syscall.SysProcIDMap
	// Join (OCI) are namespaces to join by path (linux.namespaces[].path)
	// rather than make: the init is cloned from a thread that joined them
	// (startOwnedBy). Network, IPC, UTS and cgroup namespaces only: setns
	// joins those per thread, which a multithreaded process may do.
	Join []JoinNS
	// OnJoined (with Join) runs on that thread once it joined them, as
	// the caller, before the clone: what the init, in ward's user
	// namespace, may not change in them (their sysctls, the hostname).
	OnJoined func() error
	// Hooks (OCI, Create), when set, runs the prestart and createRuntime
	// hooks once the container's namespaces exist and its root is built,
	// before the host's root is detached; pid is the init's. Its error
	// ends the create.
	Hooks func(pid int) error
}

// JoinNS is a namespace to join: its path and CLONE_NEW* type.
type JoinNS struct {
	Path string
	Flag uintptr
}

// firstFD is the first fd the init inherits past its protocol socket (3).
const firstFD = cgroupFD0

// Files numbers the fds the init inherits: Add returns the number the
// init sees the file as, so no number is computed anywhere else.
type Files struct{ list []*os.File }

// Add appends f and returns its fd in the init.
func (fs *Files) Add(f *os.File) int {
	fs.list = append(fs.list, f)
	return firstFD + len(fs.list) - 1
}

// Next is the fd the next Add will return.
func (fs *Files) Next() int { return firstFD + len(fs.list) }

// List is the files in fd order.
func (fs *Files) List() []*os.File { return fs.list }

// Sandbox is a started init, seen from the parent.
type Sandbox struct {
	session  bool
	spec     *Spec
	execCtl  *os.File
	execMu   sync.Mutex
	waiters  map[int]waiter
	cmd      *exec.Cmd
	conn     *os.File
	msgs     chan Msg
	waited   chan struct{}
	waitOnce sync.Once
	exit     *Exit
	// fds are the fds that came with the messages not yet read (SCM_RIGHTS).
	fdMu sync.Mutex
	fds  []int
	// upper is the overlays' upper layers (from "ready"), keep the
	// caller's --overlay-keep directory: Wait copies one into the other.
	upper, keep *os.File
	keepLimit   int64
	// listener serves the program's seccomp listener (verbose mode).
	listener *seccomp.Listener
	cloned   int64 // monoUs when the init's exec was done
	// StartedUs is when the program's exec succeeded (MonoUs), as the
	// init saw it: the start of the program's own clock.
	StartedUs int64
	// Steps are the setup step timings: the clone's here, the init's once
	// ready, the program's process's once started.
	Steps []StepTime
	// Landlock is the ABI of the Landlock ruleset the program runs under
	// (0: none), LandlockNote why none (from the init's "ready").
	Landlock     int
	LandlockNote string
}

// Start clones /proc/self/exe as the sandbox init in new user, mount, PID,
// IPC, UTS, cgroup (and unless opt.HostNetwork, network) namespaces and
// sends it the spec. It returns once the init runs; WaitStarted says
// whether setup succeeded.
func Start(spec *Spec, stdio Stdio, opt Options) (*Sandbox, error) {
	if spec.ProxyFD > 0 {
		if err := checkRelayExe(); err != nil {
			return nil, err
		}
	}
	fds, err := unix.Socketpair(unix.AF_UNIX, unix.SOCK_STREAM|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		return nil, &SetupError{Step: "socketpair", Errno: errno(err), Msg: err.Error()}
	}
	parent := os.NewFile(uintptr(fds[0]), "ward-parent")
	child := os.NewFile(uintptr(fds[1]), "ward-child")
	defer child.Close()

	files := Files{list: append([]*os.File{}, opt.Files...)}
	var execOurs *os.File
	if opt.Session {
		efds, err := unix.Socketpair(unix.AF_UNIX, unix.SOCK_SEQPACKET|unix.SOCK_CLOEXEC, 0)
		if err != nil {
			parent.Close()
			return nil, &SetupError{Step: "socketpair", Errno: errno(err), Msg: err.Error()}
		}
		execOurs = os.NewFile(uintptr(efds[0]), "ward-exec")
		theirs := os.NewFile(uintptr(efds[1]), "ward-exec-init")
		defer theirs.Close()
		spec.Session, spec.ExecFD = true, files.Add(theirs)
	}
	relayExe := -1
	if spec.ProxyFD > 0 {
		// The proxy relay is ward's own binary, which the init execs.
		exe, err := os.OpenFile("/proc/self/exe", unix.O_PATH|unix.O_CLOEXEC, 0)
		if err != nil {
			parent.Close()
			return nil, &SetupError{Step: "send-config", Errno: errno(err), Msg: err.Error()}
		}
		defer exe.Close()
		relayExe = files.Add(exe)
	}
	config, err := packInit(spec, relayExe)
	if err != nil {
		parent.Close()
		return nil, err
	}
	joins, err := openJoins(opt.Join)
	if err != nil {
		parent.Close()
		return nil, err
	}
	defer func() {
		for _, j := range joins {
			j.f.Close()
		}
	}()
	extra := append([]*os.File{child}, files.List()...) // fd 3, then firstFD...
	flags := uintptr(unix.CLONE_NEWUSER | unix.CLONE_NEWNS | unix.CLONE_NEWPID |
		unix.CLONE_NEWIPC | unix.CLONE_NEWUTS | unix.CLONE_NEWCGROUP)
	if !opt.HostNetwork {
		flags |= unix.CLONE_NEWNET
	}
	if opt.CloneFlags != 0 {
		flags = opt.CloneFlags | unix.CLONE_NEWUSER | unix.CLONE_NEWNS
	}
	args := []string{initArgv0, initArg}
	if !opt.Session && !opt.OCI {
		// The init forks the program's process first thing, and tells it
		// how many cgroup.procs fds to write (spawn_linux.c).
		args = append(args, strconv.Itoa(spec.CgroupFDs))
	}
	cmd := &exec.Cmd{
		Path: "/proc/self/exe",
		Args: args,
		// The program's environment comes in the config. The only Go
		// inside, the proxy relay, waits on system calls all its life: one
		// P is enough, and one P's caches and workers less memory.
		Env:        []string{"GOMAXPROCS=1"},
		Dir:        "/",
		Stdin:      stdio.Stdin,
		Stdout:     stdio.Stdout,
		Stderr:     stdio.Stderr,
		ExtraFiles: extra,
		SysProcAttr: &syscall.SysProcAttr{
			Cloneflags:                 flags,
			UidMappings:                []syscall.SysProcIDMap{{ContainerID: 0, HostID: HostUIDBase, Size: IDRange}},
			GidMappings:                []syscall.SysProcIDMap{{ContainerID: 0, HostID: HostUIDBase, Size: IDRange}},
			GidMappingsEnableSetgroups: true, // the init must drop the caller's groups
			// Become uid 0 of the new namespace before exec: host root is
			// unmapped there, and only a mapped root keeps its capabilities
			// across execve. Empty Groups drops the caller's groups.
			Credential: &syscall.Credential{Uid: 0, Gid: 0},
			Pdeathsig:  syscall.SIGKILL,
			Setsid:     !opt.TTY,
		},
	}
	if opt.OCI {
		cmd.SysProcAttr.Pdeathsig = 0
		if opt.UIDMap != nil {
			cmd.SysProcAttr.UidMappings, cmd.SysProcAttr.GidMappings = opt.UIDMap, opt.GIDMap
		}
	}
	full := RootlessFullMapping()
	switch {
	case full != nil:
		fullRangeClone(cmd.SysProcAttr)
	case os.Geteuid() != 0:
		unprivileged(cmd.SysProcAttr)
	}
	t0 := monoUs()
	// Start returns once the child has exec'd (or failed to).
	if err := startOwnedBy(cmd, HostUIDBase, joins, opt.OnJoined); err != nil {
		parent.Close()
		var se *SetupError
		if errors.As(err, &se) {
			return nil, se
		}
		return nil, &SetupError{Step: "clone", Errno: errno(err), Msg: err.Error()}
	}
	sb := &Sandbox{session: opt.Session, spec: spec, execCtl: execOurs, waiters: map[int]waiter{}, cmd: cmd, conn: parent,
		msgs: make(chan Msg, 4), waited: make(chan struct{}), keep: opt.OverlayKeep, keepLimit: opt.OverlayKeepLimit}
	sb.cloned = monoUs()
	sb.Steps = []StepTime{{Step: "clone-init", Us: sb.cloned - t0, Side: "parent"}}
	if full != nil {
		// The init waits for its config; its ids are mapped before it.
		if err := full.apply(cmd.Process.Pid); err != nil {
			_ = cmd.Process.Kill()
			_ = cmd.Wait()
			parent.Close()
			return nil, &SetupError{Step: "map-ids", Msg: err.Error()}
		}
		t := monoUs()
		sb.Steps = append(sb.Steps, StepTime{Step: "map-ids", Us: t - sb.cloned, Side: "parent"})
		sb.cloned = t
	}
	go sb.readMsgs()
	if _, err := parent.Write(config); err != nil {
		sb.Kill()
		_, _ = sb.Wait()
		return nil, &SetupError{Step: "send-config", Errno: errno(err), Msg: err.Error()}
	}
	return sb, nil
}

func (sb *Sandbox) readMsgs() {
	defer close(sb.msgs)
	rc, err := sb.conn.SyscallConn()
	if err != nil {
		return
	}
	dec := json.NewDecoder(bufio.NewReader(&fdReader{rc: rc, sb: sb}))
	for {
		var m Msg
		if err := dec.Decode(&m); err != nil {
			return
		}
		sb.msgs <- m
	}
}

// fdReader reads the protocol socket with recvmsg, keeping the fds that
// come along (in order: each message's FDs take theirs, takeFDs).
type fdReader struct {
	rc  syscall.RawConn
	sb  *Sandbox
	oob [256]byte
}

func (r *fdReader) Read(p []byte) (int, error) {
	var n, oobn int
	var err error
	rerr := r.rc.Read(func(fd uintptr) bool {
		n, oobn, _, _, err = unix.Recvmsg(int(fd), p, r.oob[:], unix.MSG_CMSG_CLOEXEC)
		return err != unix.EAGAIN
	})
	if rerr != nil {
		return 0, rerr
	}
	if oobn > 0 {
		if cms, e := unix.ParseSocketControlMessage(r.oob[:oobn]); e == nil {
			for _, cm := range cms {
				if fds, e := unix.ParseUnixRights(&cm); e == nil {
					r.sb.fdMu.Lock()
					r.sb.fds = append(r.sb.fds, fds...)
					r.sb.fdMu.Unlock()
				}
			}
		}
	}
	if err != nil {
		return 0, err
	}
	if n == 0 {
		return 0, io.EOF
	}
	return n, nil
}

// takeFD is the fd that came with m (m.FDs 1), -1 if none did.
func (sb *Sandbox) takeFD(m Msg) int {
	sb.fdMu.Lock()
	defer sb.fdMu.Unlock()
	fd := -1
	for i := 0; i < m.FDs; i++ {
		if len(sb.fds) == 0 {
			return -1
		}
		if fd >= 0 {
			unix.Close(fd)
		}
		fd, sb.fds = sb.fds[0], sb.fds[1:]
	}
	return fd
}

// serveListener serves the seccomp listener that came with m; it ends,
// and closes it, once no process uses the filter any more.
func (sb *Sandbox) serveListener(m Msg) *seccomp.Listener {
	fd := sb.takeFD(m)
	if fd < 0 {
		return nil
	}
	l := seccomp.NewListener(fd, seccomp.Builtin(sb.spec.SeccompNotify))
	go func() {
		l.Serve()
		unix.Close(fd)
	}()
	return l
}

// Pid is the init's pid on the host.
func (sb *Sandbox) Pid() int { return sb.cmd.Process.Pid }

// WaitStarted waits until the program runs and returns its pid inside the
// sandbox, or a *SetupError (setup failed: the init has exited) or an
// *ExecError (the program could not be executed).
func (sb *Sandbox) WaitStarted() (int, error) {
	for m := range sb.msgs {
		switch m.Type {
		case MsgReady:
			// From the exec to main: the Go runtime's start in the init.
			// The parent notes the clone only once Start has returned, and
			// on a loaded machine the init may be in main by then: 0.
			sb.Steps = append(sb.Steps, StepTime{Step: "start-init", Us: max(0, m.StartUs-sb.cloned), Side: "init"},
				StepTime{Step: "receive-config", Us: m.ConfigUs - m.StartUs, Side: "init"})
			sb.Steps = append(sb.Steps, m.Steps...)
			sb.Landlock, sb.LandlockNote = m.Landlock, m.LandlockNote
			if fd := sb.takeFD(m); fd >= 0 {
				sb.upper = os.NewFile(uintptr(fd), "overlay-upper")
			}
			if sb.session {
				go sb.dispatch()
				return 0, nil
			}
		case MsgStarted:
			sb.Steps = append(sb.Steps, m.Steps...)
			sb.StartedUs = m.StartUs
			return m.Pid, nil
		case MsgListener:
			sb.listener = sb.serveListener(m)
		case MsgError:
			return 0, m.setupError()
		case MsgGateError:
			return 0, gateError(sb.spec, m.GateStep, syscall.Errno(m.Errno), m.Detail)
		case MsgExecError:
			return 0, &ExecError{Path: m.Path, Errno: syscall.Errno(m.Errno)}
		}
	}
	// The init died without a word: report how.
	_, err := sb.Wait()
	msg := "the sandbox init exited during setup"
	if err != nil {
		msg += ": " + err.Error()
	}
	return 0, &SetupError{Step: "init", Msg: msg}
}

// waiter is an Exec waiting for its command's messages.
type waiter struct {
	ch   chan ExecEvent
	spec *Spec // the command's: what its errors name
}

// dispatch routes a long-lived sandbox's messages to the Exec waiting for
// them, by ID, until the init ends.
func (sb *Sandbox) dispatch() {
	for m := range sb.msgs {
		if m.Type == MsgListener {
			// Served until the command's processes are gone; its denials
			// are not reported (a command has no verbose result).
			sb.serveListener(m)
			continue
		}
		sb.execMu.Lock()
		w, ok := sb.waiters[m.ID]
		sb.execMu.Unlock()
		if ok {
			w.ch <- execEvent(m, w.spec)
		}
	}
	sb.execMu.Lock()
	for id, w := range sb.waiters {
		close(w.ch)
		delete(sb.waiters, id)
	}
	sb.execMu.Unlock()
}

// ExecEvent is one step of a command in a long-lived sandbox: exactly one
// of its fields is set.
type ExecEvent struct {
	Started  bool        // the command runs (Pid is its pid inside)
	Pid      int         //
	ExecErr  *ExecError  // it could not be executed
	SetupErr *SetupError // its process could not be set up
	Exit     *Exit       // it ended
}

// execEvent is the typed event of a message about the command of spec.
func execEvent(m Msg, spec *Spec) ExecEvent {
	switch m.Type {
	case MsgStarted:
		return ExecEvent{Started: true, Pid: m.Pid}
	case MsgExecError:
		return ExecEvent{ExecErr: &ExecError{Path: m.Path, Errno: syscall.Errno(m.Errno)}}
	case MsgGateError:
		return ExecEvent{SetupErr: gateError(spec, m.GateStep, syscall.Errno(m.Errno), m.Detail)}
	case MsgExit:
		if m.Exit != nil {
			return ExecEvent{Exit: m.Exit}
		}
	}
	return ExecEvent{SetupErr: m.setupError()}
}

// Exec asks a long-lived sandbox's init to run req with stdio as the
// command's 0, 1 and 2: its gate, packed here (the sandbox's spec with
// req's arguments, environment and directory), with the three fds. The
// channel gets Started (or ExecErr / SetupErr), then Exit, and is closed
// if the sandbox ends first.
func (sb *Sandbox) Exec(req ExecRequest, stdio [3]*os.File) (<-chan ExecEvent, error) {
	spec := *sb.spec
	spec.Args, spec.Env, spec.Dir, spec.TTY = req.Args, req.Env, req.Dir, false
	if len(spec.Args) == 0 {
		return nil, fmt.Errorf("send the command to the sandbox: no command")
	}
	gate, err := packGate(&spec)
	if err != nil {
		return nil, err
	}
	ch := make(chan ExecEvent, 4)
	sb.execMu.Lock()
	sb.waiters[req.ID] = waiter{ch: ch, spec: &spec}
	sb.execMu.Unlock()
	err = unix.Sendmsg(int(sb.execCtl.Fd()), execRequest(req.ID, 0, gate), unix.UnixRights(int(stdio[0].Fd()), int(stdio[1].Fd()), int(stdio[2].Fd())), nil, 0)
	if err != nil {
		sb.forget(req.ID)
		return nil, fmt.Errorf("send the command to the sandbox: %w", err)
	}
	return ch, nil
}

// KillExec sends sig to command id's process group.
func (sb *Sandbox) KillExec(id int, sig syscall.Signal) {
	_ = unix.Sendmsg(int(sb.execCtl.Fd()), execRequest(id, int(sig), nil), nil, nil, 0)
}

// Forget drops command id's channel (after its end).
func (sb *Sandbox) Forget(id int) { sb.forget(id) }

// forget drops command id's channel.
func (sb *Sandbox) forget(id int) {
	sb.execMu.Lock()
	delete(sb.waiters, id)
	sb.execMu.Unlock()
}

// Signal sends sig to the init, which relays the forwarded signals to the
// program.
func (sb *Sandbox) Signal(sig os.Signal) error { return sb.cmd.Process.Signal(sig) }

// Kill ends the sandbox: SIGKILL to the init tears down its PID namespace,
// and every process in it dies with it.
func (sb *Sandbox) Kill() { _ = sb.cmd.Process.Kill() }

// ErrNoExit means the init died without reporting the program's end (it
// was killed, or crashed).
var ErrNoExit = errors.New("the sandbox ended without reporting an exit")

// Wait waits for the init to end and returns the program's Exit as the
// init reported it. Once Wait returns, no process of the sandbox is left
// and its streams are drained. It may be called more than once.
func (sb *Sandbox) Wait() (*Exit, error) {
	for m := range sb.msgs {
		switch m.Type {
		case MsgExit:
			sb.exit = m.Exit
			if sb.exit != nil && sb.listener != nil {
				sb.exit.Denied = sb.listener.Denials()
			}
		case MsgListener:
			sb.listener = sb.serveListener(m)
		}
	}
	// Concurrent callers: one reaps, the others wait for it.
	sb.waitOnce.Do(func() {
		_ = sb.cmd.Wait()
		sb.conn.Close()
		sb.keepUpper()
		sb.fdMu.Lock()
		for _, fd := range sb.fds {
			unix.Close(fd)
		}
		sb.fds = nil
		sb.fdMu.Unlock()
		close(sb.waited)
	})
	<-sb.waited
	ex := sb.exit
	if ex == nil {
		return nil, fmt.Errorf("%w (init: %v)", ErrNoExit, sb.cmd.ProcessState)
	}
	return ex, nil
}

// keepUpper copies the overlays' upper layers into the caller's
// --overlay-keep directory (fs.KeepUpper), as the caller: once the init is
// reaped no process of the sandbox is left, so the copy is of a still
// snapshot. Why it failed goes into the exit's KeepError.
func (sb *Sandbox) keepUpper() {
	if sb.upper == nil {
		return
	}
	defer sb.upper.Close()
	if sb.keep == nil {
		return
	}
	if err := fs.KeepUpper(int(sb.upper.Fd()), int(sb.keep.Fd()), sb.keepLimit); err != nil && sb.exit != nil {
		sb.exit.KeepError = err.Error()
	}
}

// Rusage is the init's own resource use including every process it reaped
// (valid after Wait).
func (sb *Sandbox) Rusage() *syscall.Rusage {
	if sb.cmd.ProcessState == nil {
		return nil
	}
	ru, _ := sb.cmd.ProcessState.SysUsage().(*syscall.Rusage)
	return ru
}

func errno(err error) syscall.Errno {
	var en syscall.Errno
	if errors.As(err, &en) {
		return en
	}
	return 0
}

// secbitNoSetUIDFixup keeps a thread's capabilities when its uids change
// from 0 (capabilities(7), SECBIT_NO_SETUID_FIXUP).
const secbitNoSetUIDFixup = 1 << 2

// startOwnedBy starts cmd, whose clone makes the sandbox's user
// namespace, from an OS thread whose effective uid is owner (the uid the
// sandbox's root maps to), so that the namespace is owned by owner, not by
// host root. The kernel charges per-user counters (inotify instances and
// watches, mqueue bytes, user namespaces) up the chain of namespace
// owners: a sandbox owned by host root could exhaust root's. Only this
// thread's credentials change (raw syscalls; Go's setresuid would change
// every thread), with SECBIT_NO_SETUID_FIXUP so it keeps the capabilities
// to write the child's uid_map; they are restored before the thread goes
// back to other goroutines. The thread must live on: the child's
// Pdeathsig follows the thread that cloned it. An unprivileged caller
// owns its namespaces itself.
//
// With joins (an OCI container's namespaces given by path), the thread
// joins them first, as the caller (setns needs CAP_SYS_ADMIN over the
// namespace's owner, host root's for a pod's), and the child inherits
// them; the thread then never goes back to the runtime: it ends with its
// goroutine.
func startOwnedBy(cmd *exec.Cmd, owner int, joins []openJoin, onJoined func() error) error {
	if os.Geteuid() != 0 && len(joins) == 0 {
		return cmd.Start()
	}
	errc := make(chan error, 1)
	go func() {
		runtime.LockOSThread()
		for _, j := range joins {
			if err := unix.Setns(int(j.f.Fd()), int(j.Flag)); err != nil {
				errc <- &SetupError{Step: "join-namespace", Path: j.Path, Errno: errno(err), Msg: fmt.Sprintf("setns %s: %v", j.Path, err)}
				return // the locked thread ends with this goroutine
			}
		}
		if len(joins) > 0 && onJoined != nil {
			if err := onJoined(); err != nil {
				errc <- err
				return
			}
		}
		if os.Geteuid() != 0 {
			errc <- cmd.Start()
			return
		}
		bits, _, e := unix.RawSyscall(unix.SYS_PRCTL, unix.PR_GET_SECUREBITS, 0, 0)
		if e != 0 {
			errc <- fmt.Errorf("prctl(PR_GET_SECUREBITS): %w", e)
			return // the locked thread ends with this goroutine
		}
		if _, _, e := unix.RawSyscall(unix.SYS_PRCTL, unix.PR_SET_SECUREBITS, bits|secbitNoSetUIDFixup, 0); e != 0 {
			errc <- fmt.Errorf("prctl(PR_SET_SECUREBITS): %w", e)
			return
		}
		if _, _, e := unix.RawSyscall(unix.SYS_SETRESUID, ^uintptr(0), uintptr(owner), ^uintptr(0)); e != 0 {
			errc <- fmt.Errorf("setresuid(-1, %d, -1) on the cloning thread: %w", owner, e)
			return
		}
		err := cmd.Start()
		_, _, e1 := unix.RawSyscall(unix.SYS_SETRESUID, ^uintptr(0), 0, ^uintptr(0))
		_, _, e2 := unix.RawSyscall(unix.SYS_PRCTL, unix.PR_SET_SECUREBITS, bits, 0)
		if e1 != 0 || e2 != 0 {
			// Never hand a thread with other credentials to the runtime:
			// keep it locked (and alive, for the child's Pdeathsig).
			errc <- err
			select {}
		}
		if len(joins) > 0 {
			errc <- err
			return // in the container's namespaces: it ends, locked
		}
		runtime.UnlockOSThread()
		errc <- err
	}()
	return <-errc
}

// openJoin is a namespace to join, opened.
type openJoin struct {
	JoinNS
	f *os.File
}

// openJoins opens the namespaces to join; the caller closes them.
func openJoins(js []JoinNS) ([]openJoin, error) {
	var out []openJoin
	for _, j := range js {
		f, err := os.OpenFile(j.Path, os.O_RDONLY|unix.O_CLOEXEC, 0)
		if err != nil {
			for _, o := range out {
				o.f.Close()
			}
			return nil, &SetupError{Step: "join-namespace", Path: j.Path, Errno: errno(err), Msg: err.Error()}
		}
		out = append(out, openJoin{JoinNS: j, f: f})
	}
	return out, nil
}

// SandboxUID is the uid (and gid) of the program inside.
const SandboxUID = 1000

// unprivileged adapts the clone to a caller without privileges, which
// the kernel lets map one id only, its own: the sandbox user (1000
// inside) is the caller, and setgroups(2) is denied in the namespace. The
// init runs as that user too, with every capability of its namespace kept
// across its exec as ambient capabilities (it needs them to build the
// root; the program's process drops them all).
func unprivileged(a *syscall.SysProcAttr) {
	a.UidMappings = []syscall.SysProcIDMap{{ContainerID: SandboxUID, HostID: os.Geteuid(), Size: 1}}
	a.GidMappings = []syscall.SysProcIDMap{{ContainerID: SandboxUID, HostID: os.Getegid(), Size: 1}}
	a.GidMappingsEnableSetgroups = false
	a.Credential = &syscall.Credential{Uid: SandboxUID, Gid: SandboxUID, NoSetGroups: true}
	a.AmbientCaps = nil
	for c := uintptr(0); c <= lastCap(); c++ {
		a.AmbientCaps = append(a.AmbientCaps, c)
	}
}

// lastCap is the kernel's highest capability number.
func lastCap() uintptr {
	b, err := os.ReadFile("/proc/sys/kernel/cap_last_cap")
	if err != nil {
		return 40 // CAP_CHECKPOINT_RESTORE, Linux 5.9
	}
	n, err := strconv.Atoi(strings.TrimSpace(string(b)))
	if err != nil || n < 0 || n > 63 {
		return 40
	}
	return uintptr(n)
}

// idRange is a subordinate range of /etc/subuid or /etc/subgid.
type idRange struct{ start, count int }

// fullMapping is an ordinary user's full range, written by the setuid
// helpers newuidmap and newgidmap (package uidmap) as podman does: inside
// 0..999 and 1001..65535 come from the user's subordinate ranges, inside
// 1000 (the sandbox user) is the caller. The init is root of the
// namespace, the program the caller: apart, as for a root caller.
type fullMapping struct {
	uid, gid       int
	subUID, subGID idRange
}

// rootlessFull is the caller's full mapping, nil for root or where one
// cannot be had (no helpers, no range of at least 65535 ids).
var rootlessFull = sync.OnceValue(func() *fullMapping {
	uid, gid := os.Geteuid(), os.Getegid()
	if uid == 0 || os.Getenv("WARD_SINGLE_MAPPING") != "" {
		return nil
	}
	for _, h := range []string{"newuidmap", "newgidmap"} {
		if !setuidRoot(h) {
			return nil
		}
	}
	name := strconv.Itoa(uid)
	if u, err := user.LookupId(name); err == nil {
		name = u.Username
	}
	su, ok1 := subRange("/etc/subuid", name, uid)
	sg, ok2 := subRange("/etc/subgid", name, uid)
	if !ok1 || !ok2 {
		return nil
	}
	return &fullMapping{uid: uid, gid: gid, subUID: su, subGID: sg}
})

// setuidRoot: helper is on PATH, setuid root, on a mount that honours it.
func setuidRoot(helper string) bool {
	path, err := exec.LookPath(helper)
	if err != nil {
		return false
	}
	var st unix.Stat_t
	var fs unix.Statfs_t
	if unix.Stat(path, &st) != nil || unix.Statfs(path, &fs) != nil {
		return false
	}
	return st.Uid == 0 && st.Mode&unix.S_ISUID != 0 && fs.Flags&unix.ST_NOSUID == 0
}

// RootlessFullMapping is the full mapping this caller gets, nil when it
// gets the single one (or is root).
func RootlessFullMapping() *fullMapping { return rootlessFull() }

// subRange finds user's (by name or uid) first range of at least 65535
// ids in file.
func subRange(file, name string, uid int) (idRange, bool) {
	b, err := os.ReadFile(file)
	if err != nil {
		return idRange{}, false
	}
	for _, line := range strings.Split(string(b), "\n") {
		f := strings.Split(strings.TrimSpace(line), ":")
		if len(f) != 3 || (f[0] != name && f[0] != strconv.Itoa(uid)) {
			continue
		}
		start, err1 := strconv.Atoi(f[1])
		count, err2 := strconv.Atoi(f[2])
		if err1 == nil && err2 == nil && start > 0 && count >= IDRange-1 {
			return idRange{start, count}, true
		}
	}
	return idRange{}, false
}

// args are newuidmap's (or newgidmap's) triples for own and sub.
func mapArgs(pid, own int, sub idRange) []string {
	a := []string{strconv.Itoa(pid),
		"0", strconv.Itoa(sub.start), strconv.Itoa(SandboxUID),
		strconv.Itoa(SandboxUID), strconv.Itoa(own), "1",
		strconv.Itoa(SandboxUID + 1), strconv.Itoa(sub.start + SandboxUID), strconv.Itoa(IDRange - SandboxUID - 1)}
	return a
}

// apply writes pid's maps with the helpers.
func (m *fullMapping) apply(pid int) error {
	for _, c := range []struct {
		helper string
		own    int
		sub    idRange
	}{{"newuidmap", m.uid, m.subUID}, {"newgidmap", m.gid, m.subGID}} {
		if out, err := exec.Command(c.helper, mapArgs(pid, c.own, c.sub)...).CombinedOutput(); err != nil {
			return fmt.Errorf("%s: %v: %s (check /etc/subuid and /etc/subgid, or set WARD_SINGLE_MAPPING=1)", c.helper, err, strings.TrimSpace(string(out)))
		}
	}
	return nil
}

// fullRangeClone clones the init with no mapping yet (the parent has the
// helpers write it before sending the config the init waits for): it runs
// unmapped until then, keeping its namespace's capabilities across its
// exec as ambient ones, and becomes root of the namespace once mapped
// (Spec.BecomeRoot).
func fullRangeClone(a *syscall.SysProcAttr) {
	a.UidMappings, a.GidMappings, a.Credential = nil, nil, nil
	a.AmbientCaps = nil
	for c := uintptr(0); c <= lastCap(); c++ {
		a.AmbientCaps = append(a.AmbientCaps, c)
	}
}
