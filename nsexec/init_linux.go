package nsexec

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"path/filepath"
	"runtime"
	"runtime/debug"
	"strings"
	"sync"
	"syscall"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"

	"github.com/wardbox/ward/fs"
	"github.com/wardbox/ward/netns"
	"github.com/wardbox/ward/seccomp"
)

// Arguments of the re-executed binary: "ward init" is PID 1 of the sandbox,
// "ward gate" is the program's process until it execs the program.
const (
	initArg = "init"
	gateArg = "gate"
)

// initName is the init's comm, NUL-terminated.
var initName = []byte("ward-init\x00")

// protoFd is the protocol socket in the init (to the parent) and in the
// gate (to the init).
const protoFd = 3

func init() {
	// Setup runs on the main goroutine, locked to the main thread: per-thread
	// state (capabilities, no_new_privs) is then the state of the thread
	// that forks or execs the program.
	if IsInit() || IsGate() {
		runtime.LockOSThread()
	}
}

// IsInit reports whether this process is a sandbox init started by Start.
func IsInit() bool {
	return len(os.Args) == 2 && os.Args[1] == initArg && os.Getpid() == 1
}

// IsIdmapHolder reports whether this process only holds a user namespace
// open for an idmapped mount (see ward's mounts.go): it waits for EOF on
// stdin and exits.
func IsIdmapHolder() bool { return len(os.Args) == 1 && os.Args[0] == "ward-idmap" }

// RunIdmapHolder waits for EOF on stdin, then exits.
func RunIdmapHolder() {
	_, _ = io.Copy(io.Discard, os.Stdin)
	os.Exit(0)
}

// IsGate reports whether this process is a gate forked by the init.
func IsGate() bool {
	return len(os.Args) == 2 && os.Args[1] == gateArg && os.Getppid() == 1
}

// forwarded are relayed from the parent to the program.
var forwarded = []os.Signal{syscall.SIGINT, syscall.SIGTERM, syscall.SIGHUP, syscall.SIGQUIT, syscall.SIGUSR1, syscall.SIGUSR2}

// proc is one side's state: the protocol socket and the spec.
type proc struct {
	sendMu sync.Mutex
	upper  int // the overlays' upper layers, for --overlay-keep (0: none)
	conn   *os.File
	enc    *json.Encoder
	dec    *json.Decoder
	spec   Spec
	steps  []StepTime
}

func newProc() *proc {
	conn := os.NewFile(protoFd, "ward-proto")
	return &proc{conn: conn, enc: json.NewEncoder(conn), dec: json.NewDecoder(bufio.NewReader(conn))}
}

// step is one setup step, in order. Its name is what the operator sees in
// "ward: <step>: <cause>".
type step struct {
	name string
	run  func(*proc) error
	when func(*proc) bool
}

// initSteps build the sandbox; they run in the init, which keeps its
// capabilities (over the sandbox's own namespaces only) to serve the
// sandbox for its whole life.
var initSteps = []step{
	{name: "close-inherited-fds", run: func(*proc) error { return closeInheritedFds() }},
	{name: "make-mounts-private", run: func(*proc) error { return fs.MakeMountsPrivate() }},
	{name: "enter-new-root", run: func(p *proc) error { return fs.EnterNewRoot(p.spec.RootSize) }},
	{name: "build-root", run: func(p *proc) error { return fs.Build(p.spec.Plan) }},
	{name: "hide-overlay-layers", run: (*proc).hideOverlayLayers, when: func(p *proc) bool { return p.spec.Overlay }},
	{name: "detach-host-root", run: func(*proc) error { return fs.DetachOldRoot() }},
	{name: "mount-user-paths", run: func(p *proc) error { return fs.MountUser(p.spec.UserMounts) }, when: func(p *proc) bool { return len(p.spec.UserMounts) > 0 }},
	{name: "mask-denied", run: func(p *proc) error { return fs.MaskDenied(p.spec.DenyPatterns) }, when: func(p *proc) bool { return len(p.spec.DenyPatterns) > 0 }},
	{name: "seal-root", run: func(*proc) error { return fs.SealRoot() }, when: func(p *proc) bool { return !p.spec.Overlay }},
	{name: "give-root-to-user", run: func(p *proc) error { return fs.GiveRootTo(p.spec.UID, p.spec.GID) }, when: func(p *proc) bool { return p.spec.Overlay }},
	{name: "set-hostname", run: func(p *proc) error { return unix.Sethostname([]byte(p.spec.Hostname)) }},
	{name: "loopback-up", run: func(*proc) error { return netns.LoopbackUp() }, when: func(p *proc) bool { return p.spec.LoopbackUp }},
	{name: "proxy-relay", run: func(p *proc) error { return netns.StartRelay(p.spec.ProxyFD) }, when: func(p *proc) bool { return p.spec.ProxyFD > 0 }},
	{name: "dns-stub", run: func(p *proc) error { return netns.StartDirect(p.spec.ProxyFD, p.spec.DirectPorts, p.spec.DirectNames) }, when: func(p *proc) bool { return p.spec.ProxyFD > 0 }},
	// Nobody inside may ptrace the init or read its memory through /proc.
	{name: "non-dumpable", run: func(*proc) error { return unix.Prctl(unix.PR_SET_DUMPABLE, 0, 0, 0, 0) }},
}

// gateSteps turn the gate into the program's process, in DESIGN.md
// section 5's order; exec follows at once.
var gateSteps = []step{
	{name: "set-rlimits", run: (*proc).setRlimits},
	{name: "enter-cgroup", run: (*proc).enterCgroup, when: func(p *proc) bool { return p.spec.CgroupFDs > 0 }},
	// Unshared after entering the cgroup, the namespace is rooted at the
	// sandbox's cgroup: the program sees "0::/" and nothing of the host's
	// hierarchy. It needs CAP_SYS_ADMIN, so before the privileges go.
	{name: "enter-cgroup-namespace", run: func(*proc) error { return unix.Unshare(unix.CLONE_NEWCGROUP) }},
	{name: "drop-bounding-set", run: func(*proc) error { return dropBoundingSet() }},
	{name: "lock-securebits", run: func(*proc) error { return lockSecurebits() }},
	{name: "set-user", run: (*proc).setUser},
	{name: "clear-capabilities", run: func(*proc) error { return clearCapabilities() }},
	{name: "no-new-privs", run: func(*proc) error { return unix.Prctl(unix.PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) }},
	{name: "enter-workdir", run: func(p *proc) error { return os.Chdir(p.spec.Dir) }},
	// Last, as close to exec as it can be: every step above may use
	// syscalls the policy denies.
	{name: "seccomp", run: (*proc).loadSeccomp, when: func(p *proc) bool { return len(p.spec.Seccomp) > 0 }},
}

func (p *proc) runSteps(steps []step) {
	for _, st := range steps {
		if st.when != nil && !st.when(p) {
			continue
		}
		t0 := time.Now()
		if err := st.run(p); err != nil {
			p.fail(st.name, err)
		}
		p.steps = append(p.steps, StepTime{Step: st.name, Us: time.Since(t0).Microseconds()})
	}
}

// RunInit is the sandbox init. It never returns: it exits 0 after reporting
// the program's end, 71 after reporting a setup failure, 127 when the
// program cannot be executed.
func RunInit() {
	// Name the init for ps inside and on the host ("exe" otherwise).
	_ = unix.Prctl(unix.PR_SET_NAME, uintptr(unsafe.Pointer(&initName[0])), 0, 0, 0)
	p := newProc()
	p.spec = p.receive(MsgConfig).spec
	p.runSteps(initSteps)
	p.send(Msg{Type: MsgReady, Steps: p.steps})
	if p.spec.Session {
		p.serveSession()
	}
	p.runProgram()
}

// RunGate is the program's process before it is the program: it waits
// until the parent has put it in the sandbox's cgroup, drops every
// privilege and execs the program. It never returns.
func RunGate() {
	// Nothing the init passed besides 0-2 reaches the program, fd 3 included.
	if err := closeInheritedFds(); err != nil {
		os.Exit(71)
	}
	p := newProc()
	p.spec = p.receive(MsgConfig).spec
	// No garbage collection from here: a GC worker could need a new
	// thread after enterCgroup, when the cgroup's pids.max may forbid it.
	debug.SetGCPercent(-1)
	p.runSteps(gateSteps)
	path, err := lookPath(p.spec.Args[0], envPath(p.spec.Env))
	if err == nil {
		err = syscall.Exec(path, p.spec.Args, p.spec.Env)
	}
	errno := fs.Errno(err)
	if errno == 0 {
		errno = syscall.ENOENT
	}
	p.send(Msg{Type: MsgExecError, Path: p.spec.Args[0], Errno: int(errno)})
	os.Exit(127)
}

// enterCgroup moves the gate into the sandbox's cgroup through the
// cgroup.procs files the parent opened (fds 4...): writing "0" means "this
// process", and the kernel checks the opener's credentials (Linux 5.16+),
// so the gate needs no view of the cgroup file system. All the gate's
// threads move, over pids.max if need be (a migration may); exec leaves
// one. Nothing of the program runs before it is inside; of ward's, only the
// gate's last few system calls run inside, with garbage collection off so
// that the runtime needs no new thread.
func (p *proc) enterCgroup() error {
	for i := 0; i < p.spec.CgroupFDs; i++ {
		fd := protoFd + 1 + i
		if _, err := unix.Write(fd, []byte("0")); err != nil {
			return fmt.Errorf("write 0 to cgroup.procs (fd %d): %w (ward needs Linux 5.16 or later)", fd, err)
		}
	}
	return nil
}

// received is a decoded message with its spec copied out.
type received struct {
	Msg
	spec Spec
}

// receive reads the next message and insists on its type.
func (p *proc) receive(want string) received {
	var m Msg
	if err := p.dec.Decode(&m); err != nil || m.Type != want || (want == MsgConfig && m.Spec == nil) {
		fmt.Fprintf(os.Stderr, "ward %s: internal command, started by ward run (want %q on fd %d)\n", os.Args[1], want, protoFd)
		os.Exit(2)
	}
	r := received{Msg: m}
	if m.Spec != nil {
		r.spec = *m.Spec
	}
	return r
}

func (p *proc) send(m Msg) {
	p.sendMu.Lock()
	defer p.sendMu.Unlock()
	// A send that fails means the other side is gone: nothing to report to.
	if err := p.enc.Encode(m); err != nil {
		os.Exit(137)
	}
}

// fail reports a setup error and exits; the parent prints it and exits 71.
func (p *proc) fail(step string, err error) {
	m := Msg{Type: MsgError, Step: step, Message: err.Error(), Errno: int(fs.Errno(err))}
	var fe *fs.Error
	var pe *os.PathError
	switch {
	case errors.As(err, &fe):
		m.Path = fe.Path
	case errors.As(err, &pe):
		m.Path = pe.Path
	}
	p.send(m)
	os.Exit(71)
}

// closeInheritedFds marks every fd above 2 close-on-exec, the protocol
// socket included: whatever the caller of ward left open (without
// O_CLOEXEC) never reaches the program.
func closeInheritedFds() error {
	return unix.CloseRange(3, ^uint(0), unix.CLOSE_RANGE_CLOEXEC)
}

func (p *proc) setRlimits() error {
	// syscall.Setrlimit (not unix.) so the Go runtime does not restore its
	// own raised RLIMIT_NOFILE in the program.
	n := p.spec.NoFile
	if err := syscall.Setrlimit(syscall.RLIMIT_NOFILE, &syscall.Rlimit{Cur: n, Max: n}); err != nil {
		return fmt.Errorf("RLIMIT_NOFILE=%d: %w", n, err)
	}
	if err := syscall.Setrlimit(unix.RLIMIT_CORE, &syscall.Rlimit{}); err != nil {
		return fmt.Errorf("RLIMIT_CORE=0: %w", err)
	}
	if c := p.spec.CPUSeconds; c > 0 {
		if err := syscall.Setrlimit(unix.RLIMIT_CPU, &syscall.Rlimit{Cur: c, Max: c + 1}); err != nil {
			return fmt.Errorf("RLIMIT_CPU=%d: %w", c, err)
		}
	}
	if f := p.spec.FileSize; f > 0 {
		if err := syscall.Setrlimit(unix.RLIMIT_FSIZE, &syscall.Rlimit{Cur: f, Max: f}); err != nil {
			return fmt.Errorf("RLIMIT_FSIZE=%d: %w", f, err)
		}
		// An ignored signal stays ignored across exec: the program gets
		// EFBIG from write(2) instead of dying of SIGXFSZ.
		signal.Ignore(syscall.SIGXFSZ)
	}
	return nil
}

func (p *proc) setUser() error {
	// Supplementary groups first: the init inherited the caller's (root's
	// group 0 among them), which must not follow the program.
	if err := syscall.Setgroups([]int{p.spec.GID}); err != nil {
		return fmt.Errorf("setgroups(%d): %w", p.spec.GID, err)
	}
	if err := syscall.Setresgid(p.spec.GID, p.spec.GID, p.spec.GID); err != nil {
		return fmt.Errorf("setresgid(%d): %w", p.spec.GID, err)
	}
	if err := syscall.Setresuid(p.spec.UID, p.spec.UID, p.spec.UID); err != nil {
		return fmt.Errorf("setresuid(%d): %w", p.spec.UID, err)
	}
	return nil
}

// dropBoundingSet empties the capability bounding set and the ambient set
// of this thread (it needs CAP_SETPCAP, so it runs before set-user).
func dropBoundingSet() error {
	for c := 0; c <= unix.CAP_LAST_CAP; c++ {
		if err := unix.Prctl(unix.PR_CAPBSET_DROP, uintptr(c), 0, 0, 0); err != nil && err != unix.EINVAL {
			return fmt.Errorf("PR_CAPBSET_DROP %d: %w", c, err)
		}
	}
	if err := unix.Prctl(unix.PR_CAP_AMBIENT, unix.PR_CAP_AMBIENT_CLEAR_ALL, 0, 0, 0); err != nil {
		return fmt.Errorf("PR_CAP_AMBIENT_CLEAR_ALL: %w", err)
	}
	return nil
}

// loadSeccomp loads the filters; in notify mode it hands the listener to
// the init over fd 3 (SCM_RIGHTS, one byte 'L') before exec.
func (p *proc) loadSeccomp() error {
	if p.spec.SeccompNotify == "" {
		return seccomp.Load(p.spec.Seccomp)
	}
	fd, err := seccomp.LoadListener(p.spec.Seccomp[0])
	if err != nil {
		return err
	}
	defer unix.Close(fd)
	if err := unix.Sendmsg(protoFd, []byte{'L'}, unix.UnixRights(fd), nil, 0); err != nil {
		return fmt.Errorf("send the seccomp listener to the init: %w", err)
	}
	return nil
}

func (p *proc) hideOverlayLayers() error {
	fd, err := fs.HideOverlayLayers(p.spec.OverlayKeepFD > 0)
	if fd > 0 {
		p.upper = fd
	}
	return err
}

// lockSecurebits makes uid 0 mean nothing (no capabilities on exec, none
// kept or regained across uid changes, no ambient raise) and locks it all,
// so neither the program nor anything it execs can undo it. It needs
// CAP_SETPCAP, so it runs before set-user.
func lockSecurebits() error {
	const bits = 1<<0 | 1<<1 | // SECBIT_NOROOT, _LOCKED
		1<<3 | // SECBIT_NO_SETUID_FIXUP_LOCKED (fixup stays on: set-user drops caps)
		1<<5 | // SECBIT_KEEP_CAPS_LOCKED (keep-caps stays off)
		1<<6 | 1<<7 // SECBIT_NO_CAP_AMBIENT_RAISE, _LOCKED
	if err := unix.Prctl(unix.PR_SET_SECUREBITS, bits, 0, 0, 0); err != nil {
		return fmt.Errorf("PR_SET_SECUREBITS %#x: %w", bits, err)
	}
	return nil
}

// clearCapabilities empties the effective, permitted and inheritable sets.
// set-user already cleared effective and permitted; inheritable survives a
// uid change, so clear all three explicitly and check.
func clearCapabilities() error {
	hdr := unix.CapUserHeader{Version: unix.LINUX_CAPABILITY_VERSION_3}
	var data [2]unix.CapUserData
	if err := unix.Capset(&hdr, &data[0]); err != nil {
		return fmt.Errorf("capset: %w", err)
	}
	if err := unix.Capget(&hdr, &data[0]); err != nil {
		return fmt.Errorf("capget: %w", err)
	}
	for _, d := range data {
		if d.Effective|d.Permitted|d.Inheritable != 0 {
			return fmt.Errorf("capabilities still set after capset: %+v", data)
		}
	}
	return nil
}

// forkGate forks a gate for spec (its Args, Env, Dir) with stdio as its
// 0, 1 and 2, and waits until it execs the program (nil) or reports why
// it could not (the message to relay). In notify mode it also returns the
// seccomp listener the gate handed over.
func (p *proc) forkGate(spec Spec, stdio [3]int) (int, *Msg, *seccomp.Listener) {
	fds, err := unix.Socketpair(unix.AF_UNIX, unix.SOCK_STREAM|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		return 0, &Msg{Type: MsgError, Step: "gate-socketpair", Message: err.Error(), Errno: int(fs.Errno(err))}, nil
	}
	// Exec ourselves from the detached host mount: /proc/self/exe still
	// names the binary. The gate's fd 3 is its end of the socketpair; the
	// cgroup.procs fds follow at the same numbers as here.
	files := []uintptr{uintptr(stdio[0]), uintptr(stdio[1]), uintptr(stdio[2]), uintptr(fds[1])}
	for i := 0; i < spec.CgroupFDs; i++ {
		files = append(files, uintptr(protoFd+1+i))
	}
	pid, err := syscall.ForkExec("/proc/self/exe", []string{"ward", gateArg}, &syscall.ProcAttr{
		Env:   []string{},
		Files: files,
		Sys:   &syscall.SysProcAttr{Setsid: !spec.TTY},
	})
	unix.Close(fds[1])
	gate := os.NewFile(uintptr(fds[0]), "ward-gate")
	defer gate.Close()
	if err != nil {
		return 0, &Msg{Type: MsgError, Step: "fork-gate", Message: err.Error(), Errno: int(fs.Errno(err))}, nil
	}
	if err := json.NewEncoder(gate).Encode(Msg{Type: MsgConfig, Spec: &spec}); err != nil {
		return pid, &Msg{Type: MsgError, Step: "configure-gate", Message: err.Error()}, nil
	}
	var first io.Reader = strings.NewReader("")
	var listener *seccomp.Listener
	if spec.SeccompNotify != "" {
		// The gate sends the listener fd, or (it failed before) the first
		// byte of an error message.
		buf, oob := make([]byte, 1), make([]byte, unix.CmsgSpace(4))
		n, oobn, _, _, err := unix.Recvmsg(fds[0], buf, oob, 0)
		if err == nil && oobn > 0 {
			if msgs, err := unix.ParseSocketControlMessage(oob[:oobn]); err == nil && len(msgs) > 0 {
				if rights, err := unix.ParseUnixRights(&msgs[0]); err == nil && len(rights) > 0 {
					listener = seccomp.NewListener(rights[0], seccomp.Builtin(spec.SeccompNotify))
					go listener.Serve()
				}
			}
		} else if err == nil && n > 0 {
			first = bytes.NewReader(buf[:n])
		}
	}
	// The gate reports a failure, or execs: then its end of the socket
	// closes (CLOEXEC) and the read sees EOF.
	var m Msg
	if err := json.NewDecoder(bufio.NewReader(io.MultiReader(first, gate))).Decode(&m); err == nil {
		return pid, &m, nil
	}
	return pid, nil, listener
}

// runProgram forks the gate for the program and reports whether it
// started; then it supervises it.
func (p *proc) runProgram() {
	sigs := make(chan os.Signal, 16)
	signal.Notify(sigs, append([]os.Signal{syscall.SIGCHLD}, forwarded...)...)
	// The parent only ever closes its end: EOF means it died, and then the
	// sandbox must end.
	go func() {
		var m Msg
		for p.dec.Decode(&m) == nil {
		}
		os.Exit(137)
	}()
	pid, failed, listener := p.forkGate(p.spec, [3]int{0, 1, 2})
	if failed != nil {
		p.send(*failed) // error or exec_error, relayed as is
		os.Exit(71)
	}
	p.send(Msg{Type: MsgStarted, Pid: pid})
	p.supervise(pid, sigs, listener)
}

// serveSession runs a long-lived sandbox: each ExecRequest that comes
// over ExecFD becomes a gate and a program; every end is reported by ID.
// The init ends when its parent does (EOF on fd 3).
func (p *proc) serveSession() {
	sigs := make(chan os.Signal, 64)
	signal.Notify(sigs, syscall.SIGCHLD)
	go func() {
		var m Msg
		for p.dec.Decode(&m) == nil {
		}
		os.Exit(0)
	}()
	var mu sync.Mutex
	running := map[int]int{} // pid -> id
	early := map[int]*Exit{} // reaped before their pid was recorded
	go func() {
		buf, oob := make([]byte, 1<<20), make([]byte, unix.CmsgSpace(3*4))
		for {
			n, oobn, _, _, err := unix.Recvmsg(p.spec.ExecFD, buf, oob, 0)
			if err == unix.EINTR {
				continue
			}
			if err != nil || n == 0 {
				os.Exit(0)
			}
			var req ExecRequest
			if json.Unmarshal(buf[:n], &req) != nil {
				continue
			}
			var fds []int
			if msgs, err := unix.ParseSocketControlMessage(oob[:oobn]); err == nil && len(msgs) > 0 {
				fds, _ = unix.ParseUnixRights(&msgs[0])
			}
			if req.Kill != 0 {
				mu.Lock()
				for pid, id := range running {
					if id == req.ID {
						_ = syscall.Kill(-pid, syscall.Signal(req.Kill))
					}
				}
				mu.Unlock()
				continue
			}
			if len(fds) != 3 {
				p.send(Msg{Type: MsgError, ID: req.ID, Step: "exec", Message: "want 3 stdio fds"})
				continue
			}
			spec := p.spec
			spec.Args, spec.Env, spec.Dir = req.Args, req.Env, req.Dir
			spec.TTY = false
			go func(req ExecRequest, fds []int) {
				pid, failed, _ := p.forkGate(spec, [3]int{fds[0], fds[1], fds[2]})
				for _, fd := range fds {
					unix.Close(fd)
				}
				if failed != nil {
					failed.ID = req.ID
					p.send(*failed)
					return
				}
				mu.Lock()
				if ex, ok := early[pid]; ok {
					delete(early, pid)
					mu.Unlock()
					p.send(Msg{Type: MsgStarted, ID: req.ID, Pid: pid})
					p.send(Msg{Type: MsgExit, ID: req.ID, Exit: ex})
					return
				}
				running[pid] = req.ID
				mu.Unlock()
				p.send(Msg{Type: MsgStarted, ID: req.ID, Pid: pid})
			}(req, fds)
		}
	}()
	for range sigs {
		for {
			r, ex, ok := reapOne()
			if !ok {
				break
			}
			mu.Lock()
			id, ok := running[r]
			if ok {
				delete(running, r)
			} else {
				early[r] = ex // a gate's pid not recorded yet (or an orphan: harmless)
			}
			mu.Unlock()
			if ok {
				p.send(Msg{Type: MsgExit, ID: id, Exit: ex})
			}
		}
	}
}

// supervise waits for the program while reaping orphans, and forwards the
// signals the parent relays. When the program ends the init reports and
// exits, which kills whatever is left in the PID namespace.
func (p *proc) supervise(pid int, sigs chan os.Signal, listener *seccomp.Listener) {
	target := -pid // the program leads its own process group
	if p.spec.TTY {
		target = pid
	}
	var ex Exit
	for sig := range sigs {
		if sig != syscall.SIGCHLD {
			_ = syscall.Kill(target, sig.(syscall.Signal))
			continue
		}
		for {
			r, one, ok := reapOne()
			if !ok {
				break
			}
			ex.Reaped++
			ex.UserUs += one.UserUs
			ex.SysUs += one.SysUs
			ex.MaxRSSKB = max(ex.MaxRSSKB, one.MaxRSSKB)
			ex.NVCSw += one.NVCSw
			ex.NIVCSw += one.NIVCSw
			if r != pid {
				continue
			}
			ex.Code, ex.Signal = one.Code, one.Signal
			if listener != nil {
				ex.Denied = listener.Denials()
			}
			if p.upper > 0 {
				// A still snapshot: nothing of the sandbox runs while the
				// changes are copied out.
				_ = syscall.Kill(-1, syscall.SIGKILL)
				for {
					if r, _ := syscall.Wait4(-1, nil, 0, nil); r <= 0 {
						break
					}
				}
				if err := fs.KeepUpper(p.upper, p.spec.OverlayKeepFD); err != nil {
					ex.KeepError = err.Error()
				}
			}
			p.send(Msg{Type: MsgExit, Exit: &ex})
			os.Exit(0)
		}
	}
}

// reapOne reaps one ended child without blocking: its pid, how it ended
// and its resource use; ok is false when none is left to reap.
func reapOne() (int, *Exit, bool) {
	for {
		var ws syscall.WaitStatus
		var ru syscall.Rusage
		r, err := syscall.Wait4(-1, &ws, syscall.WNOHANG, &ru)
		if err == syscall.EINTR {
			continue
		}
		if r <= 0 || err != nil {
			return 0, nil, false
		}
		ex := &Exit{Code: -1, Reaped: 1, UserUs: ru.Utime.Sec*1e6 + int64(ru.Utime.Usec), SysUs: ru.Stime.Sec*1e6 + int64(ru.Stime.Usec),
			MaxRSSKB: ru.Maxrss, NVCSw: ru.Nvcsw, NIVCSw: ru.Nivcsw}
		switch {
		case ws.Exited():
			ex.Code = ws.ExitStatus()
		case ws.Signaled():
			ex.Signal = int(ws.Signal())
		}
		return r, ex, true
	}
}

func envPath(env []string) string {
	for i := len(env) - 1; i >= 0; i-- {
		if v, ok := strings.CutPrefix(env[i], "PATH="); ok {
			return v
		}
	}
	return "/usr/local/bin:/usr/bin:/bin"
}

// lookPath finds file in the sandbox's PATH, as a shell would: a name with
// a slash is used as is; ENOENT when nowhere, EACCES when only found
// without execute permission.
func lookPath(file, path string) (string, error) {
	if strings.Contains(file, "/") {
		return file, nil
	}
	denied := false
	for _, dir := range filepath.SplitList(path) {
		if dir == "" {
			dir = "."
		}
		p := filepath.Join(dir, file)
		fi, err := os.Stat(p)
		if err != nil || fi.IsDir() {
			continue
		}
		if unix.Access(p, unix.X_OK) == nil {
			return p, nil
		}
		denied = true
	}
	if denied {
		return "", syscall.EACCES
	}
	return "", syscall.ENOENT
}
