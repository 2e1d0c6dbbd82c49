package main

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"
	"unsafe"

	"github.com/spf13/cobra"
	"golang.org/x/sys/unix"

	"github.com/wardbox/ward"
	"github.com/wardbox/ward/internal/procstat"
)

// StateDir holds one directory per long-lived sandbox (mode 0700, its
// user's only): its supervisor's pid and the unix socket `ward exec`
// talks to; .supervisor holds the supervisor's own socket. /run/ward for
// root, the caller's own for anyone else (userStateDir).
var StateDir = "/run/ward"

var nameRE = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`^[a-z0-9][a-z0-9_.-]{0,62}$`) })

func checkName(name string) error {
	if !nameRE().MatchString(name) {
		return fmt.Errorf("--name=%s: want [a-z0-9][a-z0-9_.-]{0,62}", name)
	}
	return nil
}

func stateOf(name string) string { return filepath.Join(StateDir, name) }

// alive reports whether the sandbox name has a live supervisor: its pid
// runs (a zombie, dead but not yet reaped, does not), is still the process
// that wrote the state (the start time it recorded there; a later process
// may have the pid), and is a ward.
func alive(name string) (int, bool) {
	b, err := os.ReadFile(filepath.Join(stateOf(name), "pid"))
	if err != nil {
		return 0, false
	}
	pid, err := strconv.Atoi(strings.TrimSpace(string(b)))
	if err != nil || pid <= 0 {
		return 0, false
	}
	if procstat.Dead(pid) {
		return pid, false
	}
	if want, err := os.ReadFile(filepath.Join(stateOf(name), "starttime")); err == nil {
		if st, err := procstat.Read(pid); err == nil && strconv.FormatUint(st.StartTime, 10) != strings.TrimSpace(string(want)) {
			return pid, false
		}
	}
	comm, _ := os.ReadFile(fmt.Sprintf("/proc/%d/comm", pid))
	return pid, strings.HasPrefix(strings.TrimSpace(string(comm)), "ward")
}

// sessionRequest is what `ward exec`, `ps` and `stop` send the supervisor.
type sessionRequest struct {
	Op        string   `json:"op"` // exec, info, stop
	Args      []string `json:"args,omitempty"`
	Env       []string `json:"env,omitempty"`
	Dir       string   `json:"dir,omitempty"`
	TimeLimit string   `json:"time_limit,omitempty"`
}

type sessionInfo struct {
	Name        string `json:"name"`
	Pid         int    `json:"pid"`
	StartedUnix int64  `json:"started_unix"`
	AgeSeconds  int64  `json:"age_s"`
	MemoryBytes *int64 `json:"memory_bytes"`
	Processes   *int64 `json:"processes"`
}

func newStartCmd() *cobra.Command {
	var f runFlags
	var name string
	cmd := &cobra.Command{
		Use:   "start --name=NAME [run flags]",
		Short: "Start a long-lived sandbox and return once it is ready",
		Example: `  ward start --name=agent --memory-limit=1G --workspace=./work --audit-log=/var/log/ward/agent.jsonl
  ward exec agent -- sh -c 'echo hi > x'     # in /workspace: ./work/x on the host
  ward exec agent -- cat /workspace/x
  ward ps
  ward stop agent`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if err := checkName(name); err != nil {
				return err
			}
			if _, ok := alive(name); ok {
				return fmt.Errorf("--name=%s: a sandbox of that name is running", name)
			}
			cfg, err := f.toConfig(nil)
			if err != nil {
				return err
			}
			// The supervisor resolves paths and takes the environment as
			// this process sees them, not as it does.
			cwd, err := os.Getwd()
			if err != nil {
				return &exitError{code: ward.ExitSetup, msg: fmt.Sprintf("start: the current directory: %v", err)}
			}
			req := startRequest{Name: name, Profile: cfg.Profile, Cwd: cwd, Env: os.Environ(), Settings: ward.LayerOf("ward start", cfg)}
			if err := startShared(req); err != nil {
				return err
			}
			fmt.Println(name)
			return nil
		},
	}
	cmd.Flags().SetInterspersed(false)
	cmd.Flags().StringVar(&name, "name", "", "the sandbox's name: [a-z0-9][a-z0-9_.-]{0,62}")
	bindRunFlags(cmd.Flags(), &f)
	return cmd
}

// One supervisor process holds every long-lived sandbox of the CLI: a
// sandbox then costs its init and a little of the supervisor's heap, not a
// Go runtime of its own (issue 9: memory per sandbox). It starts with the
// first `ward start` and exits when its last sandbox stops. Each sandbox
// keeps its own state directory and socket, so exec, ps and stop talk to
// it as before. The price: killing the supervisor ends all of them.

// supervisorDir holds the supervisor's socket and the lock that keeps two
// `ward start`s from starting two supervisors.
func supervisorDir() string { return filepath.Join(StateDir, ".supervisor") }

// startRequest is what `ward start` sends the supervisor: the sandbox's
// name, its settings (every one, as the command line, config file and
// profile made them) and what the supervisor cannot see of its caller.
type startRequest struct {
	Name     string     `json:"name"`
	Profile  string     `json:"profile"`
	Cwd      string     `json:"cwd"` // relative paths are relative to it
	Env      []string   `json:"env"` // the caller's environment
	Settings ward.Layer `json:"settings"`
}

// config is the sandbox's config; caller is who asked for it (the audit
// log's).
func (r startRequest) config(caller *ward.Caller) ward.Config {
	c := ward.Config{Name: r.Name, Profile: r.Profile, Cwd: r.Cwd, CallerEnv: r.Env, Caller: caller}
	r.Settings.Apply(&c, nil)
	return c
}

type startReply struct {
	Error string `json:"error,omitempty"`
	Code  int    `json:"code,omitempty"` // ward's exit status for Error
	Retry bool   `json:"retry,omitempty"`
}

// startShared asks the supervisor (started if need be) to start the
// sandbox req describes.
func startShared(req startRequest) error {
	var last error
	for attempt := 0; attempt < 5; attempt++ {
		c, err := dialSupervisor()
		if err != nil {
			last = err
			continue
		}
		var reply startReply
		err = json.NewEncoder(c).Encode(req)
		if err == nil {
			err = json.NewDecoder(c).Decode(&reply)
		}
		c.Close()
		switch {
		case err != nil:
			last = fmt.Errorf("the supervisor went away: %w", err)
		case reply.Retry:
			last = errors.New(reply.Error)
			time.Sleep(10 * time.Millisecond)
		case reply.Error != "":
			code := reply.Code
			if code == 0 {
				code = ward.ExitSetup
			}
			return &exitError{code: code, msg: reply.Error}
		default:
			return nil
		}
	}
	return &exitError{code: ward.ExitSetup, msg: fmt.Sprintf("start: %v", last)}
}

// dialSupervisor connects to the supervisor, starting it first (under a
// lock) when none answers.
func dialSupervisor() (net.Conn, error) {
	sock := filepath.Join(supervisorDir(), "sock")
	if c, err := net.Dial("unix", sock); err == nil {
		return c, nil
	}
	if err := ensureStateDir(); err != nil {
		return nil, err
	}
	if err := os.MkdirAll(supervisorDir(), 0o700); err != nil {
		return nil, err
	}
	lock, err := os.OpenFile(filepath.Join(supervisorDir(), "lock"), os.O_CREATE|os.O_RDWR, 0o600)
	if err != nil {
		return nil, err
	}
	defer lock.Close()
	if err := unix.Flock(int(lock.Fd()), unix.LOCK_EX); err != nil {
		return nil, fmt.Errorf("lock %s: %w", lock.Name(), err)
	}
	if c, err := net.Dial("unix", sock); err == nil {
		return c, nil // another ward start started it meanwhile
	}
	if err := spawnSupervisor(); err != nil {
		return nil, err
	}
	return net.Dial("unix", sock)
}

// spawnSupervisor runs `ward supervise` detached (its own session, no
// terminal, cwd /) and waits until it listens.
func spawnSupervisor() error {
	r, w, err := os.Pipe()
	if err != nil {
		return err
	}
	defer r.Close()
	cmd := exec.Command("/proc/self/exe", "supervise")
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

func newSuperviseCmd() *cobra.Command {
	return &cobra.Command{
		Use:    "supervise",
		Hidden: true, // run by `ward start`
		Args:   cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			// Named for ps, pgrep and alive() ("exe" otherwise): through
			// /proc/self/comm, which names the main thread whichever thread
			// this goroutine runs on (PR_SET_NAME names the calling one).
			if err := os.WriteFile("/proc/self/comm", []byte("ward-supervise"), 0); err != nil {
				name16 := []byte("ward-supervise\x00")
				_ = unix.Prctl(unix.PR_SET_NAME, uintptr(unsafe.Pointer(&name16[0])), 0, 0, 0)
			}
			ready := os.NewFile(3, "ready")
			say := func(s string) { fmt.Fprintln(ready, s); ready.Close() }
			return runSupervisor(say)
		},
	}
}

// supervisor holds the CLI's long-lived sandboxes.
type supervisor struct {
	mu       sync.Mutex
	ln       net.Listener
	sessions map[string]*session // nil value: being started
	closing  bool
}

type session struct {
	sb   *ward.Sandbox
	stop chan struct{}
}

func runSupervisor(say func(string)) error {
	sock := filepath.Join(supervisorDir(), "sock")
	_ = os.Remove(sock) // a dead supervisor's: the lock says none runs
	ln, err := net.Listen("unix", sock)
	if err != nil {
		say("error " + err.Error())
		return err
	}
	s := &supervisor{ln: ln, sessions: map[string]*session{}}
	// SIGTERM and SIGINT end every sandbox cleanly, as ward stop does. A
	// supervisor has no terminal: a SIGHUP (a session's or process group's
	// end somewhere) means nothing to it.
	signal.Ignore(syscall.SIGHUP)
	sigs := make(chan os.Signal, 1)
	signal.Notify(sigs, syscall.SIGTERM, syscall.SIGINT)
	go func() {
		<-sigs
		s.mu.Lock()
		for _, ss := range s.sessions {
			if ss != nil {
				closeOnce(ss.stop)
			}
		}
		s.mu.Unlock()
	}()
	say("ready")
	for {
		c, err := ln.Accept()
		if err != nil {
			// Closed by the last session's end: wait for nothing else.
			select {}
		}
		go s.serveStart(c)
	}
}

func closeOnce(ch chan struct{}) {
	select {
	case <-ch:
	default:
		close(ch)
	}
}

// serveStart answers one startRequest.
func (s *supervisor) serveStart(c net.Conn) {
	defer c.Close()
	var req startRequest
	enc := json.NewEncoder(c)
	if err := json.NewDecoder(c).Decode(&req); err != nil {
		_ = enc.Encode(startReply{Error: "bad request: " + err.Error(), Code: ward.ExitUsage})
		return
	}
	if err := checkName(req.Name); err != nil {
		_ = enc.Encode(startReply{Error: err.Error(), Code: ward.ExitUsage})
		return
	}
	s.mu.Lock()
	if s.closing {
		s.mu.Unlock()
		_ = enc.Encode(startReply{Error: "the supervisor is closing", Retry: true})
		return
	}
	if _, taken := s.sessions[req.Name]; taken {
		s.mu.Unlock()
		_ = enc.Encode(startReply{Error: fmt.Sprintf("--name=%s: a sandbox of that name is running", req.Name), Code: ward.ExitUsage})
		return
	}
	s.sessions[req.Name] = nil
	s.mu.Unlock()

	ss, err := s.start(req.Name, req.config(peerCaller(c))) // the audit log's caller: ward start's
	if err != nil {
		code := ward.ExitSetup
		var ce *ward.ConfigError
		if errors.As(err, &ce) {
			code = ward.ExitUsage
		}
		_ = enc.Encode(startReply{Error: err.Error(), Code: code})
		c.Close()
		s.forget(req.Name) // may end the supervisor: after the reply
		return
	}
	s.mu.Lock()
	s.sessions[req.Name] = ss
	s.mu.Unlock()
	_ = enc.Encode(startReply{})
}

// start makes sandbox name's state directory, starts it and serves its
// socket until it is stopped; then it removes it all.
func (s *supervisor) start(name string, cfg ward.Config) (*session, error) {
	dir := stateOf(name)
	_ = os.RemoveAll(dir) // a dead supervisor's (alive() said so)
	if err := os.Mkdir(dir, 0o700); err != nil {
		return nil, err
	}
	sb, err := ward.Start(context.Background(), cfg)
	if err != nil {
		os.RemoveAll(dir)
		return nil, err
	}
	ln, err := net.Listen("unix", filepath.Join(dir, "sock"))
	if err == nil {
		err = writeOwner(dir)
	}
	if err != nil {
		sb.Close()
		os.RemoveAll(dir)
		return nil, err
	}
	ss := &session{sb: sb, stop: make(chan struct{})}
	started := time.Now()
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go serveClient(c.(*net.UnixConn), sb, name, started, ss.stop)
		}
	}()
	go func() {
		<-ss.stop
		ln.Close()
		sb.Close()
		os.RemoveAll(dir) // last: ward stop waits for it
		s.forget(name)
	}()
	return ss, nil
}

// writeOwner records the supervisor in a sandbox's state directory: its
// start time (which tells it from a later process with its pid), then its
// pid, which alive() reads first.
func writeOwner(dir string) error {
	self, err := procstat.Self()
	if err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(dir, "starttime"), []byte(strconv.FormatUint(self.StartTime, 10)), 0o600); err != nil {
		return err
	}
	return os.WriteFile(filepath.Join(dir, "pid"), []byte(strconv.Itoa(os.Getpid())), 0o600)
}

// forget drops a session; the supervisor exits with its last one.
func (s *supervisor) forget(name string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	delete(s.sessions, name)
	if len(s.sessions) == 0 {
		s.closing = true
		// Close unlinks the socket before it closes it: a ward start that
		// then finds no socket starts a new supervisor, whose socket this
		// one must not remove (no os.Remove here).
		s.ln.Close()
		os.Exit(0)
	}
}

func serveClient(c *net.UnixConn, sb *ward.Sandbox, name string, started time.Time, stop chan struct{}) {
	defer c.Close()
	buf, oob := make([]byte, 1<<20), make([]byte, unix.CmsgSpace(3*4))
	n, oobn, _, _, err := c.ReadMsgUnix(buf, oob)
	if err != nil {
		return
	}
	var req sessionRequest
	if json.Unmarshal(buf[:n], &req) != nil {
		return
	}
	enc := json.NewEncoder(c)
	switch req.Op {
	case "stop":
		_ = enc.Encode(map[string]string{"stopped": name})
		closeOnce(stop)
	case "info":
		info := sessionInfo{Name: name, Pid: os.Getpid(), StartedUnix: started.Unix(), AgeSeconds: int64(time.Since(started).Seconds())}
		if st, err := sb.Stats(); err == nil {
			info.MemoryBytes, info.Processes = &st.MemoryCurrent, &st.Processes
		}
		_ = enc.Encode(info)
	case "exec":
		var fds []int
		if msgs, err := unix.ParseSocketControlMessage(oob[:oobn]); err == nil && len(msgs) > 0 {
			fds, _ = unix.ParseUnixRights(&msgs[0])
		}
		if len(fds) != 3 {
			_ = enc.Encode(map[string]string{"error": "want the caller's stdin, stdout and stderr"})
			return
		}
		files := make([]*os.File, 3)
		for i, fd := range fds {
			files[i] = os.NewFile(uintptr(fd), "stdio")
			defer files[i].Close()
		}
		var tl time.Duration
		if req.TimeLimit != "" {
			tl, _ = ward.ParseDuration(req.TimeLimit)
		}
		ctx, cancel := context.WithCancel(context.Background())
		defer cancel()
		go func() { // the client going away ends the command
			_, _ = io.Copy(io.Discard, c)
			cancel()
		}()
		res, err := sb.Exec(ctx, ward.Command{Args: req.Args, Env: req.Env, Dir: req.Dir, Stdin: files[0], Stdout: files[1], Stderr: files[2], TimeLimit: tl,
			Caller: peerCaller(c)})
		var ae *ward.AuditError
		if res != nil && errors.As(err, &ae) {
			_ = enc.Encode(auditedReply{Result: res, AuditError: ae.Error()})
			return
		}
		if err != nil {
			_ = enc.Encode(map[string]string{"error": err.Error()})
			return
		}
		_ = enc.Encode(res)
	}
}

// auditedReply is an exec's result whose audit line could not be written.
type auditedReply struct {
	*ward.Result
	AuditError string `json:"audit_error,omitempty"`
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

// call sends one request (with fds) to sandbox name's supervisor and
// decodes its answer into out.
func call(name string, req sessionRequest, fds []int, out any, sent ...func()) error {
	c, err := net.Dial("unix", filepath.Join(stateOf(name), "sock"))
	if err != nil {
		return fmt.Errorf("no running sandbox %q (%w)", name, err)
	}
	defer c.Close()
	uc := c.(*net.UnixConn)
	b, _ := json.Marshal(req)
	var oob []byte
	if len(fds) > 0 {
		oob = unix.UnixRights(fds...)
	}
	if _, _, err := uc.WriteMsgUnix(b, oob, nil); err != nil {
		return err
	}
	for _, f := range sent {
		f() // the fds are in flight: this side's copies may go
	}
	return json.NewDecoder(uc).Decode(out)
}

func newExecCmd() *cobra.Command {
	var timeLimit string
	var env []string
	var dir string
	cmd := &cobra.Command{
		Use:   "exec NAME [--time-limit=D] -- COMMAND [ARG...]",
		Short: "Run a command in a long-lived sandbox, with this terminal's streams",
		Long: `Run a command in a long-lived sandbox, with this terminal's streams.
A sandbox started with --audit-log logs every command run in it there, one line
each (docs/audit.md); ward exec cannot turn that off.`,
		Args: cobra.MinimumNArgs(2),
		RunE: func(cmd *cobra.Command, args []string) error {
			name, command := args[0], args[1:]
			if len(command) > 0 && command[0] == "--" {
				command = command[1:]
			}
			if len(command) == 0 {
				return fmt.Errorf("exec: no command given (usage: ward exec NAME -- COMMAND [ARG...])")
			}
			if err := checkName(name); err != nil {
				return err
			}
			for _, e := range env {
				if k, _, ok := strings.Cut(e, "="); !ok || k == "" {
					return fmt.Errorf("--env=%s: want K=V", e)
				}
			}
			if timeLimit != "" {
				if _, err := ward.ParseDuration(timeLimit); err != nil {
					return fmt.Errorf("--time-limit=%s: %w", timeLimit, err)
				}
			}
			if _, ok := alive(name); !ok {
				return fmt.Errorf("exec: no running sandbox %q (see ward ps)", name)
			}
			var errResp struct {
				Error *string `json:"error"`
			}
			raw := json.RawMessage{}
			// The sandbox gets pipes, never this process's own streams: a
			// background process of the command could otherwise go on
			// reading the caller's terminal after exec returned.
			relay, err := newStdioRelay(os.Stdin, os.Stdout, os.Stderr)
			if err != nil {
				return &exitError{code: ward.ExitSetup, msg: "exec: " + err.Error()}
			}
			err = call(name, sessionRequest{Op: "exec", Args: command, Env: env, Dir: dir, TimeLimit: timeLimit},
				relay.fds(), &raw, relay.sent)
			relay.finish()
			if err != nil {
				return &exitError{code: ward.ExitSetup, msg: err.Error()}
			}
			if json.Unmarshal(raw, &errResp) == nil && errResp.Error != nil && !strings.Contains(string(raw), `"status"`) {
				return &exitError{code: ward.ExitSetup, msg: *errResp.Error}
			}
			var audited auditedReply
			if err := json.Unmarshal(raw, &audited); err != nil {
				return &exitError{code: ward.ExitSetup, msg: err.Error()}
			}
			res := audited.Result
			if res == nil {
				return &exitError{code: ward.ExitSetup, msg: "exec: no result from the supervisor"}
			}
			if res.Error != nil && res.Status != ward.StatusExited {
				fmt.Fprintf(os.Stderr, "ward: %s\n", *res.Error)
			}
			if audited.AuditError != "" {
				// The command is not on record: ward's failure.
				return &exitError{code: ward.ExitSetup, msg: audited.AuditError}
			}
			return &exitError{code: res.WardExitCode}
		},
	}
	// Flags go before "--"; everything after it is the command's.
	cmd.Flags().StringVar(&timeLimit, "time-limit", "", "wall-clock limit of this command only")
	cmd.Flags().StringArrayVar(&env, "env", nil, "K=V added to the sandbox's environment (repeatable)")
	cmd.Flags().StringVar(&dir, "workdir", "", "working directory inside (default the sandbox's: /workspace when started with --workspace)")
	return cmd
}

func newPsCmd() *cobra.Command {
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "ps",
		Short: "List the long-lived sandboxes with age, memory and processes",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			entries, _ := os.ReadDir(StateDir)
			var infos []sessionInfo
			for _, e := range entries {
				if _, ok := alive(e.Name()); !ok {
					continue
				}
				var info sessionInfo
				if call(e.Name(), sessionRequest{Op: "info"}, nil, &info) == nil {
					infos = append(infos, info)
				}
			}
			sort.Slice(infos, func(i, j int) bool { return infos[i].Name < infos[j].Name })
			out := cmd.OutOrStdout()
			if asJSON {
				if infos == nil {
					infos = []sessionInfo{}
				}
				b, _ := json.MarshalIndent(infos, "", "  ")
				fmt.Fprintln(out, string(b))
				return nil
			}
			fmt.Fprintf(out, "%-20s %-8s %-8s %-10s %s\n", "NAME", "PID", "AGE", "MEMORY", "PROCESSES")
			for _, i := range infos {
				mem, procs := "-", "-"
				if i.MemoryBytes != nil {
					mem = ward.FormatSize(*i.MemoryBytes)
				}
				if i.Processes != nil {
					procs = strconv.FormatInt(*i.Processes, 10)
				}
				fmt.Fprintf(out, "%-20s %-8d %-8s %-10s %s\n", i.Name, i.Pid, (time.Duration(i.AgeSeconds) * time.Second).String(), mem, procs)
			}
			return nil
		},
	}
	cmd.Flags().BoolVar(&asJSON, "json", false, "print JSON")
	return cmd
}

func newStopCmd() *cobra.Command {
	return &cobra.Command{
		Use:   "stop NAME",
		Short: "End a long-lived sandbox: everything inside dies, its state is removed",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			name := args[0]
			if err := checkName(name); err != nil {
				return err
			}
			pid, ok := alive(name)
			if !ok {
				return fmt.Errorf("stop: no running sandbox %q", name)
			}
			var out map[string]string
			if err := call(name, sessionRequest{Op: "stop"}, nil, &out); err != nil {
				return &exitError{code: ward.ExitSetup, msg: err.Error()}
			}
			// Until the supervisor has cleaned up: it removes the state
			// directory last, after the sandbox and its cgroup are gone. (Its
			// pid alone would not do: as a zombie waiting for its parent to
			// reap it, it still answers kill(pid, 0).)
			for i := 0; i < 2000; i++ {
				if _, err := os.Stat(stateOf(name)); os.IsNotExist(err) || procstat.Dead(pid) {
					return nil
				}
				time.Sleep(time.Millisecond)
			}
			return &exitError{code: ward.ExitSetup, msg: fmt.Sprintf("stop: the supervisor of %q (pid %d) is still running", name, pid)}
		},
	}
}

// cleanStates removes the state of sandboxes whose supervisor died.
func cleanStates() []string {
	entries, _ := os.ReadDir(StateDir)
	var removed []string
	for _, e := range entries {
		if !e.IsDir() || !nameRE().MatchString(e.Name()) {
			continue // not a sandbox's (the seccomp cache is .seccomp)
		}
		if _, ok := alive(e.Name()); ok {
			continue
		}
		if err := os.RemoveAll(stateOf(e.Name())); err == nil {
			removed = append(removed, stateOf(e.Name()))
		}
	}
	return removed
}
