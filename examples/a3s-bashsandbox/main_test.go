package main

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/wardbox/ward"
)

// TestMain lets the test binary be the sandbox's init, as main does.
func TestMain(m *testing.M) {
	ward.Init()
	os.Exit(m.Run())
}

// TestBashSandbox is a3s's contract: exec in /workspace returns stdout,
// stderr and the exit code; files stay between commands and land in the
// host's workspace as the caller's; shutdown ends everything.
func TestBashSandbox(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("needs root: the example makes a ward sandbox (CI runs make test as root)")
	}
	ctx := context.Background()
	ws := t.TempDir()
	b, err := New(ctx, ws)
	if err != nil {
		t.Fatal(err)
	}
	defer b.Shutdown()
	for _, tc := range []struct {
		cmd            string
		stdout, stderr string
		code           int
	}{
		{"echo hello sandbox", "hello sandbox\n", "", 0},
		{"pwd", GuestWorkspace + "\n", "", 0},
		{"echo oops >&2; exit 3", "", "oops\n", 3},
		{"echo kept > /tmp/state; echo made > out.txt", "", "", 0},
		{"cat /tmp/state out.txt", "kept\nmade\n", "", 0},
		{"id -un", "sandbox\n", "", 0},
		{"sleep 30", "", "", 124},
	} {
		timeout := time.Minute
		if tc.cmd == "sleep 30" {
			timeout = 300 * time.Millisecond
		}
		out, err := b.ExecCommand(ctx, tc.cmd, GuestWorkspace, timeout)
		if err != nil {
			t.Fatalf("%q: %v", tc.cmd, err)
		}
		if out.Stdout != tc.stdout || out.Stderr != tc.stderr || out.ExitCode != tc.code {
			t.Errorf("%q: got %+v, want stdout %q stderr %q code %d", tc.cmd, out, tc.stdout, tc.stderr, tc.code)
		}
	}
	// After shutdown everything lent is given back: the file is the
	// caller's on the host.
	b.Shutdown()
	st, err := os.Stat(filepath.Join(ws, "out.txt"))
	if err != nil {
		t.Fatalf("the workspace file is not on the host: %v", err)
	}
	if uid := fileUID(st); uid != os.Getuid() {
		t.Errorf("out.txt belongs to uid %d, want the caller's %d", uid, os.Getuid())
	}
	if _, err := b.ExecCommand(ctx, "true", GuestWorkspace, time.Second); err == nil || strings.Contains(err.Error(), "panic") {
		t.Errorf("a command after shutdown: %v, want an error", err)
	}
}
