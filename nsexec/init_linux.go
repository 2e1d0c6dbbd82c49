package nsexec

/*
#include <stdlib.h>
#include "root_linux.h"

// The root steps of root_linux.c, by number (cgo calls no function pointer).
static int root_nsteps(void) { return ward_root_nsteps; }
static const char *root_step_name(int i) { return ward_root_steps[i].name; }
static int root_step_when(int i, const struct ward_root *r) { return !ward_root_steps[i].when || ward_root_steps[i].when(r); }
static int root_step_run(int i, const struct ward_root *r, struct ward_root_out *out) { return ward_root_steps[i].run(r, out); }
*/
import "C"

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/signal"
	"runtime"
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

// initName is the init's comm, NUL-terminated.
var initName = []byte("ward-init\x00")

func init() {
	// Setup runs on the main goroutine, locked to the main thread: per-thread
	// state (capabilities, no_new_privs) is then the state of the thread
	// that forks or execs the program.
	if IsInit() {
		runtime.LockOSThread()
	}
}

// IsInit reports whether this process is a sandbox init started by Start.
func IsInit() bool {
	// "ward init" (a long-lived sandbox) or "ward init N" (N cgroup.procs
	// fds for spawn_linux.c's early child).
	return (len(os.Args) == 2 || len(os.Args) == 3) && os.Args[1] == initArg && os.Getpid() == 1
}

// forwarded are relayed from the parent to the program.
var forwarded = []os.Signal{syscall.SIGINT, syscall.SIGTERM, syscall.SIGHUP, syscall.SIGQUIT, syscall.SIGUSR1, syscall.SIGUSR2}

// proc is one side's state: the protocol socket and the spec.
type proc struct {
	sendMu sync.Mutex
	upper  int // the overlays' upper layers, for --overlay-keep (0: none)
	// landlock is the ABI of the ruleset in spec.LandlockFD (0: none) and
	// landlockNote why there is none.
	landlock     int
	landlockNote string
	conn         *os.File
	enc          *json.Encoder
	dec          *json.Decoder
	spec         Spec
	// root is the packed root plan, unpacked (both in C memory, for the
	// process's life: the plan's pointers point into the buffer), and
	// rootOut what its steps handed back.
	root    *C.struct_ward_root
	rootOut *C.struct_ward_root_out
	steps   []StepTime
	gate    *gate // the program's process, waiting (not in a session)
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
// sandbox for its whole life. The root's steps are root_linux.c's
// (rootSteps), between these.
func initSteps() []step {
	steps := []step{
		{name: "close-inherited-fds", run: func(*proc) error { return closeInheritedFds() }},
		// The program's process comes first: it enters the cgroup (on v1 the
		// kernel waits an RCU grace period for that) while the init builds the
		// root, then waits. pivot_root takes it along into the new root.
		// (Usually it was forked before the Go runtime started: spawn_linux.c's
		// early child; this is the fallback. With Landlock the fallback forks
		// once the root, and so the ruleset, is built: runProgram.)
		{name: "fork-program", run: (*proc).forkProgram, when: func(p *proc) bool { return !p.spec.Session && !haveEarly() && p.spec.Landlock == nil }},
	}
	steps = append(steps, rootSteps()...)
	return append(steps, []step{
		{name: "set-hostname", run: func(p *proc) error { return unix.Sethostname([]byte(p.spec.Hostname)) }},
		{name: "loopback-up", run: func(*proc) error { return netns.LoopbackUp() }, when: func(p *proc) bool { return p.spec.LoopbackUp }},
		{name: "proxy-relay", run: func(p *proc) error { return netns.StartRelay(p.spec.ProxyFD) }, when: func(p *proc) bool { return p.spec.ProxyFD > 0 }},
		{name: "dns-stub", run: func(p *proc) error { return netns.StartDirect(p.spec.ProxyFD, p.spec.DirectPorts, p.spec.DirectNames) }, when: func(p *proc) bool { return p.spec.ProxyFD > 0 }},
		// Nobody inside may ptrace the init or read its memory through /proc.
		{name: "non-dumpable", run: func(*proc) error { return unix.Prctl(unix.PR_SET_DUMPABLE, 0, 0, 0, 0) }},
	}...)
}

// rootSteps are root_linux.c's steps, one cgo call each.
func rootSteps() []step {
	var steps []step
	for i := C.int(0); i < C.root_nsteps(); i++ {
		steps = append(steps, step{
			name: C.GoString(C.root_step_name(i)),
			run:  func(p *proc) error { return p.runRootStep(i) },
			when: func(p *proc) bool { return C.root_step_when(i, p.root) != 0 },
		})
	}
	return steps
}

// loadRoot packs the spec's root plan and unpacks it for the C steps.
func (p *proc) loadRoot() error {
	plan, err := packRoot(&p.spec)
	if err != nil {
		return err
	}
	buf := C.CBytes(plan)
	p.root = (*C.struct_ward_root)(C.malloc(C.sizeof_struct_ward_root))
	p.rootOut = (*C.struct_ward_root_out)(C.malloc(C.sizeof_struct_ward_root_out))
	C.ward_root_out_init(p.rootOut)
	if e := C.ward_unpack_root((*C.char)(buf), C.size_t(len(plan)), p.root); e != 0 {
		return fmt.Errorf("unpack the root plan: %w", syscall.Errno(-e))
	}
	return nil
}

// runRootStep runs root step i and takes what it handed back.
func (p *proc) runRootStep(i C.int) error {
	out := p.rootOut
	if e := C.root_step_run(i, p.root, out); e != 0 {
		return &stepError{Op: C.GoString(&out.what[0]), Path: C.GoString(&out.path[0]), Err: syscall.Errno(e)}
	}
	if out.upper_fd >= 0 {
		p.upper = int(out.upper_fd)
	}
	if out.landlock_fd >= 0 {
		p.spec.LandlockFD, p.landlock = int(out.landlock_fd), int(out.landlock_abi)
	}
	p.landlockNote = C.GoString(&out.landlock_note[0])
	return nil
}

// stepError is a root step's failure: what it did, on which path (inside),
// and the errno.
type stepError struct {
	Op, Path string
	Err      syscall.Errno
}

func (e *stepError) Error() string {
	if e.Path == "" {
		return fmt.Sprintf("%s: %v", e.Op, e.Err)
	}
	return fmt.Sprintf("%s %s: %v", e.Op, e.Path, e.Err)
}
func (e *stepError) Unwrap() error { return e.Err }

func (p *proc) runSteps(steps []step) {
	for _, st := range steps {
		if st.when != nil && !st.when(p) {
			continue
		}
		t0 := time.Now()
		if err := st.run(p); err != nil {
			p.fail(st.name, err)
		}
		p.steps = append(p.steps, StepTime{Step: st.name, Us: time.Since(t0).Microseconds(), Side: "init"})
	}
}

// RunInit is the sandbox init. It never returns: it exits 0 after reporting
// the program's end, and 71 after reporting a setup failure or a program
// that could not be executed (the parent maps that one to 126 or 127).
func RunInit() {
	start := monoUs()
	// Name the init for ps inside and on the host ("exe" otherwise).
	_ = unix.Prctl(unix.PR_SET_NAME, uintptr(unsafe.Pointer(&initName[0])), 0, 0, 0)
	p := newProc()
	p.spec = p.receive(MsgConfig).spec
	p.spec.LandlockFD = -1
	if p.spec.BecomeRoot {
		// Mapped by now (the parent wrote the maps before the config).
		if err := becomeRoot(); err != nil {
			p.fail("become-root", err)
		}
	}
	config := monoUs()
	if err := p.loadRoot(); err != nil {
		p.fail("root-plan", err)
	}
	p.runSteps(initSteps())
	p.send(Msg{Type: MsgReady, Steps: p.steps, StartUs: start, ConfigUs: config, Landlock: p.landlock, LandlockNote: p.landlockNote})
	if p.spec.Session {
		p.serveSession()
	}
	p.runProgram()
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
	m := Msg{Type: MsgError, Step: step, Message: err.Error()}
	var en syscall.Errno
	if errors.As(err, &en) {
		m.Errno = int(en)
	}
	var se *stepError
	var pe *os.PathError
	switch {
	case errors.As(err, &se):
		m.Path = se.Path
	case errors.As(err, &pe):
		m.Path = pe.Path
	}
	p.send(m)
	os.Exit(ExitSetup)
}

// closeInheritedFds marks every fd above 2 close-on-exec, the protocol
// socket included: whatever the caller of ward left open (without
// O_CLOEXEC) never reaches the program.
func closeInheritedFds() error {
	return unix.CloseRange(3, ^uint(0), unix.CLOSE_RANGE_CLOEXEC)
}

// forkProgram forks the program's process, which waits in the cgroup
// until runProgram lets it go on.
func (p *proc) forkProgram() error {
	g, failed := spawnGate(&p.spec, nil, true)
	if failed != nil {
		p.send(*failed)
		os.Exit(ExitSetup)
	}
	p.gate = g
	return nil
}

// runProgram lets the program's process go on and reports whether the
// program started; then it supervises it.
func (p *proc) runProgram() {
	sigs := make(chan os.Signal, 16)
	relay := forwarded
	if p.spec.TTY {
		// The program shares the terminal's foreground group with ward
		// and this init: ^C and ^\ reach it from the terminal itself.
		relay = []os.Signal{syscall.SIGTERM, syscall.SIGHUP, syscall.SIGUSR1, syscall.SIGUSR2}
		signal.Ignore(syscall.SIGINT, syscall.SIGQUIT)
		// Nor may the program stop the init through the terminal (its
		// own process resets every signal before exec).
		signal.Ignore(syscall.SIGTTOU, syscall.SIGTTIN)
	}
	signal.Notify(sigs, append([]os.Signal{syscall.SIGCHLD}, relay...)...)
	// The parent only ever closes its end: EOF means it died, and then the
	// sandbox must end.
	go func() {
		var m Msg
		for p.dec.Decode(&m) == nil {
		}
		os.Exit(137)
	}()
	if p.gate == nil {
		send := sendEarly
		if !haveEarly() {
			send = func(spec *Spec) (*gate, *Msg) { return spawnGate(spec, nil, false) }
		}
		g, failed := send(&p.spec)
		if failed != nil {
			p.send(*failed)
			os.Exit(ExitSetup)
		}
		p.gate = g
	}
	failed, steps, listener := p.gate.wait(&p.spec)
	if failed != nil {
		p.send(*failed) // error or exec_error, relayed as is
		os.Exit(ExitSetup)
	}
	started := monoUs()
	p.send(Msg{Type: MsgStarted, Pid: p.gate.pid, Steps: steps, StartUs: started})
	p.supervise(p.gate.pid, started, sigs, listener)
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
			n, oobn, _, _, err := unix.Recvmsg(p.spec.ExecFD, buf, oob, unix.MSG_CMSG_CLOEXEC)
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
				var pid int
				g, failed := spawnGate(&spec, &[3]int{fds[0], fds[1], fds[2]}, false)
				for _, fd := range fds {
					unix.Close(fd)
				}
				if failed == nil {
					pid = g.pid
					failed, _, _ = g.wait(&spec)
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

// supervise waits for the program while reaping orphans, forwards the
// signals the parent relays, and ends the sandbox at the time limit,
// counted from the program's exec (started). When the program ends the
// init reports and exits, which kills whatever is left in the PID
// namespace.
func (p *proc) supervise(pid int, started int64, sigs chan os.Signal, listener *seccomp.Listener) {
	target := -pid // the program leads its own process group
	if p.spec.TTY {
		target = pid
	}
	var deadline <-chan time.Time
	if p.spec.TimeLimitUs > 0 {
		t := time.NewTimer(time.Duration(p.spec.TimeLimitUs-(monoUs()-started)) * time.Microsecond)
		defer t.Stop()
		deadline = t.C
	}
	var ex Exit
	for {
		timeUp := false
		select {
		case sig := <-sigs:
			if sig != syscall.SIGCHLD {
				_ = syscall.Kill(target, sig.(syscall.Signal))
				continue
			}
		case <-deadline:
			// Reap first: a program that ended in time is not late because
			// its SIGCHLD had not been handled yet.
			deadline, timeUp = nil, true
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
			if r == pid {
				ex.Code, ex.Signal = one.Code, one.Signal
				ex.WallUs = monoUs() - started
				p.finish(&ex, listener)
			}
		}
		if timeUp {
			// PID 1 kills every other process of its namespace; the
			// program's end comes as a SIGCHLD.
			ex.TimedOut = true
			_ = syscall.Kill(-1, syscall.SIGKILL)
		}
	}
}

// finish reports the program's end (after copying out the overlay's
// changes, if asked) and exits.
func (p *proc) finish(ex *Exit, listener *seccomp.Listener) {
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
	p.send(Msg{Type: MsgExit, Exit: ex})
	os.Exit(0)
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

// envPath is the PATH the program's getenv will see: the first.
func envPath(env []string) string {
	for _, e := range env {
		if v, ok := strings.CutPrefix(e, "PATH="); ok {
			return v
		}
	}
	return DefaultPath
}

// DefaultPath is the program's PATH when the caller has none.
const DefaultPath = "/usr/local/bin:/usr/bin:/bin"

// becomeRoot makes the init root of its user namespace, with no
// supplementary groups (libc's set*id: every thread).
func becomeRoot() error {
	if err := syscall.Setgroups(nil); err != nil {
		return fmt.Errorf("setgroups: %w", err)
	}
	if err := syscall.Setresgid(0, 0, 0); err != nil {
		return fmt.Errorf("setresgid 0: %w", err)
	}
	if err := syscall.Setresuid(0, 0, 0); err != nil {
		return fmt.Errorf("setresuid 0: %w", err)
	}
	return nil
}
