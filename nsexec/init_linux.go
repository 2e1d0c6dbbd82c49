package nsexec

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/signal"
	"path/filepath"
	"runtime"
	"strings"
	"syscall"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"

	"github.com/wardbox/ward/fs"
	"github.com/wardbox/ward/netns"
)

// initArg is argv[1] of the re-executed binary when it is the sandbox init.
const initArg = "init"

// initName is the init's comm, NUL-terminated.
var initName = []byte("ward-init\x00")

// initFd is the protocol socket in the init.
const initFd = 3

func init() {
	// The init's setup runs on the main goroutine, locked to the main
	// thread: per-thread state it sets (capabilities, no_new_privs) is then
	// the state of the thread that forks the program.
	if IsInit() {
		runtime.LockOSThread()
	}
}

// IsInit reports whether this process is a sandbox init started by Start.
func IsInit() bool {
	return len(os.Args) == 2 && os.Args[1] == initArg && os.Getpid() == 1
}

// forwarded are relayed from the parent to the program.
var forwarded = []os.Signal{syscall.SIGINT, syscall.SIGTERM, syscall.SIGHUP, syscall.SIGQUIT, syscall.SIGUSR1, syscall.SIGUSR2}

// initState is the child side: the socket to the parent and the spec.
type initState struct {
	conn  *os.File
	enc   *json.Encoder
	spec  Spec
	steps []StepTime
}

// initStep is one setup step run by the init, in order.
type initStep struct {
	name string
	run  func(*initState) error
	when func(*initState) bool
}

// initSteps is DESIGN.md section 5's setup order. Each name is what the
// operator sees in "ward: <step>: <cause>".
var initSteps = []initStep{
	{name: "close-inherited-fds", run: (*initState).closeInheritedFds},
	{name: "make-mounts-private", run: func(*initState) error { return fs.MakeMountsPrivate() }},
	{name: "enter-new-root", run: func(*initState) error { return fs.EnterNewRoot() }},
	{name: "build-root", run: func(s *initState) error { return fs.Build(s.spec.Plan) }},
	{name: "detach-host-root", run: func(*initState) error { return fs.DetachOldRoot() }},
	{name: "seal-root", run: func(*initState) error { return fs.SealRoot() }},
	{name: "set-hostname", run: func(s *initState) error { return unix.Sethostname([]byte(s.spec.Hostname)) }},
	{name: "loopback-up", run: func(*initState) error { return netns.LoopbackUp() }, when: func(s *initState) bool { return s.spec.LoopbackUp }},
	{name: "set-rlimits", run: (*initState).setRlimits},
	{name: "drop-bounding-set", run: func(*initState) error { return dropBoundingSet() }},
	{name: "set-user", run: (*initState).setUser},
	{name: "clear-capabilities", run: func(*initState) error { return clearCapabilities() }},
	{name: "no-new-privs", run: func(*initState) error { return unix.Prctl(unix.PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) }},
	{name: "non-dumpable", run: func(*initState) error { return unix.Prctl(unix.PR_SET_DUMPABLE, 0, 0, 0, 0) }},
	// set-user cleared the parent-death signal (the kernel does so on every
	// credential change): set it again.
	{name: "parent-death-signal", run: func(*initState) error { return unix.Prctl(unix.PR_SET_PDEATHSIG, uintptr(syscall.SIGKILL), 0, 0, 0) }},
	{name: "enter-workdir", run: func(s *initState) error { return os.Chdir(s.spec.Dir) }},
}

// RunInit is the sandbox init. It never returns: it exits 0 after reporting
// the program's end, 71 after reporting a setup failure, 127/126 when the
// program cannot be executed.
func RunInit() {
	// Name the init for ps inside and on the host ("exe" otherwise).
	_ = unix.Prctl(unix.PR_SET_NAME, uintptr(unsafe.Pointer(&initName[0])), 0, 0, 0)
	conn := os.NewFile(initFd, "ward-init")
	s := &initState{conn: conn, enc: json.NewEncoder(conn)}
	var m Msg
	if err := json.NewDecoder(bufio.NewReader(conn)).Decode(&m); err != nil || m.Type != MsgConfig || m.Spec == nil {
		fmt.Fprintln(os.Stderr, "ward init: internal command, started by ward run (no config on fd 3)")
		os.Exit(2)
	}
	s.spec = *m.Spec

	for _, st := range initSteps {
		if st.when != nil && !st.when(s) {
			continue
		}
		t0 := time.Now()
		if err := st.run(s); err != nil {
			s.fail(st.name, err)
		}
		s.steps = append(s.steps, StepTime{Step: st.name, Us: time.Since(t0).Microseconds()})
	}
	s.send(Msg{Type: MsgReady, Steps: s.steps})
	s.runProgram()
}

func (s *initState) send(m Msg) {
	// A send that fails means the parent is gone: nothing to report to.
	if err := s.enc.Encode(m); err != nil {
		os.Exit(137)
	}
}

// fail reports a setup error and exits; the parent prints it and exits 71.
func (s *initState) fail(step string, err error) {
	m := Msg{Type: MsgError, Step: step, Message: err.Error(), Errno: int(fs.Errno(err))}
	var fe *fs.Error
	var pe *os.PathError
	switch {
	case errors.As(err, &fe):
		m.Path = fe.Path
	case errors.As(err, &pe):
		m.Path = pe.Path
	}
	s.send(m)
	os.Exit(71)
}

// closeInheritedFds marks every fd above 2 close-on-exec, the protocol
// socket included: whatever the caller of ward left open (without
// O_CLOEXEC) never reaches the program.
func (s *initState) closeInheritedFds() error {
	return unix.CloseRange(3, ^uint(0), unix.CLOSE_RANGE_CLOEXEC)
}

func (s *initState) setRlimits() error {
	// syscall.Setrlimit (not unix.) so the Go runtime does not restore its
	// own raised RLIMIT_NOFILE in the program.
	n := s.spec.NoFile
	if err := syscall.Setrlimit(syscall.RLIMIT_NOFILE, &syscall.Rlimit{Cur: n, Max: n}); err != nil {
		return fmt.Errorf("RLIMIT_NOFILE=%d: %w", n, err)
	}
	if err := syscall.Setrlimit(unix.RLIMIT_CORE, &syscall.Rlimit{}); err != nil {
		return fmt.Errorf("RLIMIT_CORE=0: %w", err)
	}
	return nil
}

func (s *initState) setUser() error {
	// Supplementary groups first: the init inherited the caller's (root's
	// group 0 among them), which must not follow the program.
	if err := syscall.Setgroups([]int{s.spec.GID}); err != nil {
		return fmt.Errorf("setgroups(%d): %w", s.spec.GID, err)
	}
	if err := syscall.Setresgid(s.spec.GID, s.spec.GID, s.spec.GID); err != nil {
		return fmt.Errorf("setresgid(%d): %w", s.spec.GID, err)
	}
	if err := syscall.Setresuid(s.spec.UID, s.spec.UID, s.spec.UID); err != nil {
		return fmt.Errorf("setresuid(%d): %w", s.spec.UID, err)
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

// runProgram forks the program, relays signals, reaps every process and
// reports the program's end.
func (s *initState) runProgram() {
	sigs := make(chan os.Signal, 16)
	signal.Notify(sigs, append([]os.Signal{syscall.SIGCHLD}, forwarded...)...)

	env := s.spec.Env
	path, err := lookPath(s.spec.Args[0], envPath(env))
	if err == nil {
		var pid int
		pid, err = syscall.ForkExec(path, s.spec.Args, &syscall.ProcAttr{
			Env:   env,
			Files: []uintptr{0, 1, 2},
			Sys:   &syscall.SysProcAttr{Setsid: !s.spec.TTY},
		})
		if err == nil {
			s.send(Msg{Type: MsgStarted, Pid: pid})
			s.supervise(pid, sigs)
			return
		}
	}
	errno := fs.Errno(err)
	if errno == 0 {
		errno = syscall.ENOENT
	}
	s.send(Msg{Type: MsgExecError, Path: s.spec.Args[0], Errno: int(errno)})
	os.Exit(127)
}

// supervise waits for the program while reaping orphans, and forwards the
// signals the parent relays. When the program ends the init reports and
// exits, which kills whatever is left in the PID namespace.
func (s *initState) supervise(pid int, sigs chan os.Signal) {
	// The parent closing the socket (it died) ends the sandbox.
	go func() {
		var b [1]byte
		for {
			if _, err := s.conn.Read(b[:]); err != nil {
				os.Exit(137)
			}
		}
	}()
	target := -pid // the program leads its own process group
	if s.spec.TTY {
		target = pid
	}
	var ex Exit
	for sig := range sigs {
		if sig != syscall.SIGCHLD {
			_ = syscall.Kill(target, sig.(syscall.Signal))
			continue
		}
		for {
			var ws syscall.WaitStatus
			var ru syscall.Rusage
			p, err := syscall.Wait4(-1, &ws, syscall.WNOHANG, &ru)
			if err == syscall.EINTR {
				continue
			}
			if p <= 0 || err != nil {
				break
			}
			ex.Reaped++
			ex.UserUs += ru.Utime.Sec*1e6 + int64(ru.Utime.Usec)
			ex.SysUs += ru.Stime.Sec*1e6 + int64(ru.Stime.Usec)
			ex.MaxRSSKB = max(ex.MaxRSSKB, ru.Maxrss)
			if p != pid {
				continue
			}
			ex.Code, ex.Signal = -1, 0
			switch {
			case ws.Exited():
				ex.Code = ws.ExitStatus()
			case ws.Signaled():
				ex.Signal = int(ws.Signal())
			}
			s.send(Msg{Type: MsgExit, Exit: &ex})
			os.Exit(0)
		}
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
