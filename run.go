package ward

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/wardbox/ward/fs"
	"github.com/wardbox/ward/nsexec"
)

// The sandbox's identity (DESIGN.md section 2).
const (
	SandboxUser     = "sandbox"
	SandboxUID      = 1000
	SandboxGID      = 1000
	SandboxHostname = "sandbox"
)

// setupTimeout bounds the time from clone to the program's start: a setup
// that hangs is a setup failure, never a hung ward.
const setupTimeout = 30 * time.Second

// Init must be the first call in main of any program that uses this
// package: when the process is a sandbox init (ward re-executes
// /proc/self/exe for that), Init runs it and never returns. Otherwise it
// returns at once.
func Init() {
	if nsexec.IsInit() {
		nsexec.RunInit()
	}
}

// Run runs cfg.Args in a fresh sandbox and waits for it to end. It returns a
// *ConfigError for an invalid cfg (nothing started), a *nsexec.SetupError
// when the sandbox could not be built (the Result says setup_error), and
// ctx.Err() when ctx ended the run. A program that failed, timed out or
// could not be executed is a Result with a nil error.
func Run(ctx context.Context, cfg Config) (*Result, error) {
	cfg = cfg.withDefaults()
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	t0 := time.Now()
	res := newResult(cfg)
	spec, err := buildSpec(cfg)
	if err != nil {
		return failSetup(res, &nsexec.SetupError{Step: "plan-root", Msg: err.Error()})
	}
	log := newLogger(cfg)
	log.before(cfg)

	var sigs chan os.Signal
	if cfg.ForwardSignals {
		sigs = make(chan os.Signal, 8)
		signal.Notify(sigs, syscall.SIGINT, syscall.SIGTERM, syscall.SIGHUP, syscall.SIGQUIT, syscall.SIGUSR1, syscall.SIGUSR2)
		defer signal.Stop(sigs)
	}

	var stdout, stderr *capture
	stdio := nsexec.Stdio{Stdin: cfg.Stdin, Stdout: cfg.Stdout, Stderr: cfg.Stderr}
	if cfg.Capture {
		stdout = &capture{limit: cfg.OutputLimit, tee: cfg.Stdout}
		stderr = &capture{limit: cfg.OutputLimit, tee: cfg.Stderr}
		stdio.Stdout, stdio.Stderr = stdout, stderr
	}

	sb, err := nsexec.Start(spec, stdio, nsexec.Options{HostNetwork: cfg.Network == NetworkHost, TTY: cfg.TTY})
	if err != nil {
		return failSetup(res, err)
	}
	started := make(chan error, 1)
	go func() { _, err := sb.WaitStarted(); started <- err }()
	select {
	case err = <-started:
	case <-time.After(setupTimeout):
		sb.Kill()
		err = &nsexec.SetupError{Step: "setup", Msg: fmt.Sprintf("the sandbox was not ready after %s", setupTimeout)}
	case <-ctx.Done():
		sb.Kill()
		err = ctx.Err()
	}
	res.SetupMs = map[string]float64{"total": ms(time.Since(t0))}
	for _, st := range sb.Steps {
		res.SetupMs[st.Step] = float64(st.Us) / 1000
	}
	var execErr *nsexec.ExecError
	switch {
	case errors.As(err, &execErr):
		_, _ = sb.Wait()
		res.Status, res.ExitCode, res.Error = StatusExited, ptr(execErr.ExitCode()), ptr(execErr.Error())
		res.WardExitCode = exitCodeFor(res)
		log.after(res)
		return res, nil
	case err != nil:
		sb.Kill()
		_, _ = sb.Wait()
		return failSetup(res, err)
	}

	// The program runs: supervise it until it ends.
	tStart := time.Now()
	done := make(chan struct{})
	var ex *nsexec.Exit
	go func() { ex, _ = sb.Wait(); close(done) }()
	var deadline <-chan time.Time
	if cfg.TimeLimit > 0 {
		timer := time.NewTimer(cfg.TimeLimit)
		defer timer.Stop()
		deadline = timer.C
	}
	var ctxErr error
	timedOut := false
wait:
	for {
		select {
		case <-done:
			break wait
		case sig := <-sigs:
			_ = sb.Signal(sig)
		case <-deadline:
			timedOut = true
			sb.Kill()
		case <-ctx.Done():
			ctxErr = ctx.Err()
			sb.Kill()
			ctx = context.Background() // stop selecting on it
		}
	}
	res.WallTimeMs = ms(time.Since(tStart))

	switch {
	case ex != nil: // the program ended by itself (even if a kill raced it)
		setUsage(res, ex.UserUs, ex.SysUs, ex.MaxRSSKB)
		if ex.Signal != 0 {
			res.Status, res.Signal = StatusSignaled, ptr(ex.Signal)
		} else {
			res.Status, res.ExitCode = StatusExited, ptr(ex.Code)
		}
	case timedOut:
		res.Status = StatusTimeout
		res.Error = ptr(fmt.Sprintf("execution exceeded time limit (%s)", FormatDuration(cfg.TimeLimit)))
	default:
		res.Status, res.Signal = StatusSignaled, ptr(int(syscall.SIGKILL))
		msg := "the sandbox was killed"
		if ctxErr != nil {
			msg += ": " + ctxErr.Error()
		}
		res.Error = ptr(msg)
	}
	if ex == nil {
		if ru := sb.Rusage(); ru != nil {
			setUsage(res, ru.Utime.Sec*1e6+ru.Utime.Usec, ru.Stime.Sec*1e6+ru.Stime.Usec, ru.Maxrss)
		}
	}
	if stdout != nil {
		res.Stdout, res.StdoutTruncated = ptr(stdout.String()), stdout.truncated
		res.Stderr, res.StderrTruncated = ptr(stderr.String()), stderr.truncated
	}
	res.WardExitCode = exitCodeFor(res)
	log.after(res)
	return res, ctxErr
}

func newResult(cfg Config) *Result {
	r := &Result{Network: []NetworkEvent{}}
	if cfg.TimeLimit > 0 {
		r.Limits.TimeLimitMs = ptr(cfg.TimeLimit.Milliseconds())
	}
	r.Limits.FileDescriptors = ptr(cfg.FileDescriptors)
	if cfg.Capture {
		r.Limits.OutputLimitBytes = ptr(cfg.OutputLimit)
	}
	return r
}

func failSetup(res *Result, err error) (*Result, error) {
	res.Status, res.Error = StatusSetupError, ptr(err.Error())
	res.WardExitCode = ExitSetup
	return res, err
}

func setUsage(r *Result, userUs, sysUs, maxRSSKB int64) {
	r.UserTimeMs = ptr(float64(userUs) / 1000)
	r.SysTimeMs = ptr(float64(sysUs) / 1000)
	r.CPUTimeMs = ptr(float64(userUs+sysUs) / 1000)
	r.MaxRSSBytes = ptr(maxRSSKB * 1024)
}

// buildSpec turns the config into the init's fully resolved spec.
func buildSpec(cfg Config) (*nsexec.Spec, error) {
	home := "/home/" + SandboxUser
	plan, err := fs.DefaultPlan(fs.Options{
		Hostname: SandboxHostname, UID: SandboxUID, GID: SandboxGID, Home: home,
		NetworkHost: cfg.Network == NetworkHost,
		TmpSize:     DefaultTmpSize, HomeSize: DefaultHomeSize, ScratchInodes: DefaultScratchInodes,
	})
	if err != nil {
		return nil, err
	}
	return &nsexec.Spec{
		Args:       cfg.Args,
		Env:        sandboxEnv(cfg.Env, os.Environ(), home),
		Dir:        cfg.Workdir,
		Hostname:   SandboxHostname,
		Plan:       plan,
		LoopbackUp: cfg.Network != NetworkHost,
		UID:        SandboxUID,
		GID:        SandboxGID,
		NoFile:     uint64(cfg.FileDescriptors),
		TTY:        cfg.TTY,
	}, nil
}

// passedEnv are taken from the caller's environment (plus every WARD_*).
var passedEnv = []string{"PATH", "LANG", "LC_ALL", "TERM"}

// sandboxEnv is DESIGN.md section 2's environment: the caller's PATH, LANG,
// LC_ALL, TERM and WARD_*, then HOME, TMPDIR and USER, then extra ("K=V"
// sets, "K" passes the caller's K if it has one). Later entries win.
func sandboxEnv(extra, caller []string, home string) []string {
	vals := map[string]string{}
	var order []string
	set := func(k, v string) {
		if _, ok := vals[k]; !ok {
			order = append(order, k)
		}
		vals[k] = v
	}
	lookup := func(k string) (string, bool) {
		for i := len(caller) - 1; i >= 0; i-- {
			if v, ok := strings.CutPrefix(caller[i], k+"="); ok {
				return v, true
			}
		}
		return "", false
	}
	for _, k := range passedEnv {
		if v, ok := lookup(k); ok {
			set(k, v)
		}
	}
	if _, ok := vals["PATH"]; !ok {
		set("PATH", "/usr/local/bin:/usr/bin:/bin")
	}
	for _, kv := range caller {
		if k, v, ok := strings.Cut(kv, "="); ok && strings.HasPrefix(k, "WARD_") {
			set(k, v)
		}
	}
	set("HOME", home)
	set("TMPDIR", "/tmp")
	set("USER", SandboxUser)
	for _, e := range extra {
		if k, v, ok := strings.Cut(e, "="); ok {
			set(k, v)
		} else if v, ok := lookup(e); ok {
			set(e, v)
		}
	}
	env := make([]string, 0, len(order))
	for _, k := range order {
		env = append(env, k+"="+vals[k])
	}
	return env
}

// capture keeps the first limit bytes of a stream and drains the rest, so a
// chatty program never blocks on a full pipe.
type capture struct {
	mu        sync.Mutex
	buf       []byte
	limit     int64
	truncated bool
	tee       io.Writer
}

func (c *capture) Write(p []byte) (int, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	room := c.limit - int64(len(c.buf))
	switch {
	case room >= int64(len(p)):
		c.buf = append(c.buf, p...)
	default:
		if room > 0 {
			c.buf = append(c.buf, p[:room]...)
		}
		c.truncated = true
	}
	if c.tee != nil {
		_, _ = c.tee.Write(p) // a failing tee must not stop the capture
	}
	return len(p), nil
}

func (c *capture) String() string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return string(c.buf)
}
