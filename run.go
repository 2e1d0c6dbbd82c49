package ward

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/wardbox/ward/cgroup"
	"github.com/wardbox/ward/fs"
	"github.com/wardbox/ward/netns"
	"github.com/wardbox/ward/nsexec"
	"github.com/wardbox/ward/seccomp"
)

// The sandbox's identity (docs/sandbox.md).
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
// package: when the process is a sandbox's proxy relay (the sandbox's init
// execs the program's own binary for that, --network=proxy), Init runs it
// and never returns. Otherwise it returns at once. (The sandbox init
// itself is C, run by a constructor before main: nsexec/init_linux.c.)
func Init() {
	if nsexec.IsRelay() {
		nsexec.RunRelay()
	}
}

// launched is a sandbox whose setup is done: what Run supervises, or what
// Start hands out. undo holds, in order, what to release at the end.
type launched struct {
	cfg            Config
	res            *Result
	log            *logger
	sb             *nsexec.Sandbox
	cg             cgroup.Manager
	proxy          *netns.Proxy
	stdout, stderr *capture
	sigs           chan os.Signal
	spec           *nsexec.Spec
	undo           []func()
	// giveBacks give lent directories back to their owners (also in
	// undo): done before the result is handed out, since the result says
	// the caller's files are the caller's again.
	giveBacks []func()
}

// giveBack gives the lent directories back now (each give-back is done
// once: undo's call later finds nothing left to give).
func (l *launched) giveBack() {
	for _, f := range l.giveBacks {
		f()
	}
}

func (l *launched) close() {
	for i := len(l.undo) - 1; i >= 0; i-- {
		l.undo[i]()
	}
	l.undo = nil
}

// Run runs cfg.Args in a fresh sandbox and waits for it to end. It returns a
// *ConfigError for an invalid cfg (nothing started), a *SetupError when the
// sandbox could not be built (the Result says setup_error), and ctx.Err()
// when ctx ended the run. A program that failed, timed out or could not be
// executed is a Result with a nil error. cfg.OnResult, if set, gets the
// same Result and error before the sandbox's teardown; Run returns after it.
//
// With cfg.AuditLog, the log is opened before anything is built (a
// *SetupError of step "audit-log" if it cannot be, and nothing runs) and
// gets one line for the run, setup failures included (not for an invalid
// cfg); a line that cannot be written is an *AuditError returned with the
// Result.
func Run(ctx context.Context, cfg Config) (*Result, error) {
	done := func(res *Result, err error) (*Result, error) {
		if cfg.OnResult != nil {
			cfg.OnResult(res, err)
		}
		return res, err
	}
	if err := cfg.Validate(); err != nil {
		return done(nil, err)
	}
	if cfg.AuditLog == "" {
		return runOnce(ctx, cfg, done)
	}
	started := time.Now()
	full := cfg.withDefaults()
	audit, err := openAuditLog(auditPath(full))
	if err != nil {
		err = failSetupErr(newResult(full), err)
		return done(failedResult(err), err)
	}
	defer audit.close()
	return runOnce(ctx, cfg, func(res *Result, err error) (*Result, error) {
		var ce *ConfigError
		if errors.As(err, &ce) {
			return done(res, err) // bad input: nothing ran, no line
		}
		e := auditEntry{kind: AuditRun, cfg: full, sandbox: sandboxLabel(full), argv: full.Args, workdir: full.Workdir,
			caller: full.Caller, started: started, res: res, err: err, limits: newResult(full).Limits}
		if werr := audit.write(e.record()); werr != nil {
			err = errors.Join(err, werr)
		}
		return done(res, err)
	})
}

// runOnce runs cfg and hands its result to done as soon as the result is
// complete: the program's PID namespace is gone (the init reaped, so no
// process of the sandbox is left), its figures are read and lent
// directories given back. The cgroup's removal and the rest of the
// teardown follow, and runOnce returns what done returned.
func runOnce(ctx context.Context, cfg Config, done func(*Result, error) (*Result, error)) (*Result, error) {
	l, res, err := launch(ctx, cfg, false)
	var execErr *nsexec.ExecError
	var se *SetupError
	switch {
	case errors.As(err, &execErr):
		defer l.close()
		_, _ = l.sb.Wait()
		res.Status, res.ExitCode, res.Error = StatusExited, ptr(execErr.ExitCode()), ptr(execErr.Error())
		res.WardExitCode = exitCodeFor(res)
		l.log.after(res)
		l.giveBack()
		return done(res, nil)
	case errors.As(err, &se):
		return done(failedResult(err), err)
	case err != nil:
		return done(nil, err)
	}
	// Deferred, so after done: the result does not wait for the teardown.
	defer l.close()
	cfg, sb, cg := l.cfg, l.sb, l.cg
	sv := supervise(ctx, cfg, sb, cg, l.sigs)
	if l.proxy != nil {
		for _, e := range l.proxy.Events() {
			res.Network = append(res.Network, NetworkEvent(e))
		}
		d := l.proxy.Dropped()
		res.NetworkEventsDropped = d.Events
		res.NetworkDropped = NetworkDropped{Allowed: d.Allowed, Blocked: d.Blocked, BytesUp: d.BytesUp, BytesDown: d.BytesDown}
	}
	res.WallTimeMs = ms(sv.wall)
	judge(res, cfg, sb, cg, sv)
	if l.stdout != nil {
		res.Stdout, res.StdoutTruncated = ptr(l.stdout.String()), l.stdout.truncated
		res.Stderr, res.StderrTruncated = ptr(l.stderr.String()), l.stderr.truncated
	}
	res.WardExitCode = exitCodeFor(res)
	l.log.after(res)
	l.giveBack()
	return done(res, sv.ctxErr)
}

// supervision is what happened while the program ran.
type supervision struct {
	ex        *nsexec.Exit // as the init reported it; nil if the init was killed
	wall      time.Duration
	timedOut  bool // the wall-clock limit was reached
	cpuKilled bool // the CPU time limit was reached
	pidsPeak  int64
	ctxErr    error
}

// withoutCgroup prepares a sandbox that gets no cgroup (cgErr says why):
// processes are held by RLIMIT_NPROC; memory and CPU time per process
// (RLIMIT_DATA, RLIMIT_CPU) with --limits=best-effort, else refused, and
// so is a CPU share, which nothing else can hold. The result says what
// holds each limit.
func withoutCgroup(cfg Config, spec *nsexec.Spec, res *Result, cgErr error) error {
	need := []string{}
	if cfg.MemoryLimit > 0 {
		need = append(need, "--memory-limit")
	}
	if cfg.CPUTimeLimit > 0 {
		need = append(need, "--cpu-time-limit")
	}
	if cfg.CPULimit > 0 {
		need = append(need, "--cpu-limit")
	}
	const how = "get a delegated cgroup v2 subtree (a systemd user manager, which ward asks for a scope itself; systemd-run --user --scope -p Delegate=yes ward run ...; or a systemd service with Delegate=yes)"
	switch {
	case cfg.CPULimit > 0:
		return fmt.Errorf("%s needs a cgroup, and this host gives ward none (%v): %s; nothing per process can hold a CPU share", strings.Join(need, ", "), cgErr, how)
	case len(need) > 0 && cfg.Limits != LimitsBestEffort:
		return fmt.Errorf("%s needs a cgroup to hold the whole sandbox, and this host gives ward none (%v): %s, or accept per-process limits with --limits=best-effort", strings.Join(need, ", "), cgErr, how)
	}
	// Under the single mapping the init is the sandbox user too: the
	// program gets a namespace of its own so that only its tasks count.
	spec.NProc, spec.NestUserns = uint64(cfg.Processes), nsexec.RootlessFullMapping() == nil
	by := res.Limits.EnforcedBy
	by["processes"] = "rlimit-per-user-namespace"
	if cfg.MemoryLimit > 0 {
		spec.DataBytes = uint64(cfg.MemoryLimit)
		by["memory_limit_bytes"] = "rlimit-per-process"
	}
	if cfg.CPUTimeLimit > 0 {
		by["cpu_time_limit_ms"] = "rlimit-per-process"
	}
	return nil
}

// timeLimitBackstop is how long after the program's time limit ward
// itself ends a sandbox whose init has not (the init enforces the limit on
// the program's own clock; this only guards against an init that cannot).
const timeLimitBackstop = time.Second

// supervise waits for the program's end while relaying signals, backing up
// the init's wall-clock limit, and polling the cgroup's CPU time (and task
// count) for the CPU time limit.
func supervise(ctx context.Context, cfg Config, sb *nsexec.Sandbox, cg cgroup.Manager, sigs chan os.Signal) supervision {
	var sv supervision
	tStart := time.Now()
	done := make(chan struct{})
	go func() { sv.ex, _ = sb.Wait(); close(done) }()
	var deadline <-chan time.Time
	if cfg.TimeLimit > 0 {
		since := time.Duration(nsexec.MonoUs()-sb.StartedUs) * time.Microsecond
		timer := time.NewTimer(cfg.TimeLimit - since + timeLimitBackstop)
		defer timer.Stop()
		deadline = timer.C
	}
	// Poll often enough to stop within ~10 ms of a CPU time limit; without
	// one, only sample the task count for processes_peak.
	every := 50 * time.Millisecond
	if cfg.CPUTimeLimit > 0 {
		every = 10 * time.Millisecond
	}
	tick := time.NewTicker(every)
	defer tick.Stop()
	sample := func() {
		if n, err := cg.PidsCurrent(); err == nil {
			sv.pidsPeak = max(sv.pidsPeak, n)
		}
		if cfg.CPUTimeLimit > 0 && !sv.cpuKilled {
			if used, err := cg.CPUUsage(); err == nil && used >= cfg.CPUTimeLimit {
				sv.cpuKilled = true
				sb.Kill()
			}
		}
	}
	sample()
	for {
		select {
		case <-done:
			sv.wall = time.Since(tStart)
			if sv.ex != nil && sv.ex.WallUs > 0 {
				sv.wall = time.Duration(sv.ex.WallUs) * time.Microsecond // the program's own clock
			}
			return sv
		case sig := <-sigs:
			if cfg.TTY && (sig == syscall.SIGINT || sig == syscall.SIGQUIT) {
				// The terminal sent it to its whole foreground group, the
				// program included: relayed, it would arrive twice.
				continue
			}
			_ = sb.Signal(sig)
		case <-tick.C:
			sample()
		case <-deadline:
			sv.timedOut = true
			sb.Kill()
		case <-ctx.Done():
			sv.ctxErr = ctx.Err()
			sb.Kill()
			ctx = context.Background() // stop selecting on it
		}
	}
}

// judge fills the result's status and figures: the limit ward enforced
// first, then the kernel's verdicts (OOM kill, RLIMIT_CPU), then the
// program's own end.
func judge(res *Result, cfg Config, sb *nsexec.Sandbox, cg cgroup.Manager, sv supervision) {
	st, stErr := cg.Stats()
	ex := sv.ex
	if ex != nil {
		setUsage(res, ex.UserUs, ex.SysUs, ex.MaxRSSKB)
		res.csw = [2]int64{ex.NVCSw, ex.NIVCSw}
		if cfg.Log == LogVerbose && seccomp.Builtin(policyName(cfg)) != nil {
			res.SyscallsDenied = append([]seccomp.Denial{}, ex.Denied...)
		}
		if ex.KeepError != "" && cfg.LogWriter != nil {
			fmt.Fprintf(cfg.LogWriter, "ward: --overlay-keep=%s: %s\n", cfg.OverlayKeep, ex.KeepError)
		}
	} else if ru := sb.Rusage(); ru != nil {
		setUsage(res, ru.Utime.Sec*1e6+ru.Utime.Usec, ru.Stime.Sec*1e6+ru.Stime.Usec, ru.Maxrss)
	}
	if stErr == nil {
		// The cgroup's figures are of the program's processes only, all of
		// them, even those the init never reaped.
		res.CPUTimeMs, res.UserTimeMs, res.SysTimeMs = ptr(ms(st.CPU)), ptr(ms(st.User)), ptr(ms(st.Sys))
		if st.MemoryPeak >= 0 {
			res.MemoryPeakBytes = ptr(st.MemoryPeak)
		}
		res.CPUThrottledMs = ptr(ms(st.Throttled))
		res.ProcessesPeak = ptr(int(max(st.PidsPeak, sv.pidsPeak, 1)))
		res.OOMKilled = ptr(st.OOMKills > 0)
	}
	e := ending{TimeLimit: cfg.TimeLimit, CPUTimeLimit: cfg.CPUTimeLimit, MemoryLimit: cfg.MemoryLimit,
		Exit: ex, TimedOut: sv.timedOut, CPUKilled: sv.cpuKilled, CtxErr: sv.ctxErr}
	if stErr == nil {
		e.CPUUsed, e.HaveCPU, e.OOMKills = st.CPU, true, st.OOMKills
	}
	decide(e).apply(res)
}

func errnoOf(err error) syscall.Errno {
	var en syscall.Errno
	if errors.As(err, &en) {
		return en
	}
	return 0
}

func newResult(cfg Config) *Result {
	r := &Result{Network: []NetworkEvent{}}
	if cfg.TimeLimit > 0 {
		r.Limits.TimeLimitMs = ptr(cfg.TimeLimit.Milliseconds())
	}
	soft, hard := FileDescriptorLimits(cfg.FileDescriptors)
	r.Limits.FileDescriptors, r.Limits.FileDescriptorsHard = ptr(int(soft)), ptr(int(hard))
	r.Limits.Processes = ptr(cfg.Processes)
	by := map[string]string{"processes": "cgroup", "file_descriptors": "rlimit-per-process"}
	r.Limits.EnforcedBy = by
	if cfg.TimeLimit > 0 {
		by["time_limit_ms"] = "ward"
	}
	if cfg.CPUTimeLimit > 0 {
		by["cpu_time_limit_ms"] = "cgroup"
	}
	if cfg.MemoryLimit > 0 {
		by["memory_limit_bytes"] = "cgroup"
	}
	if cfg.CPULimit > 0 {
		by["cpu_limit_percent"] = "cgroup"
	}
	if cfg.MaxFileSize > 0 {
		by["max_file_size_bytes"] = "rlimit-per-process"
	}
	if cfg.CPUTimeLimit > 0 {
		r.Limits.CPUTimeLimitMs = ptr(cfg.CPUTimeLimit.Milliseconds())
	}
	if cfg.MemoryLimit > 0 {
		r.Limits.MemoryLimitBytes = ptr(cfg.MemoryLimit)
	}
	if cfg.CPULimit > 0 {
		r.Limits.CPULimitPercent = ptr(cfg.CPULimit)
	}
	if cfg.MaxFileSize > 0 {
		r.Limits.MaxFileSizeBytes = ptr(cfg.MaxFileSize)
	}
	if cfg.Capture {
		r.Limits.OutputLimitBytes = ptr(cfg.OutputLimit)
	}
	return r
}

// SetupError is a sandbox that could not be built: the step (named for
// the side of the fork that runs it), the path and errno where there are.
type SetupError = nsexec.SetupError

// setupFailed wraps a setup failure with its result, so that Run can hand
// both back.
type setupFailedError struct {
	*SetupError
	res *Result
}

func (e *setupFailedError) Unwrap() error { return e.SetupError }

func failSetupErr(res *Result, err error) error {
	res.Status, res.Error = StatusSetupError, ptr(err.Error())
	res.WardExitCode = ExitSetup
	var se *SetupError
	if !errors.As(err, &se) {
		se = &SetupError{Step: "setup", Msg: err.Error()}
	}
	return &setupFailedError{SetupError: se, res: res}
}

func setupFailed(res *Result, err error) error { return failSetupErr(res, err) }

// failedResult is the Result a setup failure carries.
func failedResult(err error) *Result {
	var f *setupFailedError
	if errors.As(err, &f) {
		return f.res
	}
	return nil
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
	var scratch [3]fs.Scratch
	for i, d := range cfg.scratchDirs() {
		scratch[i].Size, scratch[i].Inodes = d.s.effective(d.def, cfg.MaxFiles)
	}
	plan, err := fs.DefaultPlan(fs.Options{
		Hostname: SandboxHostname, UID: SandboxUID, GID: SandboxGID, Home: home,
		NetworkHost: cfg.Network == NetworkHost,
		FullProc:    cfg.AllowNested,
		TmpFS:       scratch[0], HomeFS: scratch[1], ShmFS: scratch[2],
		Overlay: cfg.Overlay, OverlaySize: overlaySize(cfg), ExtraHosts: extraHosts(cfg.AddHosts, cfg.Network == NetworkProxy),
		Nameserver: map[bool]string{true: "127.0.0.1"}[cfg.Network == NetworkProxy],
	})
	if err != nil {
		return nil, err
	}
	nofile, nofileHard := FileDescriptorLimits(cfg.FileDescriptors)
	spec := &nsexec.Spec{
		Args:       cfg.Args,
		Env:        sandboxEnv(append(append([]string{}, cfg.EnvPass...), cfg.Env...), cfg.CallerEnv, home, cfg.Network == NetworkProxy),
		Dir:        cfg.Workdir,
		Hostname:   SandboxHostname,
		Plan:       plan,
		LoopbackUp: cfg.Network != NetworkHost,
		UID:        SandboxUID,
		GID:        SandboxGID,
		NoFile:     nofile,
		NoFileHard: nofileHard,
		Overlay:    cfg.Overlay,
		CPUSeconds: rlimitCPU(cfg.CPUTimeLimit),
		// An unprivileged caller's single mapping denies setgroups; its
		// full range (newuidmap) makes the init root once mapped.
		KeepGroups: os.Geteuid() != 0 && nsexec.RootlessFullMapping() == nil,
		BecomeRoot: nsexec.RootlessFullMapping() != nil,
		FileSize:   uint64(cfg.MaxFileSize),
		// The init times the program from its exec.
		TimeLimitUs: cfg.TimeLimit.Microseconds(),
		TTY:         cfg.TTY,
	}
	if cfg.Overlay {
		spec.RootSize = overlaySize(cfg) // /etc and new top-level files land in it
	}
	if !cfg.AllowNested {
		// A process under Landlock may not mount: no sandbox inside.
		spec.Landlock = landlockPolicy(cfg)
	}
	if cfg.Network == NetworkProxy {
		spec.DirectPorts = cfg.AllowPorts
		if len(spec.DirectPorts) == 0 {
			spec.DirectPorts = DefaultDirectPorts
		}
		for _, h := range cfg.AddHosts {
			name, _, _ := ParseAddHost(h)
			spec.DirectNames = append(spec.DirectNames, name)
		}
	}
	return spec, nil
}

// seccompPrograms compiles the policy named in cfg (built-ins once per
// process). The built-ins hold the setuid/setgid rules; unconfined and a
// JSON profile get them as a filter of their own, so that no policy lets
// the program leave a setuid file in a host directory.
func seccompPrograms(name string) ([]seccomp.Program, error) {
	switch name {
	case SeccompDefault:
		return seccomp.CompileCached(seccomp.Default())
	case SeccompStrict:
		return seccomp.CompileCached(seccomp.Strict())
	case seccompNested:
		return seccomp.CompileCached(seccomp.Nested())
	}
	noSetID, err := seccomp.CompileCached(seccomp.NoSetID())
	if err != nil || name == SeccompUnconfined {
		return noSetID, err
	}
	progs, err := seccomp.CompileFile(name)
	// Loaded first: a profile may deny seccomp(2) itself.
	return append(append([]seccomp.Program{}, noSetID...), progs...), err
}

// seccompNested is the default policy with nested sandboxes allowed.
const seccompNested = "default-nested"

// policyName is the policy cfg runs under: the default one becomes its
// nested variant with AllowNested.
func policyName(cfg Config) string {
	if cfg.AllowNested && cfg.Seccomp == SeccompDefault {
		return seccompNested
	}
	return cfg.Seccomp
}

// seccompFile makes a profile file's path absolute against cwd (the
// built-in names stay as they are).
func seccompFile(name, cwd string) string {
	switch name {
	case "", SeccompDefault, SeccompStrict, SeccompUnconfined:
		return name
	}
	if filepath.IsAbs(name) || cwd == "" {
		return name
	}
	return filepath.Join(cwd, name)
}

// checkKeepDir resolves the --overlay-keep directory: it must exist, be a
// directory and be empty (so what is there afterwards is the overlay's).
func checkKeepDir(dir, cwd string) (string, error) {
	real, err := fs.ResolveSource(dir, cwd)
	if err != nil {
		return "", &ConfigError{Key: "overlay-keep", Value: dir, Reason: err.Error()}
	}
	entries, err := os.ReadDir(real)
	if err != nil {
		return "", &ConfigError{Key: "overlay-keep", Value: dir, Reason: "want an empty directory: " + err.Error()}
	}
	if len(entries) > 0 {
		return "", &ConfigError{Key: "overlay-keep", Value: dir, Reason: "want an empty directory"}
	}
	return real, nil
}

// checkKeepOverlap refuses an --overlay-keep directory (resolved) that
// lies inside a path the sandbox may write (the workspace, --allow-write,
// a writable --mount), or holds one: the program could then plant links or
// files in it for ward to write through, as the caller, when it copies
// the overlay's changes there.
func checkKeepOverlap(keep string, mounts []hostMount) error {
	if keep == "" {
		return nil
	}
	for _, m := range mounts {
		if m.rw && (pathWithin(keep, m.src) || pathWithin(m.src, keep)) {
			return &ConfigError{Key: "overlay-keep", Value: keep,
				Reason: fmt.Sprintf("overlaps --%s=%s, which the sandbox may write: give a directory outside it", m.flag, m.value)}
		}
	}
	return nil
}

// pathWithin says whether p (clean, absolute) is dir or lies beneath it.
func pathWithin(p, dir string) bool {
	return p == dir || dir == "/" || strings.HasPrefix(p, dir+"/")
}

func overlaySize(cfg Config) int64 {
	if !cfg.Overlay {
		return 0
	}
	if cfg.OverlaySize > 0 {
		return cfg.OverlaySize
	}
	return DefaultOverlaySize
}

// rlimitCPU is RLIMIT_CPU's soft limit backing a CPU time limit: a second
// past it, rounded up, so the supervisor's poll (exact, whole sandbox)
// normally acts first and the rlimit (per process) only catches a missed
// poll.
func rlimitCPU(d time.Duration) uint64 {
	if d <= 0 {
		return 0
	}
	return uint64((d+time.Second-1)/time.Second) + 1
}

// passedEnv are taken from the caller's environment (plus every WARD_*).
var passedEnv = []string{"PATH", "LANG", "LC_ALL", "TERM"}

// sandboxEnv is the sandbox's environment (docs/sandbox.md): the caller's PATH, LANG,
// LC_ALL, TERM and WARD_*, then HOME, TMPDIR and USER, then extra ("K=V"
// sets, "K" passes the caller's K if it has one, a pattern passes each
// caller variable it matches but those ward set; env.go). Later entries
// win.
func sandboxEnv(extra, caller []string, home string, proxy bool) []string {
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
		set("PATH", nsexec.DefaultPath)
	}
	for _, kv := range caller {
		if k, v, ok := strings.Cut(kv, "="); ok && strings.HasPrefix(k, "WARD_") {
			set(k, v)
		}
	}
	// What ward sets itself, which a pattern never replaces.
	own := map[string]bool{}
	setOwn := func(k, v string) { set(k, v); own[k] = true }
	setOwn("HOME", home)
	setOwn("TMPDIR", "/tmp")
	setOwn("USER", SandboxUser)
	if proxy {
		for _, kv := range netns.ProxyEnv() {
			k, v, _ := strings.Cut(kv, "=")
			setOwn(k, v)
		}
	}
	for _, e := range extra {
		if k, v, ok := strings.Cut(e, "="); ok {
			set(k, v)
		} else if isEnvPattern(e) {
			for _, kv := range caller {
				if k, v, ok := strings.Cut(kv, "="); ok && k != "" && !own[k] && envMatch(e, k) {
					set(k, v)
				}
			}
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
