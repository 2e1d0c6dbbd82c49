// Command a3s-bashsandbox is an a3s-style BashSandbox backed by ward: a
// host application starts one long-lived sandbox with its workspace
// mounted read-write at /workspace, runs each tool command in it as
// `bash -c COMMAND` (stdout, stderr and the exit code back), and shuts it
// down at the end. The sandbox keeps its files (/tmp, /home/sandbox,
// /workspace) between commands, as a session's shell would.
//
//	a3s-bashsandbox WORKSPACE 'echo hello' 'ls /workspace' 'exit 3'
//
// prints one JSON line per command.
package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"strings"
	"time"

	"github.com/wardbox/ward"
)

// SandboxOutput is one command's outcome, as a3s's trait returns it.
type SandboxOutput struct {
	Stdout   string `json:"stdout"`
	Stderr   string `json:"stderr"`
	ExitCode int    `json:"exit_code"`
}

// BashSandbox runs bash commands in one ward sandbox around a workspace.
type BashSandbox struct {
	sb *ward.Sandbox
}

// GuestWorkspace is where the workspace is inside.
const GuestWorkspace = ward.WorkspaceDir

// New starts the sandbox with workspace (a host directory) at
// /workspace, read-write. What a command creates there belongs to the
// caller on the host.
func New(ctx context.Context, workspace string) (*BashSandbox, error) {
	sb, err := ward.Start(ctx, ward.Config{
		Workspace:   workspace,
		MemoryLimit: 1 << 30,
		Log:         ward.LogQuiet,
	})
	if err != nil {
		return nil, err
	}
	return &BashSandbox{sb: sb}, nil
}

// ExecCommand runs `bash -c command` in guestWorkspace. A command that ran
// is an output whatever its exit code (a limit's status is its exit code:
// 124 time, 125 memory); an error means it could not run at all.
func (b *BashSandbox) ExecCommand(ctx context.Context, command, guestWorkspace string, timeout time.Duration) (SandboxOutput, error) {
	res, err := b.sb.Exec(ctx, ward.Command{
		Args:      []string{"bash", "-c", command},
		Dir:       guestWorkspace,
		TimeLimit: timeout,
		Capture:   true,
	})
	if err != nil {
		return SandboxOutput{}, err
	}
	out := SandboxOutput{ExitCode: res.WardExitCode}
	if res.Stdout != nil {
		out.Stdout = *res.Stdout
	}
	if res.Stderr != nil {
		out.Stderr = *res.Stderr
	}
	return out, nil
}

// Shutdown ends the sandbox: every process in it dies, and nothing of it
// is left on the host. Best effort, as a3s's trait has it.
func (b *BashSandbox) Shutdown() { _ = b.sb.Close() }

func main() {
	ward.Init() // first thing: ward re-executes this binary as the sandbox's init
	if len(os.Args) < 3 {
		fmt.Fprintln(os.Stderr, "usage: a3s-bashsandbox WORKSPACE COMMAND...")
		os.Exit(2)
	}
	ctx := context.Background()
	b, err := New(ctx, os.Args[1])
	if err != nil {
		fmt.Fprintln(os.Stderr, "a3s-bashsandbox:", err)
		var ce *ward.ConfigError
		if errors.As(err, &ce) {
			os.Exit(2)
		}
		os.Exit(ward.ExitSetup)
	}
	defer b.Shutdown()
	enc := json.NewEncoder(os.Stdout)
	for _, c := range os.Args[2:] {
		out, err := b.ExecCommand(ctx, c, GuestWorkspace, time.Minute)
		if err != nil {
			_ = enc.Encode(map[string]string{"command": c, "error": strings.TrimSpace(err.Error())})
			continue
		}
		_ = enc.Encode(out)
	}
}
