package ward

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"time"

	"github.com/wardbox/ward/cgroup"
	"github.com/wardbox/ward/nsexec"
	"github.com/wardbox/ward/seccomp"
)

// building is ward's side of the fork while it builds a sandbox: what each
// host step reads and leaves for the next.
type building struct {
	cfg     Config
	session bool
	l       *launched
	res     *Result
	spec    *nsexec.Spec
	mounts  []hostMount
	stdio   nsexec.Stdio
	// files are the init's inherited fds past its protocol socket, in
	// order; each number is handed out where the file is added.
	files nsexec.Files
	// parentCopies are this side's copies of files the init inherits:
	// closed once the init has its own, or when setup fails.
	parentCopies []*os.File
	opened       *openedMounts
	// overlayKeep is the caller's --overlay-keep directory: ward copies
	// the overlays' changes into it once the sandbox is gone.
	overlayKeep *os.File
}

// hostSteps are ward's steps before the init starts, in order. Each name
// is its `setup_ms` key (side "parent") and, unless the step says
// otherwise, the step of its `ward: <step>: <cause>` message. A step
// registers the undo of what it made on b.l.undo as soon as it made it.
var hostSteps = []struct {
	name string
	run  func(b *building) error
}{
	{"plan-root", (*building).planRoot},
	{"load-seccomp", (*building).loadSeccomp},
	{"create-cgroup", (*building).createCgroup},
	{"open-cgroup", (*building).openCgroup},
	{"open-user-paths", (*building).openUserPaths},
	{"start-proxy", (*building).startProxy},
}

// launch builds the sandbox (a program's, or with session a long-lived
// one) up to the program's start, from a cfg Run or Start validated. On
// error everything made is released; the Result says setup_error where
// there is one. An *nsexec.ExecError comes back with the launched sandbox,
// for Run to report.
func launch(ctx context.Context, cfg Config, session bool) (l *launched, res *Result, err error) {
	cfg = cfg.withDefaults()
	cfg.Seccomp = seccompFile(cfg.Seccomp, cfg.Cwd)
	if cfg.OverlayKeep != "" {
		cfg.Overlay = true
		dir, err := checkKeepDir(cfg.OverlayKeep, cfg.Cwd)
		if err != nil {
			return nil, nil, err
		}
		cfg.OverlayKeep = dir
	}
	t0 := time.Now()
	b := &building{cfg: cfg, session: session, opened: &openedMounts{}}
	if b.mounts, err = resolveMounts(cfg); err != nil {
		return nil, nil, err // bad input: nothing made yet
	}
	if err := checkKeepOverlap(cfg.OverlayKeep, b.mounts); err != nil {
		return nil, nil, err
	}
	steps := []nsexec.StepTime{{Step: "resolve-paths", Us: time.Since(t0).Microseconds(), Side: "parent"}}
	b.res = newResult(cfg)
	b.l = &launched{cfg: cfg, res: b.res}
	defer func() {
		closeAll(b.parentCopies)
		var execErr *nsexec.ExecError
		if err != nil && !errors.As(err, &execErr) {
			b.l.close()
			l = nil
		}
	}()
	for _, st := range hostSteps {
		t := time.Now()
		if err := st.run(b); err != nil {
			var ce *ConfigError
			if errors.As(err, &ce) {
				return b.l, nil, err
			}
			var se *nsexec.SetupError
			if !errors.As(err, &se) {
				se = &nsexec.SetupError{Step: st.name, Errno: errnoOf(err), Msg: err.Error()}
			}
			return b.l, nil, failSetupErr(b.res, se)
		}
		if st.name != "start-proxy" || cfg.Network == NetworkProxy {
			steps = append(steps, nsexec.StepTime{Step: st.name, Us: time.Since(t).Microseconds(), Side: "parent"})
		}
	}
	return b.startInit(ctx, t0, steps)
}

// planRoot turns the config into the init's spec, and sets up ward's own
// end: the log, signal relaying and output capture.
func (b *building) planRoot() error {
	cfg := b.cfg
	spec, err := buildSpec(cfg)
	if err != nil {
		return err
	}
	b.spec, b.l.spec = spec, spec
	log := newLogger(cfg)
	b.l.log = log
	log.before(cfg)
	for _, m := range b.mounts {
		mode := "read-only"
		if m.rw {
			mode = "read-write"
		}
		from := ""
		if !strings.HasPrefix(m.value, m.src) {
			from = fmt.Sprintf(" (resolved on the host from %s)", m.value)
		}
		log.v("Mount: %s at %s, %s%s", m.src, m.dst, mode, from)
	}
	if cfg.TTY {
		// The program shares the terminal: it may take its foreground and
		// set TOSTOP, and ward's next line on it would then stop ward (and
		// with it the time limit). ward never reads the terminal.
		signal.Ignore(syscall.SIGTTOU, syscall.SIGTTIN)
	}
	if cfg.ForwardSignals {
		sigs := make(chan os.Signal, 8)
		signal.Notify(sigs, syscall.SIGINT, syscall.SIGTERM, syscall.SIGHUP, syscall.SIGQUIT, syscall.SIGUSR1, syscall.SIGUSR2)
		b.l.undo = append(b.l.undo, func() { signal.Stop(sigs) })
		b.l.sigs = sigs
	}
	b.stdio = nsexec.Stdio{Stdin: cfg.Stdin, Stdout: cfg.Stdout, Stderr: cfg.Stderr}
	if cfg.Capture {
		b.l.stdout = &capture{limit: cfg.OutputLimit, tee: cfg.Stdout}
		b.l.stderr = &capture{limit: cfg.OutputLimit, tee: cfg.Stderr}
		b.stdio.Stdout, b.stdio.Stderr = b.l.stdout, b.l.stderr
	}
	return nil
}

// loadSeccomp compiles the policy into the programs the program's process
// loads last. A profile file that does not parse or compile is bad input.
func (b *building) loadSeccomp() error {
	cfg, spec := b.cfg, b.spec
	policy := policyName(cfg)
	if cfg.Log == LogVerbose && seccomp.Builtin(policy) != nil {
		// Verbose: a listener decides the denials and counts them.
		prog, err := seccomp.CompileNotify(seccomp.Builtin(policy))
		if err != nil {
			return &nsexec.SetupError{Step: "compile-seccomp", Msg: err.Error()}
		}
		spec.Seccomp, spec.SeccompNotify = []seccomp.Program{prog}, policy
		return nil
	}
	var err error
	if spec.Seccomp, err = seccompPrograms(policy); err != nil {
		if cfg.Seccomp == SeccompDefault || cfg.Seccomp == SeccompStrict {
			return &nsexec.SetupError{Step: "compile-seccomp", Msg: err.Error()}
		}
		return &ConfigError{Key: "seccomp", Value: cfg.Seccomp, Reason: err.Error()}
	}
	return nil
}

// createCgroup makes the sandbox's cgroup before any process of the
// sandbox exists; the program's process joins it before it runs any of
// its code. An unprivileged caller without a delegated cgroup asks its
// systemd user manager for a delegated scope; without one it gets none:
// what a cgroup alone can hold is refused, or held per process.
func (b *building) createCgroup() error {
	cfg := b.cfg
	cgRes := cgroup.Resources{MemoryBytes: cfg.MemoryLimit, CPUPercent: cfg.CPULimit, Pids: cfg.Processes}
	cg, err := cgroup.New(cgRes)
	if err != nil && os.Geteuid() != 0 {
		// A systemd user manager may give ward a scope that is delegated.
		if cg, err = cgroup.NewInUserScope(cgRes, err); err != nil {
			if err = withoutCgroup(cfg, b.spec, b.res, err); err == nil {
				cg = cgroup.None()
			}
		}
	}
	if err != nil {
		return err
	}
	b.l.cg = cg
	b.l.undo = append(b.l.undo, func() {
		_ = cg.Kill()
		if err := cg.Destroy(); err != nil && cfg.LogWriter != nil {
			fmt.Fprintf(cfg.LogWriter, "ward: remove cgroup: %v (ward clean removes it later)\n", err)
		}
	})
	return nil
}

// openCgroup opens the cgroup's cgroup.procs files for the program's
// process to write itself into: they are the init's first inherited fds.
func (b *building) openCgroup() error {
	procs, err := b.l.cg.OpenProcs()
	if err != nil {
		return err
	}
	for _, f := range procs {
		b.files.Add(f)
	}
	b.parentCopies = append(b.parentCopies, procs...)
	b.spec.CgroupFDs = len(procs)
	return nil
}

// openUserPaths clones the caller's paths, the overlays' lower layers and
// the --overlay-keep directory on the host, for the init to attach by fd.
func (b *building) openUserPaths() error {
	cfg, spec, opened := b.cfg, b.spec, b.opened
	// The give-back is registered before anything is lent: whichever step
	// fails from here on, a lent directory goes back to its owner.
	giveBack := func() {
		if err := opened.giveBack(); err != nil && cfg.LogWriter != nil {
			fmt.Fprintf(cfg.LogWriter, "ward: %v\n", err)
		}
	}
	b.l.undo = append(b.l.undo, giveBack)
	b.l.giveBacks = append(b.l.giveBacks, giveBack)
	if err := opened.open(b.mounts, cfg.AllowSockets, b.files.Next()); err != nil {
		return err
	}
	for _, f := range opened.files {
		b.files.Add(f)
	}
	b.parentCopies = append(b.parentCopies, opened.files...)
	opened.files = nil
	spec.UserMounts, spec.DenyPatterns = opened.mounts, cfg.DenyPatterns
	lowers, notes, err := openOverlayLowers(spec.Plan, b.files.Next())
	if err != nil {
		return &nsexec.SetupError{Step: "open-overlay", Errno: errnoOf(err), Msg: err.Error()}
	}
	b.l.undo = append(b.l.undo, func() { closeAll(lowers) })
	for _, f := range lowers {
		b.files.Add(f)
	}
	for _, n := range notes {
		b.l.log.v("Overlay: %s", n)
	}
	if cfg.OverlayKeep != "" {
		keep, err := openOverlayKeep(cfg.OverlayKeep)
		if err != nil {
			return &nsexec.SetupError{Step: "open-overlay-keep", Errno: errnoOf(err), Msg: err.Error()}
		}
		b.l.undo = append(b.l.undo, func() { keep.Close() })
		b.overlayKeep, spec.OverlayKeep = keep, true
	}
	return nil
}

// startProxy starts the egress proxy of --network=proxy; the init's end of
// its socket is its last inherited fd.
func (b *building) startProxy() error {
	if b.cfg.Network != NetworkProxy {
		return nil
	}
	proxy, ours, theirs, err := startProxy(b.cfg, b.l.log)
	if err != nil {
		return err
	}
	b.l.undo = append(b.l.undo, func() { ours.Close(); theirs.Close() })
	b.l.proxy = proxy
	b.spec.ProxyFD = b.files.Add(theirs)
	// Closed once the init has it: its EOF then means the init is gone.
	b.parentCopies = append(b.parentCopies, theirs)
	return nil
}

// startInit starts the init (its own steps and the program's process's
// are timed by nsexec) and waits until the program runs.
func (b *building) startInit(ctx context.Context, t0 time.Time, steps []nsexec.StepTime) (*launched, *Result, error) {
	cfg, spec, res, l := b.cfg, b.spec, b.res, b.l
	sb, err := nsexec.Start(spec, b.stdio, nsexec.Options{
		HostNetwork: cfg.Network == NetworkHost, TTY: cfg.TTY, Files: b.files.List(), Session: b.session,
		OverlayKeep: b.overlayKeep, OverlayKeepLimit: overlaySize(cfg),
	})
	closeAll(b.parentCopies) // the init has its own copies
	b.parentCopies = nil
	if err != nil {
		return l, nil, failSetupErr(res, err)
	}
	l.sb = sb
	l.undo = append(l.undo, func() { sb.Kill(); _, _ = sb.Wait() })
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
	res.setupSteps = append(steps, sb.Steps...)
	for _, st := range res.setupSteps {
		res.SetupMs[st.Step] = float64(st.Us) / 1000
	}
	res.Layers = layers(spec, sb)
	switch {
	case err != nil:
	case sb.LandlockNote != "":
		l.log.v("Layers: %s (no Landlock: %s)", strings.Join(res.Layers, ", "), sb.LandlockNote)
	default:
		l.log.v("Layers: %s", strings.Join(res.Layers, ", "))
	}
	var execErr *nsexec.ExecError
	switch {
	case errors.As(err, &execErr):
		return l, res, err
	case err != nil:
		sb.Kill()
		_, _ = sb.Wait()
		var se *nsexec.SetupError
		if errors.As(err, &se) && se.Step == "enter-workdir" && (se.Errno == syscall.ENOENT || se.Errno == syscall.ENOTDIR) {
			return l, nil, &ConfigError{Key: "workdir", Value: cfg.Workdir, Reason: "does not exist inside the sandbox (add it with --mount, --allow-write or --workspace, or use /tmp or /home/sandbox)"}
		}
		return l, nil, setupFailed(res, err)
	}
	return l, res, nil
}
