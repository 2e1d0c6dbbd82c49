// Package ocicli is ward-oci's command line: runc's, over package oci, as
// containerd's runc shim (go-runc), conmon, CRI-O and the runtime-tools
// validation suite call it. The binary is ward's own, reached by the name
// ward-oci (cmd/ward/main.go dispatches on argv[0]).
package ocicli

import (
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"

	"github.com/spf13/cobra"

	"github.com/wardbox/ward/oci"
)

// Info names the build, for --version and features.
type Info struct {
	Version string
	Commit  string
}

// globals are runc's global flags.
type globals struct {
	root          string
	log           string
	logFormat     string
	debug         bool
	systemdCgroup bool
	rootless      string
	criu          string
}

// env is what every command runs with, set up from the global flags
// before it runs.
type env struct {
	info   Info
	g      globals
	rootOK bool // --root was given
	stdout io.Writer
	stderr io.Writer
	euid   int
	getenv func(string) string
	store  *oci.Store
	logger *oci.Logger
	// logToStderr: the log is stderr (no --log), so an error is written
	// once, as a log line, as runc does.
	logToStderr bool
	logFile     *os.File
	version     bool
}

// Main runs ward-oci with args (without argv[0]) and returns the exit
// status: 0, or 1 for any failure, as runc (callers tell failures apart by
// their messages, never by the status).
func Main(args []string, info Info, stdout, stderr io.Writer) int {
	e := &env{info: info, stdout: stdout, stderr: stderr, euid: os.Geteuid(), getenv: os.Getenv}
	return e.run(args)
}

func (e *env) run(args []string) int {
	root := e.command()
	root.SetArgs(args)
	err := root.Execute()
	if e.logFile != nil {
		defer e.logFile.Close()
	}
	if err == nil {
		return 0
	}
	if code, ok := ExitCode(err); ok {
		return code // run: the program's own status, not a failure of ward-oci's
	}
	e.fail(err)
	return 1
}

// fail reports err as runc does: to the log, and to stderr as well when
// the log is a file.
func (e *env) fail(err error) {
	if e.logger == nil {
		// Before the flags were read (a bad flag): stderr, as text.
		e.logger, _ = oci.NewLogger(e.stderr, "text", false)
		e.logToStderr = true
	}
	e.logger.Error(err.Error())
	if !e.logToStderr {
		fmt.Fprintln(e.stderr, err)
	}
}

func (e *env) command() *cobra.Command {
	root := &cobra.Command{
		Use:   "ward-oci",
		Short: "ward as an OCI runtime: runc's command line, ward's sandbox",
		Long: `ward-oci runs containers from OCI bundles (a directory with config.json and
a root file system) with runc's command line, so that containerd, CRI-O, podman
and Kubernetes can use ward as their low-level runtime. See docs/oci.md.`,
		SilenceErrors:     true,
		SilenceUsage:      true,
		CompletionOptions: cobra.CompletionOptions{DisableDefaultCmd: true},
		// The global flags are read before the command is looked up, so
		// that an unknown one is named as such.
		TraverseChildren: true,
		Args:             cobra.ArbitraryArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			if e.version {
				_, err := io.WriteString(e.stdout, e.versionText())
				return err
			}
			if len(args) > 0 {
				return fmt.Errorf("unknown command %q for \"ward-oci\"", args[0])
			}
			return cmd.Help()
		},
		PersistentPreRunE: func(cmd *cobra.Command, _ []string) error {
			e.rootOK = cmd.Flags().Changed("root")
			return e.setup()
		},
	}
	root.SetOut(e.stdout)
	root.SetErr(e.stderr)
	// --version is a flag of ward-oci's own, not cobra's: cobra's needs
	// text/template, which would make the whole binary larger (its use of
	// reflection keeps the linker from dropping unused methods).
	root.Flags().BoolVarP(&e.version, "version", "v", false, "print the version")
	fl := root.PersistentFlags()
	fl.StringVar(&e.g.root, "root", oci.DefaultRoot(e.euid, e.getenv), "root directory for storage of container state (this should be located in tmpfs)")
	fl.StringVar(&e.g.log, "log", "", "set the log file to write ward-oci logs to (default is '/dev/stderr')")
	fl.StringVar(&e.g.logFormat, "log-format", "text", "set the log format ('text' (default), or 'json')")
	fl.BoolVar(&e.g.debug, "debug", false, "enable debug logging")
	fl.BoolVar(&e.g.systemdCgroup, "systemd-cgroup", false, `enable systemd cgroup support, expects cgroupsPath to be of form "slice:prefix:name" for e.g. "system.slice:ward:434234"`)
	fl.StringVar(&e.g.rootless, "rootless", "auto", "ignore cgroup permission errors ('true', 'false', or 'auto')")
	// runc before 1.2 had --criu, and older go-runc passes it when set:
	// taken and unused (no checkpoint here).
	fl.StringVar(&e.g.criu, "criu", "", "unused: ward-oci has no checkpoint and restore")
	_ = fl.MarkHidden("criu")
	root.AddCommand(e.stateCmd(), e.listCmd(), e.deleteCmd(), e.killCmd(), e.featuresCmd())
	root.AddCommand(e.lifecycleCmds()...)
	root.SetFlagErrorFunc(func(_ *cobra.Command, err error) error { return err })
	return root
}

// setup reads the global flags: the log, the state root.
func (e *env) setup() error {
	w := e.stderr
	e.logToStderr = true
	if e.g.log != "" {
		f, err := oci.OpenLogFile(e.g.log)
		if err != nil {
			return err
		}
		e.logFile, w, e.logToStderr = f, f, false
	}
	l, err := oci.NewLogger(w, e.g.logFormat, e.g.debug)
	if err != nil {
		return err
	}
	e.logger = l
	if _, err := e.isRootless(); err != nil {
		return err
	}
	root, err := filepath.Abs(e.g.root)
	if err != nil {
		return fmt.Errorf("--root %q: %w", e.g.root, err)
	}
	if root == "/" {
		return errors.New("option --root argument should not be set to /")
	}
	e.g.root = root
	e.store = oci.NewStore(root)
	e.logger.Debugf("ward-oci %s: root %s", e.info.Version, root)
	return nil
}

// isRootless reads --rootless: true, false, or auto (a caller other than
// root).
func (e *env) isRootless() (bool, error) {
	switch e.g.rootless {
	case "", "auto":
		return e.euid != 0, nil
	}
	b, err := strconv.ParseBool(e.g.rootless)
	if err != nil {
		return false, fmt.Errorf("--rootless %q: want true, false or auto", e.g.rootless)
	}
	return b, nil
}

// exactArgs and friends are runc's argument checks, in runc's words.
func exactArgs(n int) cobra.PositionalArgs {
	return func(cmd *cobra.Command, args []string) error {
		if len(args) != n {
			return fmt.Errorf("ward-oci: %q requires exactly %d argument(s)", cmd.Name(), n)
		}
		return nil
	}
}

func minArgs(n int) cobra.PositionalArgs {
	return func(cmd *cobra.Command, args []string) error {
		if len(args) < n {
			return fmt.Errorf("ward-oci: %q requires a minimum of %d argument(s)", cmd.Name(), n)
		}
		return nil
	}
}

func rangeArgs(lo, hi int) cobra.PositionalArgs {
	return func(cmd *cobra.Command, args []string) error {
		if err := minArgs(lo)(cmd, args); err != nil {
			return err
		}
		if len(args) > hi {
			return fmt.Errorf("ward-oci: %q requires a maximum of %d argument(s)", cmd.Name(), hi)
		}
		return nil
	}
}
