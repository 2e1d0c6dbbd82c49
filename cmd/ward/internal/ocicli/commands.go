package ocicli

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"runtime"
	"text/tabwriter"
	"time"

	specs "github.com/opencontainers/runtime-spec/specs-go"
	"github.com/spf13/cobra"
	"golang.org/x/sys/unix"

	"github.com/wardbox/ward/oci"
	"github.com/wardbox/ward/seccomp"
)

// versionText is --version's answer, runc's lines with ward-oci's name.
func (e *env) versionText() string {
	commit := e.info.Commit
	if commit == "" {
		commit = "unknown"
	}
	return fmt.Sprintf("ward-oci version %s\ncommit: %s\nspec: %s\ngo: %s\nlibseccomp: %s\n",
		e.info.Version, commit, specs.Version, runtime.Version(), seccomp.LibraryVersion())
}

func (e *env) stateCmd() *cobra.Command {
	return &cobra.Command{
		Use:   "state <container-id>",
		Short: "output the state of a container",
		Args:  exactArgs(1),
		RunE: func(_ *cobra.Command, args []string) error {
			st, err := e.store.Load(args[0])
			if err != nil {
				return err
			}
			b, err := json.MarshalIndent(e.store.Output(st), "", "  ")
			if err != nil {
				return err
			}
			_, err = fmt.Fprintf(e.stdout, "%s\n", b)
			return err
		},
	}
}

func (e *env) listCmd() *cobra.Command {
	var format string
	var quiet bool
	cmd := &cobra.Command{
		Use:   "list",
		Short: "lists containers started by ward-oci with the given root",
		Args:  exactArgs(0),
		RunE: func(_ *cobra.Command, _ []string) error {
			if format != "table" && format != "json" {
				return errors.New("invalid format option")
			}
			if _, err := os.Stat(e.g.root); errors.Is(err, fs.ErrNotExist) && e.rootOK {
				return fmt.Errorf("--root %s: %w", e.g.root, err)
			}
			list, err := e.store.List()
			if err != nil {
				return err
			}
			out := make([]oci.StateOutput, 0, len(list))
			for _, st := range list {
				out = append(out, e.store.Output(st))
			}
			switch {
			case quiet:
				for _, o := range out {
					fmt.Fprintln(e.stdout, o.ID)
				}
			case format == "json":
				return json.NewEncoder(e.stdout).Encode(out)
			default:
				w := tabwriter.NewWriter(e.stdout, 12, 1, 3, ' ', 0)
				fmt.Fprint(w, "ID\tPID\tSTATUS\tBUNDLE\tCREATED\tOWNER\n")
				for _, o := range out {
					fmt.Fprintf(w, "%s\t%d\t%s\t%s\t%s\t%s\n", o.ID, o.Pid, o.Status, o.Bundle, o.Created.Format(time.RFC3339Nano), o.Owner)
				}
				return w.Flush()
			}
			return nil
		},
	}
	cmd.Flags().StringVarP(&format, "format", "f", "table", "select one of: table or json")
	cmd.Flags().BoolVarP(&quiet, "quiet", "q", false, "display only container IDs")
	return cmd
}

func (e *env) deleteCmd() *cobra.Command {
	var force bool
	cmd := &cobra.Command{
		Use:   "delete [--force] <container-id>",
		Short: "delete any resources held by the container often used with detached container",
		Args:  exactArgs(1),
		RunE: func(_ *cobra.Command, args []string) error {
			st, err := e.store.Load(args[0])
			if errors.Is(err, oci.ErrNotExist) {
				// A create cut short may have left the directory
				// without a state: it goes too.
				if rerr := e.store.Remove(args[0]); rerr != nil {
					fmt.Fprintln(e.stderr, rerr)
				}
				if force {
					return nil
				}
			}
			if err != nil {
				return err
			}
			return e.deleteContainer(st, force)
		},
	}
	cmd.Flags().BoolVarP(&force, "force", "f", false, "Forcibly deletes the container if it is still running (uses SIGKILL)")
	return cmd
}

func (e *env) killCmd() *cobra.Command {
	var all bool
	cmd := &cobra.Command{
		Use:   "kill [--all] <container-id> [signal]",
		Short: "kill sends the specified signal (default: SIGTERM) to the container's init process",
		Args:  rangeArgs(1, 2),
		RunE: func(_ *cobra.Command, args []string) error {
			st, err := e.store.Load(args[0])
			if err != nil {
				return err
			}
			sig := unix.SIGTERM
			if len(args) == 2 {
				if sig, err = oci.ParseSignal(args[1]); err != nil {
					return err
				}
			}
			err = e.store.Kill(st, sig, all)
			if all && errors.Is(err, oci.ErrNotRunning) {
				return nil
			}
			return err
		},
	}
	cmd.Flags().BoolVarP(&all, "all", "a", false, "send the signal to all processes in the container")
	return cmd
}

func (e *env) featuresCmd() *cobra.Command {
	return &cobra.Command{
		Use:   "features",
		Short: "show the enabled features",
		Long:  "Show the enabled features, as JSON per the runtime-spec's features schema.",
		Args:  exactArgs(0),
		RunE: func(_ *cobra.Command, _ []string) error {
			b, err := json.MarshalIndent(oci.Features(e.info.Version, e.info.Commit), "", "    ")
			if err != nil {
				return err
			}
			_, err = fmt.Fprintf(e.stdout, "%s\n", b)
			return err
		},
	}
}
