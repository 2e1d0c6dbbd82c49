package integration

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// inDir runs bin/ward with args in dir (where a ./ward.toml may be).
func inDir(t *testing.T, dir string, env []string, args ...string) result {
	t.Helper()
	needRoot(t)
	ctx, cancel := context.WithTimeout(context.Background(), safetyTimeout)
	defer cancel()
	cmd := wardCmd(ctx, opts{env: env}, args)
	cmd.Dir = dir
	return runCmd(t, ctx, cmd, args)
}

// TestWardTomlInTheCurrentDirOnlyWhenNamed: a ./ward.toml is read only
// with --config=ward.toml (a sandbox that could write the directory could
// have planted it), and ward says so when it skips one.
func TestWardTomlInTheCurrentDirOnlyWhenNamed(t *testing.T) {
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "ward.toml"), []byte("[sandbox]\ntime_limit = \"1s\"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	r := inDir(t, dir, nil, "run", "--sandbox-log=verbose", "--", "true")
	if r.code != 0 || strings.Contains(r.stderr, "Time limit: 1s") || !strings.Contains(r.stderr, "not reading ./ward.toml") {
		t.Errorf("an unnamed ./ward.toml was read, or skipped silently\n%s", r)
	}
	r = inDir(t, dir, nil, "run", "--config=ward.toml", "--sandbox-log=verbose", "--", "sleep", "5")
	if r.code != 124 || !strings.Contains(r.stderr, "[SANDBOX] Time limit: 1s") {
		t.Errorf("--config=ward.toml's time_limit did not apply\n%s", r)
	}
	// A flag wins over the file.
	if r := inDir(t, dir, nil, "run", "--config=ward.toml", "--time-limit=3s", "--explain", "--", "true"); !strings.Contains(r.stderr, "time_limit from flag --time-limit") {
		t.Errorf("--explain does not say the flag won\n%s", r)
	}
}

// TestSimpleSpecConfigAppliesAsVerboseShows: the Simple spec's
// simple.toml (its file system paths made this test's own dirs).
func TestSimpleSpecConfigAppliesAsVerboseShows(t *testing.T) {
	dir := t.TempDir()
	for _, d := range []string{"input", "output"} {
		if err := os.Mkdir(filepath.Join(dir, d), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	doc := `[sandbox]
time_limit = "5s"
memory_limit = "100M"
cpu_limit = 80
file_descriptors = 100
processes = 1

[sandbox.network]
allow_domains = ["example.com", "api.github.com"]
allow_ports = [443]
block_internal = true
allow_patterns = ["*.github.com"]
deny_patterns = ["*.internal", "localhost", "127.*", "192.168.*"]

[sandbox.filesystem]
allow_read = ["input"]
allow_write = ["output"]
deny_patterns = ["/etc/*"]
max_file_size = "10M"
max_files = 100

[sandbox.profiles.strict]
time_limit = "1s"
memory_limit = "10M"
allow_network = false
allow_filesystem = false

[test]
sandbox = true
sandbox_time_limit = "5s"
sandbox_memory_limit = "100M"
`
	path := filepath.Join(dir, "simple.toml")
	if err := os.WriteFile(path, []byte(doc), 0o644); err != nil {
		t.Fatal(err)
	}
	r := run(t, opts{}, "run", "--config="+path, "--sandbox-log=verbose", "--", "/bin/echo", "hi")
	for _, want := range []string{"Time limit: 5s", "Memory limit: 100M", "CPU limit: 80%", "Processes: 1", "File descriptors: 100",
		"Max file size: 10M", "Network: proxy (allowed: example.com, api.github.com, *.github.com)",
		"Mount: " + filepath.Join(dir, "input"), "Mount: " + filepath.Join(dir, "output")} {
		if !strings.Contains(r.stderr, want) {
			t.Errorf("verbose log lacks %q\n%s", want, r)
		}
	}
	if r.code != 0 || strings.TrimSpace(r.stdout) != "hi" {
		t.Errorf("exit %d\n%s", r.code, r)
	}
	r = run(t, opts{}, "run", "--config="+path, "--sandbox=strict", "--sandbox-log=verbose", "--", "true")
	if !strings.Contains(r.stderr, "Time limit: 1s") || !strings.Contains(r.stderr, "Network: denied") {
		t.Errorf("the file's strict profile did not apply\n%s", r)
	}
}

func TestConfigErrorsExit2WithWhereAndWhat(t *testing.T) {
	dir := t.TempDir()
	for _, tc := range []struct{ doc, want string }{
		{"[sandbox\n", "bad.toml:1:"},
		{"[sandbox]\nmemory_limt = \"1G\"\n", "bad.toml:2:1: sandbox.memory_limt: unknown key (did you mean memory_limit?)"},
		{"[sandbox]\nprocesses = \"many\"\n", "sandbox.processes"},
		{"[sandbox]\ntime_limit = \"soon\"\n", "time_limit: duration \"soon\""},
		{"[sandbox.profiles.x]\nallow_network = false\nallow_domains = [\"a.test\"]\n", "contradicts"},
	} {
		path := filepath.Join(dir, "bad.toml")
		if err := os.WriteFile(path, []byte(tc.doc), 0o644); err != nil {
			t.Fatal(err)
		}
		r := run(t, opts{}, "run", "--config="+path, "--", "true")
		if r.code != 2 || !strings.Contains(r.stderr, tc.want) {
			t.Errorf("%q: exit %d, want 2 and %q\n%s", tc.doc, r.code, tc.want, r)
		}
	}
	r := run(t, opts{}, "run", "--profile=nosuch", "--", "true")
	if r.code != 2 || !strings.Contains(r.stderr, "known: default, development, strict, testing") {
		t.Errorf("unknown profile: exit %d\n%s", r.code, r)
	}
}

func TestProfilesListAndShow(t *testing.T) {
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "ward.toml"), []byte("[sandbox.profiles.judge]\ntime_limit = \"2s\"\nmemory_limit = \"256M\"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	r := inDir(t, dir, nil, "profiles", "--config=ward.toml")
	for _, want := range []string{"default", "strict", "testing", "development", "judge        time 2s, memory 256M"} {
		if !strings.Contains(r.stdout, want) {
			t.Errorf("ward profiles lacks %q\n%s", want, r)
		}
	}
	r = inDir(t, dir, nil, "profiles", "--config=ward.toml", "show", "judge")
	if !strings.Contains(r.stdout, `time_limit = "2s"`) || !strings.Contains(r.stdout, "[sandbox.filesystem]") {
		t.Errorf("ward profiles show judge\n%s", r)
	}
}

func TestVerifyPassesAndFailsWhenSabotaged(t *testing.T) {
	dir := t.TempDir() // no ward.toml here
	r := inDir(t, dir, nil, "verify")
	if r.code != 0 || !strings.Contains(r.stdout, "0 failing") || strings.Count(r.stdout, "\n") < 16 {
		t.Fatalf("ward verify failed on this host\n%s", r)
	}
	for _, line := range []string{"ok   runs as the user sandbox", "ok   the syscall policy refuses a new user namespace", "ok   a memory limit is enforced"} {
		if !strings.Contains(r.stdout, line) {
			t.Errorf("verify lacks %q\n%s", line, r)
		}
	}
	for id, line := range map[string]string{
		"seccomp": "FAIL the syscall policy refuses a new user namespace",
		"timeout": "FAIL a time limit is enforced",
		"network": "FAIL no network but lo",
	} {
		r := inDir(t, dir, []string{"WARD_VERIFY_SABOTAGE=" + id}, "verify")
		if r.code != 1 || !strings.Contains(r.stdout, line) {
			t.Errorf("sabotaged %s: exit %d, want 1 and %q\n%s", id, r.code, line, r)
		}
	}
}

func TestVersionAndCompletion(t *testing.T) {
	r := run(t, opts{}, "version")
	for _, want := range []string{"commit ", "libseccomp ", "cgroup layout: ", "user namespaces: ", "idmapped mounts: "} {
		if !strings.Contains(r.stdout, want) {
			t.Errorf("ward version lacks %q\n%s", want, r)
		}
	}
	for _, sh := range []string{"bash", "zsh", "fish"} {
		if r := run(t, opts{}, "completion", sh); r.code != 0 || len(r.stdout) < 100 {
			t.Errorf("ward completion %s\n%s", sh, r)
		}
	}
}
