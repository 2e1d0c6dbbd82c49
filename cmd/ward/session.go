package main

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/signal"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/spf13/cobra"

	"github.com/wardbox/ward"
	"github.com/wardbox/ward/cmd/ward/internal/supervisor"
)

// The long-lived sandboxes of the CLI: one supervisor process (package
// supervisor) holds all of a user's, under the state directory stateDir.
// This file is their commands' flags and printing.

// stateDir holds one directory per long-lived sandbox and the
// supervisor's own (supervisor.Dir); useStateDir sets it.
var stateDir supervisor.Dir

// sessions is the client of stateDir's supervisor; a supervisor it has to
// start is this binary's hidden `supervise` command.
func sessions() supervisor.Client {
	return supervisor.Client{Dir: stateDir, Spawn: func() error { return supervisor.Spawn("/proc/self/exe", "supervise") }}
}

func newStartCmd() *cobra.Command {
	var f runFlags
	var name string
	cmd := &cobra.Command{
		Use:   "start --name=NAME [run flags]",
		Short: "Start a long-lived sandbox and return once it is ready",
		Example: `  ward start --name=agent --memory-limit=1G --workspace=./work --audit-log=/var/log/ward/agent.jsonl
  ward exec agent -- sh -c 'echo hi > x'     # in /workspace: ./work/x on the host
  ward exec agent -- cat /workspace/x
  ward ps
  ward stop agent`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if err := supervisor.CheckName(name); err != nil {
				return err
			}
			if _, ok := stateDir.Alive(name); ok {
				return fmt.Errorf("--name=%s: a sandbox of that name is running", name)
			}
			cfg, err := f.toConfig(nil)
			if err != nil {
				return err
			}
			// The supervisor resolves paths and takes the environment as
			// this process sees them, not as it does.
			cwd, err := os.Getwd()
			if err != nil {
				return &exitError{code: ward.ExitSetup, msg: fmt.Sprintf("start: the current directory: %v", err)}
			}
			cfg.Cwd, cfg.CallerEnv = cwd, os.Environ()
			cfg.Name = name // the audit log's name for it
			cfg.Stdin, cfg.Stdout, cfg.Stderr, cfg.LogWriter = nil, nil, nil, nil
			reply, err := sessions().Start(name, cfg)
			if err != nil {
				return &exitError{code: ward.ExitSetup, msg: fmt.Sprintf("start: %v", err)}
			}
			if reply.Error != "" {
				return &exitError{code: reply.Code, msg: reply.Error}
			}
			fmt.Println(name)
			return nil
		},
	}
	cmd.Flags().SetInterspersed(false)
	cmd.Flags().StringVar(&name, "name", "", "the sandbox's name: [a-z0-9][a-z0-9_.-]{0,62}")
	bindRunFlags(cmd.Flags(), &f)
	return cmd
}

func newSuperviseCmd() *cobra.Command {
	return &cobra.Command{
		Use:    "supervise",
		Hidden: true, // spawned by `ward start`
		Args:   cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			supervisor.NameProcess()
			// SIGTERM and SIGINT end every sandbox cleanly, as ward stop
			// does. A supervisor has no terminal: a SIGHUP (a session's or
			// process group's end somewhere) means nothing to it.
			signal.Ignore(syscall.SIGHUP)
			ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, syscall.SIGINT)
			defer stop()
			return supervisor.NewServer(stateDir).Serve(ctx, supervisor.Ready(os.NewFile(3, "ready")))
		},
	}
}

func newExecCmd() *cobra.Command {
	var timeLimit string
	var env []string
	var dir string
	cmd := &cobra.Command{
		Use:   "exec NAME [--time-limit=D] -- COMMAND [ARG...]",
		Short: "Run a command in a long-lived sandbox, with this terminal's streams",
		Long: `Run a command in a long-lived sandbox, with this terminal's streams.
A sandbox started with --audit-log logs every command run in it there, one line
each (docs/audit.md); ward exec cannot turn that off.`,
		Args: cobra.MinimumNArgs(2),
		RunE: func(cmd *cobra.Command, args []string) error {
			name, command := args[0], args[1:]
			if len(command) > 0 && command[0] == "--" {
				command = command[1:]
			}
			if len(command) == 0 {
				return fmt.Errorf("exec: no command given (usage: ward exec NAME -- COMMAND [ARG...])")
			}
			if err := supervisor.CheckName(name); err != nil {
				return err
			}
			req := supervisor.ExecRequest{Args: command, Env: env, Dir: dir}
			for _, e := range env {
				if k, _, ok := strings.Cut(e, "="); !ok || k == "" {
					return fmt.Errorf("--env=%s: want K=V", e)
				}
			}
			if timeLimit != "" {
				var err error
				if req.TimeLimit, err = ward.ParseDuration(timeLimit); err != nil {
					return fmt.Errorf("--time-limit=%s: %w", timeLimit, err)
				}
			}
			if _, ok := stateDir.Alive(name); !ok {
				return fmt.Errorf("exec: no running sandbox %q (see ward ps)", name)
			}
			return execIn(name, req)
		},
	}
	// Flags go before "--"; everything after it is the command's.
	cmd.Flags().StringVar(&timeLimit, "time-limit", "", "wall-clock limit of this command only")
	cmd.Flags().StringArrayVar(&env, "env", nil, "K=V added to the sandbox's environment (repeatable)")
	cmd.Flags().StringVar(&dir, "workdir", "", "working directory inside (default the sandbox's: /workspace when started with --workspace)")
	return cmd
}

// execIn runs req in sandbox name with this process's streams, and
// returns its exit status as an *exitError.
func execIn(name string, req supervisor.ExecRequest) error {
	// The sandbox gets pipes, never this process's own streams: a
	// background process of the command could otherwise go on reading the
	// caller's terminal after exec returned.
	relay, err := newStdioRelay(os.Stdin, os.Stdout, os.Stderr)
	if err != nil {
		return &exitError{code: ward.ExitSetup, msg: "exec: " + err.Error()}
	}
	reply, err := sessions().Exec(name, req, relay.fds(), relay.sent)
	relay.finish()
	switch {
	case err != nil:
		return &exitError{code: ward.ExitSetup, msg: err.Error()}
	case reply.Error != "":
		return &exitError{code: ward.ExitSetup, msg: reply.Error}
	}
	res := reply.Result
	if res.Error != nil && res.Status != ward.StatusExited {
		fmt.Fprintf(os.Stderr, "ward: %s\n", *res.Error)
	}
	if reply.AuditError != "" {
		// The command is not on record: ward's failure.
		return &exitError{code: ward.ExitSetup, msg: reply.AuditError}
	}
	return &exitError{code: res.WardExitCode}
}

func newPsCmd() *cobra.Command {
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "ps",
		Short: "List the long-lived sandboxes with age, memory and processes",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			infos := sessions().List()
			out := cmd.OutOrStdout()
			if asJSON {
				if infos == nil {
					infos = []supervisor.Info{}
				}
				b, _ := json.MarshalIndent(infos, "", "  ")
				fmt.Fprintln(out, string(b))
				return nil
			}
			fmt.Fprintf(out, "%-20s %-8s %-8s %-10s %s\n", "NAME", "PID", "AGE", "MEMORY", "PROCESSES")
			for _, i := range infos {
				mem, procs := "-", "-"
				if i.MemoryBytes != nil {
					mem = ward.FormatSize(*i.MemoryBytes)
				}
				if i.Processes != nil {
					procs = strconv.FormatInt(*i.Processes, 10)
				}
				fmt.Fprintf(out, "%-20s %-8d %-8s %-10s %s\n", i.Name, i.Pid, (time.Duration(i.AgeSeconds) * time.Second).String(), mem, procs)
			}
			return nil
		},
	}
	cmd.Flags().BoolVar(&asJSON, "json", false, "print JSON")
	return cmd
}

func newStopCmd() *cobra.Command {
	return &cobra.Command{
		Use:   "stop NAME",
		Short: "End a long-lived sandbox: everything inside dies, its state is removed",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			name := args[0]
			if err := supervisor.CheckName(name); err != nil {
				return err
			}
			pid, ok := stateDir.Alive(name)
			if !ok {
				return fmt.Errorf("stop: no running sandbox %q", name)
			}
			if err := sessions().Stop(name, pid); err != nil {
				return &exitError{code: ward.ExitSetup, msg: err.Error()}
			}
			return nil
		},
	}
}
