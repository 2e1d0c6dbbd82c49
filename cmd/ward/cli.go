package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
	"golang.org/x/term"

	"github.com/wardbox/ward"
	"github.com/wardbox/ward/cgroup"
	"github.com/wardbox/ward/nsexec"
)

func newRootCmd() *cobra.Command {
	root := &cobra.Command{
		Use:           "ward",
		Short:         "Run untrusted programs in a Linux sandbox",
		SilenceErrors: true,
		SilenceUsage:  true,
	}
	root.AddCommand(newRunCmd(), newVersionCmd(), newCleanCmd(), newVerifyCmd(), newProfilesCmd(),
		newStartCmd(), newSuperviseCmd(), newExecCmd(), newPsCmd(), newStopCmd())
	for _, c := range extraCommands {
		root.AddCommand(c())
	}
	return root
}

// extraCommands are commands built in only with a build tag (man.go).
var extraCommands []func() *cobra.Command

// runFlags are the raw flag values of `ward run`, validated into a
// ward.Config by toConfig before anything starts.
type runFlags struct {
	timeLimit       string
	cpuTimeLimit    string
	memoryLimit     string
	cpuLimit        int
	processes       int
	maxFileSize     string
	meta            string
	seccomp         string
	allowRead       []string
	allowWrite      []string
	mounts          []string
	virtualFS       bool
	denyPatterns    []string
	allowSockets    bool
	maxFiles        int
	tempDir         bool
	scratchSize     [3]string // --tmp-size, --home-size, --shm-size
	scratchFiles    [3]int    // --tmp-files, --home-files, --shm-files
	overlay         bool
	overlayKeep     string
	allowNetwork    []string
	denyNetwork     []string
	allowPorts      []int
	blockInternal   bool
	addHosts        []string
	logNetwork      bool
	netMaxBytes     string
	config          string
	profile         string
	explain         bool
	stdioJSON       bool
	fileDescriptors int
	limits          string
	allowNested     bool
	env             []string
	network         string
	workdir         string
	workspace       string
	report          string
	json            bool
	outputLimit     string
	sandboxLog      string
	tty             bool
	auditLog        string
}

func newRunCmd() *cobra.Command {
	var f runFlags
	var session bool
	cmd := &cobra.Command{
		Use:   "run [flags] [--] COMMAND [ARG...]",
		Short: "Run one program in a fresh sandbox",
		Example: `  # limits (exit 124 on time, 125 on memory)
  ward run --time-limit=5s --cpu-time-limit=2s --memory-limit=256M --processes=64 -- python3 app.py
  # files
  ward run --allow-read=./input --allow-write=./output -- ./solution
  ward run --virtual-fs --mount=/data:/sandbox/data:ro -- app
  ward run --overlay --overlay-keep=./changes -- sh -c 'pip install --user x'
  ward run --workspace=./project --env 'APCORE_*' -- make test
  # network
  ward run --allow-network=pypi.org --allow-network=files.pythonhosted.org --log-network -- pip download x
  # syscalls
  ward run --seccomp=strict -- ./compute
  # results and logs
  ward run --json --output-limit=64K -- sh -c 'ls /'
  ward run --report=result.json --meta=meta.txt --sandbox-log=verbose -- ./build.sh
  # config file and profiles
  ward run --config=simple.toml --profile=testing --explain -- ./tests
  # one JSON request per line on stdin, one result per line: a fresh sandbox each
  echo '{"args":["sh","-c","cat; echo $K"],"stdin":"hi ","env":{"K":"V"},"time_limit":"5s"}' | ward run --stdio-json
  # ... or one shared sandbox for all of them
  ward run --stdio-json --session < requests.jsonl`,
		RunE: func(cmd *cobra.Command, args []string) error {
			if session && !f.stdioJSON {
				return errors.New("--session: only with --stdio-json (every request then runs in one shared sandbox)")
			}
			if f.stdioJSON && len(args) == 0 {
				args = []string{"ward-session"} // the commands come on stdin
			}
			fromFlags, err := f.toConfig(args)
			if err != nil {
				return err
			}
			cfg, explain, err := layer(fromFlags, cmd.Flags(), f.config, f.profile)
			if err != nil {
				return err
			}
			if f.explain {
				printExplain(explain)
			}
			if f.stdioJSON {
				ctx := cmd.Context()
				if ctx == nil {
					ctx = context.Background()
				}
				if err := serveStdioJSON(ctx, cfg, session, os.Stdin, os.Stdout); err != nil {
					return &exitError{code: ward.ExitSetup, msg: err.Error()}
				}
				return nil
			}
			return runSandbox(cmd.Context(), cfg, f)
		},
	}
	// Everything after COMMAND belongs to COMMAND.
	cmd.Flags().SetInterspersed(false)
	bindRunFlags(cmd.Flags(), &f)
	cmd.Flags().BoolVar(&session, "session", false, "with --stdio-json: run every request in one shared sandbox that lives until EOF (files and processes of one request stay for the next)")
	return cmd
}

// bindRunFlags declares the flags of `ward run` (DESIGN.md section 1; each
// later issue adds its own here) on fl, storing into f.
func bindRunFlags(fl *pflag.FlagSet, f *runFlags) {
	fl.StringVar(&f.config, "config", "", "TOML config FILE (default ./ward.toml, else /etc/ward/ward.toml, if present)")
	fl.StringVar(&f.profile, "profile", "default", "profile: default, strict, testing, development, or one of the config file's")
	fl.StringVar(&f.profile, "sandbox", "default", "alias of --profile: bare --sandbox is the default profile, --sandbox=NAME picks one (simple run passes it through)")
	// A bare --sandbox never takes the next argument as its value.
	fl.Lookup("sandbox").NoOptDefVal = "default"
	fl.BoolVar(&f.stdioJSON, "stdio-json", false, "read one JSON request per line on stdin ({\"args\":[...],\"stdin\":\"...\",\"env\":{},\"time_limit\":\"5s\",\"dir\":\"/tmp\",\"workspace\":\"DIR\"}), run each in a fresh sandbox (ended with its program, whatever it left running), write one result per line in request order")
	fl.BoolVar(&f.explain, "explain", false, "print where each effective setting came from (default, file, profile or flag)")
	fl.StringVar(&f.timeLimit, "time-limit", "", "wall-clock limit (100ms, 5s, 2m); exit 124 when exceeded")
	fl.StringVar(&f.cpuTimeLimit, "cpu-time-limit", "", "CPU time of the whole sandbox, all processes (1s, 500ms); exit 124 when exceeded")
	fl.StringVar(&f.memoryLimit, "memory-limit", "", "memory of the whole sandbox, swap included (64M, 1G); exit 125 when exceeded")
	fl.IntVar(&f.cpuLimit, "cpu-limit", 0, "share of one CPU in percent (50 = half a core, 200 = two)")
	fl.IntVar(&f.processes, "processes", ward.DefaultProcesses, "most tasks (processes and threads) of the program alive at once")
	fl.BoolVar(&f.allowNested, "allow-nested", false, "let the program make a sandbox of its own (ward, bubblewrap): new user, mount and PID namespaces allowed, /proc unmasked, no Landlock; every other rule stays")
	fl.StringVar(&f.limits, "limits", ward.LimitsStrict, "without a cgroup (unprivileged, no delegated cgroup v2 subtree): strict refuses --memory-limit, --cpu-limit and --cpu-time-limit; best-effort holds memory and CPU time per process (rlimits) and says so in the result")
	fl.StringVar(&f.maxFileSize, "max-file-size", "", "largest file the program may write (10M); a larger write fails with EFBIG")
	fl.StringVar(&f.meta, "meta", "", "write isolate's meta file (time:, max-rss:, status:, ...) to FILE")
	fl.StringVar(&f.seccomp, "seccomp", ward.SeccompDefault, "syscall policy: default, strict, unconfined (unsafe), or an OCI/Docker JSON profile FILE")
	fl.IntVar(&f.fileDescriptors, "file-descriptors", 0, "most open files (RLIMIT_NOFILE, soft and hard); unset: soft 1024, hard 524288 (or ward's own hard limit if lower), which the program may raise its soft limit to")
	fl.StringArrayVar(&f.allowRead, "allow-read", nil, "bind PATH read-only (and noexec) at the same path inside (repeatable)")
	fl.StringArrayVar(&f.allowWrite, "allow-write", nil, "bind PATH read-write at the same path inside; what the program creates there is the caller's (repeatable)")
	fl.StringArrayVar(&f.mounts, "mount", nil, "bind SRC at DST inside: SRC:DST[:ro|rw], ro by default (repeatable)")
	fl.BoolVar(&f.virtualFS, "virtual-fs", false, "show only the system dirs, the scratch space and the --mount targets (not --allow-* paths)")
	fl.StringArrayVar(&f.denyPatterns, "deny-pattern", nil, "hide what this glob on paths inside matches, e.g. '/etc/*' (repeatable)")
	fl.BoolVar(&f.allowSockets, "allow-sockets", false, "let unix sockets inside allowed paths be seen (each is a way out)")
	fl.BoolVar(&f.overlay, "overlay", false, "make the whole system view writable; the writes (512M at most) vanish at exit")
	fl.StringVar(&f.overlayKeep, "overlay-keep", "", "with --overlay, copy what the program changed into this empty DIR at the end")
	fl.IntVar(&f.maxFiles, "max-files", 0, "most files in each writable scratch dir (/tmp, home, /dev/shm)")
	fl.BoolVar(&f.tempDir, "temp-dir", false, "the program's isolated temp dir, named by TMPDIR (/tmp, fresh each run; every sandbox has one: accepted as Simple writes it)")
	for i, d := range scratchFlagDirs {
		fl.StringVar(&f.scratchSize[i], d.name+"-size", "", fmt.Sprintf("bytes of the %s tmpfs (default %s; charged to the sandbox's memory)", d.path, ward.FormatSize(d.def)))
		fl.IntVar(&f.scratchFiles[i], d.name+"-files", 0, fmt.Sprintf("most files in %s (default --max-files, else %d)", d.path, ward.DefaultScratchInodes))
	}
	fl.StringArrayVar(&f.env, "env", nil, "set K=V, pass the caller's K, or pass each caller variable whose name matches a pattern such as 'APCORE_*' (*, ?, [...]) (repeatable)")
	fl.StringVar(&f.workspace, "workspace", "", "bind `DIR` at /workspace, read-write (DIR:rw, the default) or read-only (DIR:ro), as the working directory unless --workdir; what the program creates there is the caller's")
	fl.StringVar(&f.network, "network", ward.NetworkNone, "network mode: none, proxy (the allow list) or host (no network isolation)")
	fl.StringArrayVar(&f.allowNetwork, "allow-network", nil, "let the program reach DOMAIN, a pattern (*.github.com) or URL pattern through ward's proxy (repeatable; implies --network=proxy)")
	fl.StringArrayVar(&f.denyNetwork, "deny-network", nil, "refuse names matching this pattern even if allowed (repeatable)")
	fl.IntSliceVar(&f.allowPorts, "allow-port", nil, "the only ports the proxy connects to (repeatable; default any)")
	fl.BoolVar(&f.blockInternal, "block-internal", true, "refuse names that resolve to loopback, private, link-local or metadata addresses")
	fl.StringArrayVar(&f.addHosts, "add-host", nil, "a static answer NAME:IP for the proxy and /etc/hosts (repeatable)")
	fl.StringVar(&f.netMaxBytes, "network-max-bytes", "", "most bytes the proxy carries for the sandbox, both ways (default 1G)")
	fl.BoolVar(&f.logNetwork, "log-network", false, "print one line per network attempt, allowed or blocked")
	fl.StringVar(&f.workdir, "workdir", "", "working directory inside, absolute (default /workspace with --workspace, else "+ward.DefaultWorkdir+")")
	fl.StringVar(&f.report, "report", "", "write the result as JSON to FILE")
	fl.BoolVar(&f.json, "json", false, "capture stdout/stderr and print the result JSON on stdout")
	fl.StringVar(&f.outputLimit, "output-limit", "1M", "most bytes kept of each captured stream")
	fl.StringVar(&f.sandboxLog, "sandbox-log", ward.LogNormal, "what ward prints on stderr: quiet, normal or verbose")
	fl.BoolVar(&f.tty, "tty", false, "let the program use the caller's terminal (only when stdin is a tty)")
	fl.StringVar(&f.auditLog, "audit-log", "", "append one JSON line per execution to FILE (created 0600; never the program's output or environment; docs/audit.md); if it cannot be opened nothing runs (exit 71)")
}

// scratchFlagDirs are the scratch tmpfs mounts whose size and file count
// have flags, in ward.Layer.Scratch's order.
var scratchFlagDirs = [3]struct {
	name, path string
	def        int64
	dst        func(*ward.Config) *ward.Scratch
}{
	{"tmp", "/tmp", ward.DefaultTmpSize, func(c *ward.Config) *ward.Scratch { return &c.Tmp }},
	{"home", "/home/sandbox", ward.DefaultHomeSize, func(c *ward.Config) *ward.Scratch { return &c.Home }},
	{"shm", "/dev/shm", ward.DefaultShmSize, func(c *ward.Config) *ward.Scratch { return &c.Shm }},
}

// toConfig validates every flag value; an error names the flag and value.
func (f *runFlags) toConfig(args []string) (ward.Config, error) {
	cfg := ward.Config{
		Args:            args,
		Env:             f.env,
		Network:         f.network,
		Workdir:         f.workdir,
		FileDescriptors: f.fileDescriptors,
		Log:             f.sandboxLog,
		Seccomp:         f.seccomp,
		Limits:          f.limits,
		AllowNested:     f.allowNested,
		AllowRead:       f.allowRead,
		AllowWrite:      f.allowWrite,
		VirtualFS:       f.virtualFS,
		DenyPatterns:    f.denyPatterns,
		AllowSockets:    f.allowSockets,
		MaxFiles:        f.maxFiles,
		Overlay:         f.overlay,
		OverlayKeep:     f.overlayKeep,
		AllowNetwork:    f.allowNetwork,
		DenyNetwork:     f.denyNetwork,
		AllowPorts:      f.allowPorts,
		AllowInternal:   !f.blockInternal,
		AddHosts:        f.addHosts,
		LogNetwork:      f.logNetwork,
		Capture:         f.json,
		ForwardSignals:  true,
		Stdin:           os.Stdin,
		Stdout:          os.Stdout,
		Stderr:          os.Stderr,
		LogWriter:       os.Stderr,
		TTY:             f.tty && term.IsTerminal(int(os.Stdin.Fd())),
		AuditLog:        f.auditLog,
	}
	if f.timeLimit != "" {
		d, err := ward.ParseDuration(f.timeLimit)
		if err != nil {
			return cfg, fmt.Errorf("--time-limit=%s: %w", f.timeLimit, err)
		}
		cfg.TimeLimit = d
	}
	if f.cpuTimeLimit != "" {
		d, err := ward.ParseDuration(f.cpuTimeLimit)
		if err != nil {
			return cfg, fmt.Errorf("--cpu-time-limit=%s: %w", f.cpuTimeLimit, err)
		}
		cfg.CPUTimeLimit = d
	}
	for _, sz := range []struct {
		flag, val string
		dst       *int64
	}{{"memory-limit", f.memoryLimit, &cfg.MemoryLimit}, {"max-file-size", f.maxFileSize, &cfg.MaxFileSize}} {
		if sz.val == "" {
			continue
		}
		n, err := ward.ParseSize(sz.val)
		if err != nil {
			return cfg, fmt.Errorf("--%s=%s: %w", sz.flag, sz.val, err)
		}
		if n == 0 {
			return cfg, fmt.Errorf("--%s=%s: must be more than 0", sz.flag, sz.val)
		}
		*sz.dst = n
	}
	if f.workspace != "" {
		dir, access, err := ward.ParseWorkspace(f.workspace)
		if err != nil {
			return cfg, fmt.Errorf("--workspace=%s: %w", f.workspace, err)
		}
		cfg.Workspace, cfg.WorkspaceAccess = dir, access
	}
	for _, m := range f.mounts {
		mnt, err := ward.ParseMount(m)
		if err != nil {
			return cfg, fmt.Errorf("--mount=%s: %w", m, err)
		}
		cfg.Mounts = append(cfg.Mounts, mnt)
	}
	if f.netMaxBytes != "" {
		n, err := ward.ParseSize(f.netMaxBytes)
		if err != nil || n == 0 {
			return cfg, fmt.Errorf("--network-max-bytes=%s: want a size such as 100M", f.netMaxBytes)
		}
		cfg.NetworkMaxBytes = n
	}
	for i, d := range scratchFlagDirs {
		if v := f.scratchSize[i]; v != "" {
			n, err := ward.ParseSize(v)
			if err != nil {
				return cfg, fmt.Errorf("--%s-size=%s: %w", d.name, v, err)
			}
			d.dst(&cfg).Size = n
		}
		d.dst(&cfg).Files = f.scratchFiles[i]
	}
	if f.maxFiles < 0 {
		return cfg, fmt.Errorf("--max-files=%d: want a positive number", f.maxFiles)
	}
	cfg.CPULimit = f.cpuLimit
	cfg.Processes = f.processes
	if f.processes == 0 {
		return cfg, fmt.Errorf("--processes=0: want at least 1")
	}
	if f.cpuLimit < 0 {
		return cfg, fmt.Errorf("--cpu-limit=%d: want a positive percentage", f.cpuLimit)
	}
	n, err := ward.ParseSize(f.outputLimit)
	if err != nil {
		return cfg, fmt.Errorf("--output-limit=%s: %w", f.outputLimit, err)
	}
	cfg.OutputLimit = n
	if f.json {
		// The result JSON owns stdout; the program's streams are captured.
		cfg.Stdout, cfg.Stderr = nil, nil
	}
	if len(args) == 0 {
		return cfg, errors.New("run: no command given (usage: ward run [flags] -- COMMAND [ARG...])")
	}
	if err := cfg.Validate(); err != nil {
		return cfg, err
	}
	return cfg, nil
}

// runSandbox runs cfg, writes the report, prints what the user asked for
// and returns ward's exit status as an *exitError.
func runSandbox(ctx context.Context, cfg ward.Config, f runFlags) error {
	if ctx == nil {
		ctx = context.Background()
	}
	// Open the report file before starting, so a bad path is bad input
	// (exit 2), not a lost result after the run.
	var report, meta *os.File
	for _, o := range []struct {
		flag, path string
		f          **os.File
	}{{"report", f.report, &report}, {"meta", f.meta, &meta}} {
		if o.path == "" {
			continue
		}
		file, err := os.Create(o.path)
		if err != nil {
			return fmt.Errorf("--%s=%s: %w", o.flag, o.path, err)
		}
		defer file.Close()
		*o.f = file
	}
	res, err := ward.Run(ctx, cfg)
	var ce *ward.ConfigError
	if errors.As(err, &ce) {
		return err
	}
	if res == nil {
		return err
	}
	var se *nsexec.SetupError
	var ae *ward.AuditError
	errors.As(err, &ae)
	if errors.As(err, &se) {
		fmt.Fprintf(os.Stderr, "ward: %v\n", se)
	} else if res.Error != nil && (res.WardExitCode == ward.ExitNotFound || res.WardExitCode == ward.ExitNotExecutable) {
		fmt.Fprintf(os.Stderr, "ward: %s\n", *res.Error)
	}
	out, merr := json.MarshalIndent(res, "", "  ")
	if merr != nil {
		return fmt.Errorf("result: %w", merr)
	}
	out = append(out, '\n')
	if report != nil {
		if _, werr := report.Write(out); werr != nil {
			fmt.Fprintf(os.Stderr, "ward: --report=%s: %v\n", f.report, werr)
		}
	}
	if meta != nil {
		if _, werr := meta.WriteString(res.IsolateMeta()); werr != nil {
			fmt.Fprintf(os.Stderr, "ward: --meta=%s: %v\n", f.meta, werr)
		}
	}
	if f.json {
		_, _ = os.Stdout.Write(out)
	}
	if ae != nil {
		// The run is not on record: ward's failure, whatever the program did.
		return &exitError{code: ward.ExitSetup, msg: ae.Error()}
	}
	return &exitError{code: res.WardExitCode}
}

func newCleanCmd() *cobra.Command {
	return &cobra.Command{
		Use:   "clean",
		Short: "Remove what sandboxes of a ward that died left behind (cgroups, /run/ward state)",
		Long: `Remove the cgroups of sandboxes whose ward was killed (SIGKILL, a crash):
every ward-<pid>-* cgroup under this process's own cgroups whose ward is gone
(no such pid, a zombie not yet reaped, or a pid reused by something else), and
the state of long-lived sandboxes whose supervisor is gone.
Each ward run also removes such cgroups before it starts.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			states := stateDir.Clean()
			removedState := len(states) > 0
			for _, p := range states {
				fmt.Fprintf(cmd.OutOrStdout(), "removed state %s\n", p)
			}
			removed, err := cgroup.Clean()
			for _, p := range removed {
				fmt.Fprintf(cmd.OutOrStdout(), "removed cgroup %s\n", p)
			}
			if err != nil {
				fmt.Fprintf(os.Stderr, "ward: clean: %v\n", err)
				return &exitError{code: ward.ExitSetup}
			}
			if len(removed) == 0 && !removedState {
				fmt.Fprintln(cmd.OutOrStdout(), "nothing to remove")
			}
			return nil
		},
	}
}
