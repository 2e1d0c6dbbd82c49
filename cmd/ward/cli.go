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

// commands are ward's commands, by the name that calls each, in the
// order --help lists them.
var commands = []struct {
	name string
	make func() *cobra.Command
}{
	{"run", newRunCmd}, {"version", newVersionCmd}, {"clean", newCleanCmd}, {"verify", newVerifyCmd},
	{"profiles", newProfilesCmd}, {"start", newStartCmd}, {"supervise", newSuperviseCmd},
	{"exec", newExecCmd}, {"ps", newPsCmd}, {"stop", newStopCmd},
}

// newRootCmd is the whole command tree.
func newRootCmd() *cobra.Command { return newRootCmdFor(nil) }

// newRootCmdFor is the command tree that args need. When args[0] names
// one of ward's commands, the root holds that command alone: every start
// of ward would otherwise build every command's flags (the settings
// table's twice, for run and start) and cobra's completion command, to use
// one. Anything else (no command, a flag first, help, completion, an
// unknown name cobra may suggest a command for) gets the whole tree, so
// that help, completion and errors are cobra's as before.
func newRootCmdFor(args []string) *cobra.Command {
	root := &cobra.Command{
		Use:           "ward",
		Short:         "Run untrusted programs in a Linux sandbox",
		SilenceErrors: true,
		SilenceUsage:  true,
	}
	root.SetFlagErrorFunc(flagError)
	if len(args) > 0 {
		for _, c := range commands {
			if c.name == args[0] {
				root.AddCommand(c.make())
				// Only the root's own help lists the completion command.
				root.CompletionOptions.DisableDefaultCmd = true
				return root
			}
		}
	}
	for _, c := range commands {
		root.AddCommand(c.make())
	}
	for _, c := range extraCommands {
		root.AddCommand(c())
	}
	return root
}

// extraCommands are commands built in only with a build tag (man.go).
var extraCommands []func() *cobra.Command

// runFlags are `ward run`'s flags: the settings given, a layer over the
// config file's and the profile's (the settings table, ward.Settings), and
// the command's own.
type runFlags struct {
	settings  ward.Layer
	meta      string
	config    string
	profile   string
	explain   bool
	stdioJSON bool
	tempDir   bool
	report    string
	json      bool
	// sources says where each setting came from, once toConfig merged
	// them (--explain).
	sources map[string]string
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
			if !f.stdioJSON && len(args) == 0 {
				return errors.New("run: no command given (usage: ward run [flags] -- COMMAND [ARG...])")
			}
			cfg, err := f.toConfig(args) // --stdio-json's commands come on stdin
			if err != nil {
				return err
			}
			if f.explain {
				printExplain(f.sources)
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

// bindRunFlags declares the flags of `ward run` on fl, storing into f:
// the command's own, and one per setting of the table.
func bindRunFlags(fl *pflag.FlagSet, f *runFlags) {
	fl.StringVar(&f.config, "config", "", "TOML config FILE (default /etc/ward/ward.toml, if present; a ./ward.toml only when named here)")
	fl.StringVar(&f.profile, "profile", "default", "profile: default, strict, testing, development, or one of the config file's")
	fl.StringVar(&f.profile, "sandbox", "default", "alias of --profile: bare --sandbox is the default profile, --sandbox=NAME picks one (simple run passes it through)")
	// A bare --sandbox never takes the next argument as its value.
	fl.Lookup("sandbox").NoOptDefVal = "default"
	fl.BoolVar(&f.stdioJSON, "stdio-json", false, "read one JSON request per line on stdin ({\"args\":[...],\"stdin\":\"...\",\"env\":{},\"time_limit\":\"5s\",\"dir\":\"/tmp\",\"workspace\":\"DIR\"}), run each in a fresh sandbox (ended with its program, whatever it left running), write one result per line in request order")
	fl.BoolVar(&f.explain, "explain", false, "print where each effective setting came from (default, file, profile or flag)")
	fl.StringVar(&f.meta, "meta", "", "write isolate's meta file (time:, max-rss:, status:, ...) to FILE")
	fl.BoolVar(&f.tempDir, "temp-dir", false, "the program's isolated temp dir, named by TMPDIR (/tmp, fresh each run; every sandbox has one: accepted as Simple writes it)")
	fl.StringVar(&f.report, "report", "", "write the result as JSON to FILE")
	fl.BoolVar(&f.json, "json", false, "capture stdout/stderr and print the result JSON on stdout")
	f.settings.Source = ward.SourceFlags
	for _, s := range ward.Settings() {
		if s.Flag == "" {
			continue
		}
		fl.Var(&settingFlag{l: &f.settings, s: s}, s.Flag, s.Help)
		flag := fl.Lookup(s.Flag)
		flag.DefValue = s.Default // what --help shows
		if s.FlagType == "bool" {
			flag.NoOptDefVal = "true"
		}
	}
}

// settingFlag is a setting's flag: its value goes into the flags' layer.
type settingFlag struct {
	l    *ward.Layer
	s    ward.Setting
	last string // the value given last
}

func (f *settingFlag) String() string {
	if f.last == "" {
		return f.s.Default
	}
	return f.last
}

func (f *settingFlag) Set(v string) error {
	if err := f.l.SetFlag(f.s.Flag, v); err != nil {
		return err
	}
	f.last = v
	return nil
}

func (f *settingFlag) Type() string { return f.s.FlagType }

// flagError shows a bad setting value as the setting's rule says it
// ("--cpu-limit=0: want ..."), not in pflag's words around it.
func flagError(_ *cobra.Command, err error) error {
	var ce *ward.ConfigError
	if errors.As(err, &ce) {
		return ce
	}
	return err
}

// toConfig is the config the command line asks for: the built-in default <
// the config file's [sandbox] < the profile < the flags given, validated
// once here, with the program (none for --stdio-json and ward start) and
// this terminal's streams. f.sources says where each setting came from.
func (f *runFlags) toConfig(args []string) (ward.Config, error) {
	base := ward.Config{
		Args:           args,
		Capture:        f.json,
		ForwardSignals: true,
		Stdin:          os.Stdin,
		Stdout:         os.Stdout,
		Stderr:         os.Stderr,
		LogWriter:      os.Stderr,
	}
	if f.json {
		// The result JSON owns stdout; the program's streams are captured.
		base.Stdout, base.Stderr = nil, nil
	}
	cfg, sources, err := layer(base, f.settings, f.config, f.profile)
	if err != nil {
		return cfg, err
	}
	f.sources = sources
	cfg.TTY = cfg.TTY && term.IsTerminal(int(os.Stdin.Fd()))
	return cfg, nil
}

// runSandbox runs cfg, writes the report, prints what the user asked for
// and returns ward's exit status as an *exitError. The report, the meta
// file and --json's output are written as soon as the result is known,
// before the sandbox's cgroup is removed; ward exits once it is.
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
	var status error
	answered := false
	cfg.OnResult = func(res *ward.Result, err error) {
		answered = true
		status = deliver(res, err, report, meta, f)
	}
	res, err := ward.Run(ctx, cfg)
	if !answered {
		status = deliver(res, err, report, meta, f)
	}
	return status
}

// deliver prints and writes what a run's result asks for (the setup
// failure's message, the report and meta files, --json's output) and
// returns ward's exit status for it.
func deliver(res *ward.Result, err error, report, meta *os.File, f runFlags) error {
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
		// Closed now: a reader waiting for the file sees it whole at once.
		if cerr := report.Close(); cerr != nil {
			fmt.Fprintf(os.Stderr, "ward: --report=%s: %v\n", f.report, cerr)
		}
	}
	if meta != nil {
		if _, werr := meta.WriteString(res.IsolateMeta()); werr != nil {
			fmt.Fprintf(os.Stderr, "ward: --meta=%s: %v\n", f.meta, werr)
		}
		if cerr := meta.Close(); cerr != nil {
			fmt.Fprintf(os.Stderr, "ward: --meta=%s: %v\n", f.meta, cerr)
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
