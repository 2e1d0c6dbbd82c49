package ward

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/wardbox/ward/netns"
	"github.com/wardbox/ward/nsexec"
)

// Command is one program to run in a long-lived sandbox.
type Command struct {
	Args []string
	// Env adds "K=V" on top of the sandbox's environment.
	Env []string
	// Dir is the working directory inside; empty means the sandbox's.
	Dir string
	// Stdin, Stdout, Stderr: nil means /dev/null (and discard).
	Stdin          io.Reader
	Stdout, Stderr io.Writer
	// TimeLimit ends this command only (0: none).
	TimeLimit time.Duration
	// Capture keeps up to OutputLimit bytes of each stream in the Result
	// (in addition to writing them to Stdout/Stderr when those are set),
	// as Config.Capture does for Run. OutputLimit 0 means the sandbox's
	// Config.OutputLimit.
	Capture     bool
	OutputLimit int64
	// Caller is who asked for the command, for the audit log; nil means
	// the sandbox's Config.Caller, else this process.
	Caller *Caller
}

// Sandbox is a long-lived sandbox: namespaces, cgroup, root and network
// stay up, and every Exec runs in them, with the same files, limits (the
// cgroup is shared), seccomp policy and identity.
type Sandbox struct {
	l      *launched
	nextID atomic.Int64
	once   sync.Once
	label  string // its name or id in the audit log
	audit  string // the audit log's path; "" for none
}

// Start builds a sandbox from cfg (cfg.Args is ignored) that stays up
// until Close. ctx bounds the setup only. With cfg.AuditLog, the log is
// opened first (a *SetupError of step "audit-log" if it cannot be, and
// nothing is built), a setup failure gets a line, and so does every Exec.
func Start(ctx context.Context, cfg Config) (*Sandbox, error) {
	cfg.Args = nil // each Exec brings its own
	cfg.ForwardSignals, cfg.Capture = false, false
	if err := cfg.ValidateSettings(); err != nil {
		return nil, err
	}
	var audit *auditLog
	started, full := time.Now(), cfg.withDefaults()
	if cfg.AuditLog != "" {
		var err error
		if audit, err = openAuditLog(auditPath(full)); err != nil {
			return nil, err
		}
		defer audit.close()
	}
	label := sandboxLabel(full)
	l, res, err := launch(ctx, cfg, true)
	if err != nil {
		if res != nil && l != nil {
			l.close()
		}
		var ce *ConfigError
		if audit != nil && !errors.As(err, &ce) {
			e := auditEntry{kind: AuditStart, cfg: full, sandbox: label, argv: []string{}, workdir: full.Workdir,
				caller: full.Caller, started: started, err: err, limits: newResult(full).Limits}
			if werr := audit.write(e.record()); werr != nil {
				err = errors.Join(err, werr)
			}
		}
		return nil, err
	}
	s := &Sandbox{l: l, label: label}
	if audit != nil {
		s.audit = audit.path
	}
	return s, nil
}

// Close kills everything inside and removes all state (cgroup, mounts,
// what was lent). It may be called more than once.
func (s *Sandbox) Close() error {
	s.once.Do(func() { s.l.close() })
	return nil
}

// Exec runs c in the sandbox and waits for it. A command that failed, ran
// out of time or could not be executed is a Result (see Result.Err);
// ctx's end kills the command and returns ctx.Err().
//
// In a sandbox with an audit log, the log is opened before the command
// runs (a *SetupError of step "audit-log" if it cannot be, and it does not
// run) and gets one line for it, failures included; a line that cannot be
// written is an *AuditError returned with the Result.
func (s *Sandbox) Exec(ctx context.Context, c Command) (*Result, error) {
	if len(c.Args) == 0 || c.Args[0] == "" {
		return nil, &ConfigError{Key: "command", Value: "", Reason: "no command given"}
	}
	id := int(s.nextID.Add(1))
	if s.audit == "" {
		return s.exec(ctx, c, id)
	}
	audit, err := openAuditLog(s.audit)
	if err != nil {
		return nil, err
	}
	defer audit.close()
	started, mark := time.Now(), s.networkMark()
	res, err := s.exec(ctx, c, id)
	cfg := s.l.cfg
	e := auditEntry{kind: AuditExec, cfg: cfg, sandbox: s.label, execID: id, argv: c.Args, workdir: c.Dir,
		caller: cfg.Caller, started: started, res: res, err: err, limits: s.l.res.Limits, layers: s.l.res.Layers}
	if c.Caller != nil {
		e.caller = c.Caller
	}
	if e.workdir == "" {
		e.workdir = s.l.spec.Dir
	}
	e.attempts, e.dropped, e.dropSum = s.networkSince(mark)
	if werr := audit.write(e.record()); werr != nil {
		return res, errors.Join(err, werr)
	}
	return res, err
}

// networkMark is where the proxy's record of network attempts stands.
type networkMark struct {
	events  int
	dropped netns.Dropped
}

func (s *Sandbox) networkMark() networkMark {
	if s.l.proxy == nil {
		return networkMark{}
	}
	return networkMark{events: len(s.l.proxy.Events()), dropped: s.l.proxy.Dropped()}
}

// networkSince is the network attempts made in the sandbox since m (by
// any of its processes: commands running at the same time share them),
// and those the proxy only counted.
func (s *Sandbox) networkSince(m networkMark) (events []NetworkEvent, dropped int, sum NetworkDropped) {
	events = []NetworkEvent{}
	if s.l.proxy == nil {
		return events, 0, sum
	}
	all, d := s.l.proxy.Events(), s.l.proxy.Dropped()
	for _, ev := range all[min(m.events, len(all)):] {
		events = append(events, NetworkEvent(ev))
	}
	sum = NetworkDropped{Allowed: d.Allowed - m.dropped.Allowed, Blocked: d.Blocked - m.dropped.Blocked,
		BytesUp: d.BytesUp - m.dropped.BytesUp, BytesDown: d.BytesDown - m.dropped.BytesDown}
	return events, d.Events - m.dropped.Events, sum
}

// exec is Exec without the audit log.
func (s *Sandbox) exec(ctx context.Context, c Command, id int) (*Result, error) {
	res := &Result{Network: []NetworkEvent{}, Limits: s.l.res.Limits}
	if c.TimeLimit > 0 {
		res.Limits.TimeLimitMs = ptr(c.TimeLimit.Milliseconds())
	}
	if c.Capture {
		limit := c.OutputLimit
		if limit == 0 {
			limit = s.l.cfg.OutputLimit
		}
		stdout, stderr := &capture{limit: limit, tee: c.Stdout}, &capture{limit: limit, tee: c.Stderr}
		c.Stdout, c.Stderr = stdout, stderr
		res.Limits.OutputLimitBytes = ptr(limit)
		// Filled once the command's output is drained (every return of
		// a Result below comes after wait()).
		defer func() {
			res.Stdout, res.StdoutTruncated = ptr(stdout.String()), stdout.truncated
			res.Stderr, res.StderrTruncated = ptr(stderr.String()), stderr.truncated
		}()
	}
	files, wait, closeChild, err := commandStdio(c)
	if err != nil {
		return nil, err
	}
	dir := c.Dir
	if dir == "" {
		dir = s.l.spec.Dir
	}
	env := append(append([]string{}, s.l.spec.Env...), c.Env...)
	oomBefore := s.oomKills()
	ch, err := s.l.sb.Exec(nsexec.ExecRequest{ID: id, Args: c.Args, Env: env, Dir: dir}, files)
	closeChild()
	if err != nil {
		wait()
		return nil, err
	}
	var deadline <-chan time.Time
	var start time.Time
	timedOut := false
	var ctxErr error
	for {
		select {
		case ev, ok := <-ch:
			if !ok {
				wait()
				return nil, fmt.Errorf("the sandbox ended while %q ran", c.Args[0])
			}
			switch {
			case ev.Started:
				start = time.Now()
				if ctxErr != nil {
					// ctx ended before the init knew the command's
					// process: that kill found nothing to kill.
					s.l.sb.KillExec(id, syscall.SIGKILL)
				}
				if c.TimeLimit > 0 {
					deadline = time.After(c.TimeLimit)
				}
			case ev.ExecErr != nil:
				wait()
				res.Status, res.ExitCode, res.Error = StatusExited, ptr(ev.ExecErr.ExitCode()), ptr(ev.ExecErr.Error())
				res.WardExitCode = exitCodeFor(res)
				return res, nil
			case ev.SetupErr != nil:
				wait()
				return nil, ev.SetupErr
			case ev.Exit != nil:
				wait()
				s.l.sb.Forget(id)
				res.WallTimeMs = ms(time.Since(start))
				ex := ev.Exit
				setUsage(res, ex.UserUs, ex.SysUs, ex.MaxRSSKB)
				oom := s.oomKills()
				decide(ending{TimeLimit: c.TimeLimit, MemoryLimit: s.l.cfg.MemoryLimit, Exit: ex, TimedOut: timedOut,
					OOMKills: oom - min(oom, oomBefore)}).apply(res)
				return res, ctxErr
			}
		case <-deadline:
			timedOut = true
			s.l.sb.KillExec(id, syscall.SIGKILL)
			deadline = nil
		case <-ctx.Done():
			ctxErr = ctx.Err()
			s.l.sb.KillExec(id, syscall.SIGKILL)
			ctx = context.Background()
		}
	}
}

func (s *Sandbox) oomKills() uint64 {
	st, err := s.l.cg.Stats()
	if err != nil {
		return 0
	}
	return st.OOMKills
}

// outputGrace is how long an ended command's output is still read while
// some process of the sandbox keeps its stdout or stderr open.
const outputGrace = 250 * time.Millisecond

// commandStdio makes the command's three fds: a stream that is an
// *os.File is passed as is, any other is copied through a pipe. wait
// waits for the copies; closeChild closes this side's copies of the
// command's ends once the init has them.
func commandStdio(c Command) (files [3]*os.File, wait func(), closeChild func(), err error) {
	var child, readers []*os.File
	var wg sync.WaitGroup
	devnull := func(flag int) (*os.File, error) {
		f, err := os.OpenFile(os.DevNull, flag, 0)
		if err == nil {
			child = append(child, f)
		}
		return f, err
	}
	fail := func(e error) ([3]*os.File, func(), func(), error) {
		for _, f := range child {
			f.Close()
		}
		return files, nil, nil, e
	}
	switch in := c.Stdin.(type) {
	case nil:
		if files[0], err = devnull(os.O_RDONLY); err != nil {
			return fail(err)
		}
	case *os.File:
		files[0] = in
	default:
		r, w, err := os.Pipe()
		if err != nil {
			return fail(err)
		}
		files[0], child = r, append(child, r)
		go func() { _, _ = io.Copy(w, in); w.Close() }()
	}
	for i, out := range []io.Writer{c.Stdout, c.Stderr} {
		switch o := out.(type) {
		case nil:
			if files[i+1], err = devnull(os.O_WRONLY); err != nil {
				return fail(err)
			}
		case *os.File:
			files[i+1] = o
		default:
			r, w, err := os.Pipe()
			if err != nil {
				return fail(err)
			}
			files[i+1], child = w, append(child, w)
			readers = append(readers, r)
			wg.Add(1)
			go func() { defer wg.Done(); _, _ = io.Copy(o, r); r.Close() }()
		}
	}
	// The copies end at EOF, when every process holding the command's
	// stdout and stderr has closed them; a background process that keeps
	// them open must not hold the command's result: after outputGrace the
	// copies stop (what it writes later is lost, and it gets EPIPE).
	wait = func() {
		done := make(chan struct{})
		go func() { wg.Wait(); close(done) }()
		select {
		case <-done:
			return
		case <-time.After(outputGrace):
		}
		for _, r := range readers {
			_ = r.SetReadDeadline(time.Now())
		}
		<-done
	}
	return files, wait, func() {
		for _, f := range child {
			f.Close()
		}
	}, nil
}

// SandboxStats are a long-lived sandbox's current figures.
type SandboxStats struct {
	MemoryCurrent int64 // bytes now charged to its cgroup
	Processes     int64 // tasks now in it
}

// Stats reads the sandbox's current memory and task count.
func (s *Sandbox) Stats() (SandboxStats, error) {
	var st SandboxStats
	var err error
	if st.Processes, err = s.l.cg.PidsCurrent(); err != nil {
		return st, err
	}
	st.MemoryCurrent, err = s.l.cg.MemoryCurrent()
	return st, err
}
