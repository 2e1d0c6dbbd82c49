package ocicli

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"

	specs "github.com/opencontainers/runtime-spec/specs-go"
	"github.com/spf13/cobra"

	"github.com/wardbox/ward/oci"
)

// ErrNotImplemented is the answer of the commands that start or change a
// container, until ward's init can run one: their flags and arguments are
// read and checked (and config.json with them), then this.
var ErrNotImplemented = errors.New("not implemented yet: ward-oci does not run containers yet (docs/oci.md)")

// createFlags are create's (and run's) flags.
type createFlags struct {
	bundle        string
	consoleSocket string
	pidfdSocket   string
	pidFile       string
	noPivot       bool
	noNewKeyring  bool
	preserveFDs   int
	// run's own, and whether these are run's
	runCmd      bool
	detach      bool
	keep        bool
	noSubreaper bool
	// master is the pty master create received for run to serve (a
	// terminal without a console socket).
	master *os.File
}

func (f *createFlags) bind(cmd *cobra.Command, run bool) {
	fl := cmd.Flags()
	fl.StringVarP(&f.bundle, "bundle", "b", "", "path to the root of the bundle directory, defaults to the current directory")
	fl.StringVar(&f.consoleSocket, "console-socket", "", "path to an AF_UNIX socket which will receive a file descriptor referencing the master end of the console's pseudoterminal")
	fl.StringVar(&f.pidfdSocket, "pidfd-socket", "", "path to an AF_UNIX socket which will receive a file descriptor referencing the init process")
	fl.StringVar(&f.pidFile, "pid-file", "", "specify the file to write the process id to")
	fl.BoolVar(&f.noPivot, "no-pivot", false, "do not use pivot root to jail process inside rootfs. This should be used whenever the rootfs is on top of a ramdisk")
	fl.BoolVar(&f.noNewKeyring, "no-new-keyring", false, "do not create a new session keyring for the container. This will cause the container to inherit the calling processes session key")
	fl.IntVar(&f.preserveFDs, "preserve-fds", 0, "Pass N additional file descriptors to the container (stdio + $LISTEN_FDS + N in total)")
	if run {
		fl.BoolVarP(&f.detach, "detach", "d", false, "detach from the container's process")
		fl.BoolVar(&f.keep, "keep", false, "do not delete the container after it exits")
		fl.BoolVar(&f.noSubreaper, "no-subreaper", false, "disable the use of the subreaper used to reap reparented processes")
	}
}

// prepare checks what create and run are given, as far as it goes without
// starting anything: the id is free, config.json is one ward can honour,
// a terminal comes with a console socket and only then.
func (e *env) prepare(f *createFlags, id string) (*oci.Container, *specs.Spec, error) {
	if err := oci.ValidateID(id); err != nil {
		return nil, nil, err
	}
	if _, err := e.store.Load(id); err == nil {
		return nil, nil, fmt.Errorf("%s: %w", id, oci.ErrExist)
	} else if !errors.Is(err, oci.ErrNotExist) {
		return nil, nil, err
	}
	if f.preserveFDs < 0 {
		return nil, nil, fmt.Errorf("--preserve-fds %d: want 0 or more", f.preserveFDs)
	}
	bundle := f.bundle
	if bundle == "" {
		bundle = "."
	}
	bundle, err := filepath.Abs(bundle)
	if err != nil {
		return nil, nil, err
	}
	s, err := oci.ReadSpec(bundle)
	if err != nil {
		return nil, nil, err
	}
	rootless, _ := e.isRootless()
	c, err := oci.Spec(s, oci.SpecOptions{ID: id, Bundle: bundle, SystemdCgroup: e.g.systemdCgroup, Rootless: rootless})
	if err != nil {
		return nil, nil, err
	}
	if fi, err := os.Stat(c.Root); err != nil || !fi.IsDir() {
		return nil, nil, fmt.Errorf("root.path %s: not a directory (%v)", c.Root, err)
	}
	if err := checkConsole(c.Process.Terminal, !f.runCmd || f.detach, f.consoleSocket); err != nil {
		return nil, nil, err
	}
	return c, s, nil
}

// checkConsole is runc's rule: a detached process with a terminal needs a
// console socket to send it to, and a socket is only for a detached
// process with a terminal.
func checkConsole(terminal, detach bool, socket string) error {
	if terminal && detach && socket == "" {
		return errors.New("cannot allocate tty if ward-oci will detach without setting console socket")
	}
	if socket != "" && (!detach || !terminal) {
		return errors.New("cannot use console socket if ward-oci will not detach or allocate tty")
	}
	return nil
}

func (e *env) lifecycleCmds() []*cobra.Command {
	return []*cobra.Command{e.createCmd(false), e.createCmd(true), e.startCmd(), e.execCmd(),
		e.pauseCmd("pause", "pause suspends all processes inside the container"),
		e.pauseCmd("resume", "resumes all processes that have been previously paused"),
		e.updateCmd(), e.psCmd(), e.eventsCmd()}
}

func (e *env) createCmd(run bool) *cobra.Command {
	f := &createFlags{runCmd: run}
	name, short := "create", "create a container"
	if run {
		name, short = "run", "create and run a container"
	}
	cmd := &cobra.Command{
		Use:   name + " [flags] <container-id>",
		Short: short,
		Args:  exactArgs(1),
		RunE: func(_ *cobra.Command, args []string) error {
			c, s, err := e.prepare(f, args[0])
			if err != nil {
				return err
			}
			if run {
				return e.runContainer(f, c, s)
			}
			_, err = e.create(f, c, s)
			return err
		},
	}
	f.bind(cmd, run)
	return cmd
}

func (e *env) startCmd() *cobra.Command {
	return &cobra.Command{
		Use:   "start <container-id>",
		Short: "executes the user defined process in a created container",
		Args:  exactArgs(1),
		RunE: func(_ *cobra.Command, args []string) error {
			st, err := e.store.Load(args[0])
			if err != nil {
				return err
			}
			switch e.store.Status(st) {
			case oci.Stopped:
				return errors.New("cannot start a container that has stopped")
			case oci.Running, oci.Paused:
				return errors.New("cannot start an already running container")
			}
			if err := e.store.ReleaseExecFifo(st); err != nil {
				if h := hooksOf(st); h != nil && len(h.StartContainer) > 0 {
					err = fmt.Errorf("%w (if a startContainer hook failed, its error is on the container's stderr)", err)
				}
				return err
			}
			e.poststart(st)
			return nil
		},
	}
}
