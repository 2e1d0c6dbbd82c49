package ocicli

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"

	specs "github.com/opencontainers/runtime-spec/specs-go"
	"github.com/spf13/cobra"

	"github.com/wardbox/ward/oci"
)

type execFlags struct {
	consoleSocket  string
	pidfdSocket    string
	cwd            string
	env            []string
	tty            bool
	user           string
	additionalGids []int64
	process        string
	detach         bool
	pidFile        string
	processLabel   string
	apparmor       string
	noNewPrivs     bool
	caps           []string
	preserveFDs    int
	cgroups        []string
	ignorePaused   bool
}

func (e *env) execCmd() *cobra.Command {
	var f execFlags
	cmd := &cobra.Command{
		Use:   "exec [flags] <container-id> <command> [command options]  || -p process.json <container-id>",
		Short: "execute new process inside the container",
		Args:  minArgs(1),
		RunE: func(_ *cobra.Command, args []string) error {
			st, err := e.store.Load(args[0])
			if err != nil {
				return err
			}
			switch e.store.Status(st) {
			case oci.Stopped:
				return errors.New("cannot exec in a stopped container")
			case oci.Paused:
				if !f.ignorePaused {
					return errors.New("cannot exec in a paused container (use --ignore-paused to override)")
				}
			}
			var p *oci.Process
			terminal := f.tty // --process FILE: its own terminal field (runc ignores --tty then)
			if f.process != "" {
				if p, err = readProcess(f.process); err != nil {
					return err
				}
				terminal = p.Terminal
				if len(f.caps) > 0 || f.apparmor != "" || f.processLabel != "" {
					// runc's rule: the process file decides.
					e.warn(errors.New("exec: --cap, --apparmor and --process-label are ignored with --process: the process file says"))
				}
			} else if len(args) < 2 {
				return errors.New("exec: no command given: want <container-id> <command>, or --process FILE")
			}
			if err := checkConsole(terminal, f.detach, f.consoleSocket); err != nil {
				return err
			}
			if p == nil {
				if p, err = e.argsProcess(st, &f, args[1:]); err != nil {
					return err
				}
			}
			return e.exec(st, &f, p)
		},
	}
	// Everything after the id is the command's.
	cmd.Flags().SetInterspersed(false)
	fl := cmd.Flags()
	fl.StringVar(&f.consoleSocket, "console-socket", "", "path to an AF_UNIX socket which will receive a file descriptor referencing the master end of the console's pseudoterminal")
	fl.StringVar(&f.pidfdSocket, "pidfd-socket", "", "path to an AF_UNIX socket which will receive a file descriptor referencing the exec process")
	fl.StringVar(&f.cwd, "cwd", "", "current working directory in the container")
	fl.StringArrayVarP(&f.env, "env", "e", nil, "set environment variables")
	fl.BoolVarP(&f.tty, "tty", "t", false, "allocate a pseudo-TTY")
	fl.StringVarP(&f.user, "user", "u", "", "UID (format: <uid>[:<gid>])")
	fl.Int64SliceVarP(&f.additionalGids, "additional-gids", "g", nil, "additional gids")
	fl.StringVarP(&f.process, "process", "p", "", "path to the process.json")
	fl.BoolVarP(&f.detach, "detach", "d", false, "detach from the container's process")
	fl.StringVar(&f.pidFile, "pid-file", "", "specify the file to write the process id to")
	fl.StringVar(&f.processLabel, "process-label", "", "set the asm process label for the process commonly used with selinux")
	fl.StringVar(&f.apparmor, "apparmor", "", "set the apparmor profile for the process")
	fl.BoolVar(&f.noNewPrivs, "no-new-privs", false, "set the no new privileges value for the process")
	fl.StringArrayVarP(&f.caps, "cap", "c", nil, "add a capability to the bounding set for the process")
	fl.IntVar(&f.preserveFDs, "preserve-fds", 0, "Pass N additional file descriptors to the container (stdio + $LISTEN_FDS + N in total)")
	fl.StringArrayVar(&f.cgroups, "cgroup", nil, "run the process in an (existing) sub-cgroup(s). Format is [<controller>:]<cgroup>.")
	fl.BoolVar(&f.ignorePaused, "ignore-paused", false, "allow exec in a paused container")
	return cmd
}

// readProcess reads exec's --process file (a runtime-spec process object,
// read as strictly as config.json) into ward's terms.
func readProcess(path string) (*oci.Process, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	var p specs.Process
	if err := oci.DecodeStrict(b, &p); err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return oci.SpecProcess(&p, "")
}

func (e *env) pauseCmd(name, short string) *cobra.Command {
	return &cobra.Command{
		Use:   name + " <container-id>",
		Short: short,
		Args:  exactArgs(1),
		RunE: func(_ *cobra.Command, args []string) error {
			st, err := e.store.Load(args[0])
			if err != nil {
				return err
			}
			return e.store.Freeze(st, name == "pause")
		},
	}
}

func (e *env) psCmd() *cobra.Command {
	var format string
	cmd := &cobra.Command{
		Use:   "ps [flags] <container-id> [ps options]",
		Short: "ps displays the processes running inside a container",
		Args:  minArgs(1),
		RunE: func(_ *cobra.Command, args []string) error {
			if format != "table" && format != "json" {
				return errors.New("invalid format option")
			}
			st, err := e.store.Load(args[0])
			if err != nil {
				return err
			}
			pids, err := e.store.Pids(st)
			if err != nil {
				return err
			}
			if format == "table" {
				return psTable(e.stdout, pids, args[1:])
			}
			if len(args) > 1 {
				return errors.New("ps options are only for --format table")
			}
			if pids == nil {
				pids = []int{}
			}
			return json.NewEncoder(e.stdout).Encode(pids)
		},
	}
	// What follows the id is ps(1)'s own options.
	cmd.Flags().SetInterspersed(false)
	cmd.Flags().StringVarP(&format, "format", "f", "table", "select one of: table or json")
	return cmd
}
