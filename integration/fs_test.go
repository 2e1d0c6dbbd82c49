package integration

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestAllowReadBindsReadOnlyAtTheSamePath: an allowed directory (here under
// /tmp, which the sandbox covers with its own scratch tmpfs) and an allowed
// file are readable inside, not writable, and nothing in them executes.
func TestAllowReadBindsReadOnlyAtTheSamePath(t *testing.T) {
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "data.txt"), []byte("input-data\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "run.sh"), []byte("#!/bin/sh\necho ran\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	single := filepath.Join(t.TempDir(), "one.txt")
	if err := os.WriteFile(single, []byte("one-file\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	script := `cat "$1/data.txt" "$2"
touch "$1/new" 2>&1 || true
echo x >> "$2" 2>&1 || true
"$1/run.sh" 2>&1 || true`
	r := run(t, opts{}, "run", "--allow-read="+dir, "--allow-read="+single, "--", "sh", "-c", script, "sh", dir, single)
	for _, want := range []string{"input-data", "one-file", "Read-only file system", "Permission denied"} {
		if !strings.Contains(r.stdout, want) {
			t.Errorf("stdout lacks %q\n%s", want, r)
		}
	}
	if strings.Contains(r.stdout, "ran") {
		t.Errorf("a script in an --allow-read directory executed (want noexec)\n%s", r)
	}
	if _, err := os.Stat(filepath.Join(dir, "new")); err == nil {
		t.Errorf("the sandbox created a file in a read-only allowed directory on the host")
	}
}

func TestAllowReadResolvesRelativePathsAndSymlinksOnTheHost(t *testing.T) {
	dir := t.TempDir()
	real := filepath.Join(dir, "real")
	if err := os.Mkdir(real, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(real, "f"), []byte("through-link\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(real, filepath.Join(dir, "link")); err != nil {
		t.Fatal(err)
	}
	cmd := wardCmd(t.Context(), opts{}, []string{"run", "--sandbox-log=verbose", "--allow-read=link", "--", "cat", filepath.Join(real, "f")})
	cmd.Dir = dir // the relative path is taken against ward's cwd
	r := runCmd(t, t.Context(), cmd, cmd.Args)
	if r.code != 0 || !strings.Contains(r.stdout, "through-link") {
		t.Fatalf("relative symlinked --allow-read not bound at its real path\n%s", r)
	}
	if !strings.Contains(r.stderr, "resolved on the host from link") {
		t.Errorf("verbose log does not say the link was resolved\n%s", r)
	}
}

func TestAllowReadRefusesBadPathsWithExit2(t *testing.T) {
	for _, tc := range []struct{ path, want string }{
		{"/nonexistent-ward-path", "no such file"},
		{"~/data", "~ is not expanded"},
		{"/", "would cover the system directory"},
		{"/etc", "would cover the system directory /etc"},
		{"/usr", "would cover the system directory /usr"},
		{"/proc/1", "inside /proc"},
		{"/dev/null", "inside /dev"},
	} {
		r := run(t, opts{}, "run", "--allow-read="+tc.path, "--", "true")
		if r.code != 2 || !strings.Contains(r.stderr, "--allow-read="+tc.path) || !strings.Contains(r.stderr, tc.want) {
			t.Errorf("--allow-read=%s: exit %d, want 2 naming the flag and %q\n%s", tc.path, r.code, tc.want, r)
		}
	}
}
