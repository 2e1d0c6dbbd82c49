package integration

// ash's Docker sandbox, served by ward: its behaviour table and the
// security checks of its verification list, each command run as ash's
// executor runs one (bash -c COMMAND in the workspace, a time limit,
// exit code, stdout, stderr and timed_out back).

import (
	"crypto/sha256"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// ashResult is ash's ExecutionResult.
type ashResult struct {
	exitCode       int // -1 when the command did not exit by itself
	stdout, stderr string
	timedOut       bool
	wardCode       int // ward's own exit status
	raw            result
}

// ashExec runs command in a sandbox whose workspace is ws (read-write,
// ash's default workspace_access), with a time limit.
func ashExec(t *testing.T, ws, command, limit string) ashResult {
	t.Helper()
	r := run(t, opts{}, "run", "--json", "--workspace="+ws, "--time-limit="+limit, "--", "bash", "-c", command)
	var res struct {
		Status   string  `json:"status"`
		ExitCode *int    `json:"exit_code"`
		Stdout   *string `json:"stdout"`
		Stderr   *string `json:"stderr"`
	}
	if err := json.Unmarshal([]byte(r.stdout), &res); err != nil {
		t.Fatalf("%q: the result is not JSON: %v\n%s", command, err, r)
	}
	a := ashResult{exitCode: -1, timedOut: res.Status == "timeout", wardCode: r.code, raw: r}
	if res.ExitCode != nil {
		a.exitCode = *res.ExitCode
	}
	if res.Stdout != nil {
		a.stdout = *res.Stdout
	}
	if res.Stderr != nil {
		a.stderr = *res.Stderr
	}
	return a
}

// hostState is what a command in the sandbox must not change on the host
// (not /etc/passwd nor /etc's listing: other tests add and remove users).
func hostState(t *testing.T, sentinel string) string {
	t.Helper()
	var b strings.Builder
	for _, p := range []string{"/etc/hostname", "/etc/os-release", sentinel} {
		data, err := os.ReadFile(p)
		if err != nil && !os.IsNotExist(err) {
			t.Fatal(err)
		}
		fmt.Fprintf(&b, "%s %x\n", p, sha256.Sum256(data))
	}
	for _, d := range []string{"/usr/bin", "/"} {
		entries, err := os.ReadDir(d)
		if err != nil {
			t.Fatal(err)
		}
		for _, e := range entries {
			b.WriteString(d + "/" + e.Name() + "\n")
		}
	}
	for _, p := range []string{"/bin/sh", "/usr/bin/env"} {
		if _, err := os.Stat(p); err != nil {
			b.WriteString(p + " missing\n")
		}
	}
	return b.String()
}

func TestAshBehaviourTable(t *testing.T) {
	other := t.TempDir() // never mounted: stands for the rest of the host
	sentinel := filepath.Join(other, "sentinel")
	if err := os.WriteFile(sentinel, []byte("keep me\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	before := hostState(t, sentinel)
	for _, tc := range []struct {
		name, command, limit string
		check                func(a ashResult) bool
		want                 string
	}{
		{"basic execution", "echo hello", "60s",
			func(a ashResult) bool { return a.exitCode == 0 && a.stdout == "hello\n" && !a.timedOut },
			`exit_code=0, stdout="hello\n"`},
		{"exit code preserved", "exit 42", "60s",
			func(a ashResult) bool { return a.exitCode == 42 && a.wardCode == 42 && !a.timedOut },
			"exit_code=42"},
		{"killed after the time limit", "sleep 100", "1s",
			func(a ashResult) bool { return a.timedOut && a.wardCode == 124 },
			"timed_out (status timeout, ward's exit 124)"},
		// GNU rm refuses / itself (--preserve-root, its default).
		{"rm -rf / fails", "rm -rf /", "60s",
			func(a ashResult) bool { return a.exitCode != 0 && !a.timedOut },
			"exit_code != 0"},
		// Past rm's failsafe: the sandbox's own root, staying on it.
		{"rm -rf of the root: read-only", "rm -rf --no-preserve-root --one-file-system /", "60s",
			func(a ashResult) bool { return a.exitCode != 0 && strings.Contains(a.stderr, "Read-only file system") },
			`exit_code != 0, "Read-only file system"`},
		{"rm -rf of system dirs: read-only", "rm -rf /etc /usr/bin /bin/sh", "60s",
			func(a ashResult) bool { return a.exitCode != 0 && strings.Contains(a.stderr, "Read-only file system") },
			`exit_code != 0, "Read-only file system"`},
		{"no sudo", "sudo whoami", "60s",
			func(a ashResult) bool { return a.exitCode != 0 && !strings.Contains(a.stdout, "root") },
			"exit_code != 0 and not root"},
		{"no su", "su -c whoami root < /dev/null", "60s",
			func(a ashResult) bool { return a.exitCode != 0 && !strings.Contains(a.stdout, "root") },
			"exit_code != 0 and not root"},
		{"user is sandbox", "whoami; id -u", "60s",
			func(a ashResult) bool { return a.exitCode == 0 && a.stdout == "sandbox\n1000\n" },
			"sandbox, uid 1000 (not root)"},
		{"/tmp and /home/sandbox writable", "echo a > /tmp/t && echo b > /home/sandbox/h && cat /tmp/t /home/sandbox/h", "60s",
			func(a ashResult) bool { return a.exitCode == 0 && a.stdout == "a\nb\n" },
			"both written"},
		{"/etc and /usr read-only", "touch /etc/x /usr/x 2>&1", "60s",
			func(a ashResult) bool {
				return a.exitCode != 0 && strings.Count(a.stdout, "Read-only file system") == 2
			},
			"both refused with EROFS"},
		{"runs in the workspace", "pwd; cat in.txt; echo out > out.txt", "60s",
			func(a ashResult) bool { return a.exitCode == 0 && a.stdout == "/workspace\ninput\n" },
			"/workspace, the caller's files"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ws := t.TempDir()
			if err := os.WriteFile(filepath.Join(ws, "in.txt"), []byte("input\n"), 0o644); err != nil {
				t.Fatal(err)
			}
			a := ashExec(t, ws, tc.command, tc.limit)
			if !tc.check(a) {
				out := a.raw.String()
				if len(out) > 4000 {
					out = out[:4000] + "..."
				}
				t.Errorf("%q: want %s; got exit_code=%d timed_out=%v\n%s", tc.command, tc.want, a.exitCode, a.timedOut, out)
			}
			if after := hostState(t, sentinel); after != before {
				t.Fatalf("%q changed the host", tc.command)
			}
		})
	}
}
