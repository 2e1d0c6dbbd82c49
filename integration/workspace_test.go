package integration

// --workspace=DIR[:ro|rw] (ash's workspace_access, a3s's and meao's
// /workspace) and --env patterns (apcore's APCORE_*).

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
)

// workspaceScript runs in the workspace: where it is, what it sees there,
// how /workspace is mounted, then it makes a file and a directory and tries
// to give them a setuid and a setgid bit.
const workspaceScript = `pwd
cat in.txt
grep ' /workspace ' /proc/self/mounts | cut -d' ' -f4
echo made > out.txt && mkdir sub && echo deep > sub/f && echo WROTE
chmod u+s out.txt 2>/dev/null || echo NO-SETUID
chmod g+s sub 2>/dev/null || echo NO-SETGID
`

// newWorkspace makes a directory holding in.txt, owned by uid:gid.
func newWorkspace(t *testing.T, parent string, uid, gid int) string {
	t.Helper()
	dir := filepath.Join(parent, "ws")
	if err := os.Mkdir(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "in.txt"), []byte("input\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, p := range []string{dir, filepath.Join(dir, "in.txt")} {
		if err := os.Chown(p, uid, gid); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

// checkWorkspaceRun checks what workspaceScript printed and left in dir
// for a caller uid:gid: the workspace was the working directory, mounted
// read-write and nosuid; what the program made is the caller's, with no
// setuid or setgid bit.
func checkWorkspaceRun(t *testing.T, r result, dir string, uid, gid int) {
	t.Helper()
	lines := strings.Split(strings.TrimSpace(r.stdout), "\n")
	if r.code != 0 || len(lines) != 6 || lines[0] != "/workspace" || lines[1] != "input" || lines[3] != "WROTE" ||
		lines[4] != "NO-SETUID" || lines[5] != "NO-SETGID" {
		t.Fatalf("want /workspace as the cwd, in.txt readable, writes allowed, setuid and setgid refused\n%s", r)
	}
	if opts := strings.Split(lines[2], ","); opts[0] != "rw" || !slices.Contains(opts, "nosuid") || !slices.Contains(opts, "nodev") {
		t.Errorf("/workspace is mounted %s, want rw,nosuid,nodev", lines[2])
	}
	for _, p := range []string{"out.txt", "sub", "sub/f"} {
		fi, err := os.Lstat(filepath.Join(dir, p))
		if err != nil {
			t.Fatalf("%s is not in the host's directory: %v", p, err)
		}
		st := fi.Sys().(*syscall.Stat_t)
		if int(st.Uid) != uid || int(st.Gid) != gid || fi.Mode()&(os.ModeSetuid|os.ModeSetgid) != 0 {
			t.Errorf("%s is %d:%d %v on the host, want the caller's %d:%d and no setuid/setgid bit", p, st.Uid, st.Gid, fi.Mode(), uid, gid)
		}
	}
}

// TestWorkspaceBoundAtWorkspaceAsTheCwd: as root, DIR is at /workspace,
// the working directory, and what the program makes there is root's.
func TestWorkspaceBoundAtWorkspaceAsTheCwd(t *testing.T) {
	dir := newWorkspace(t, t.TempDir(), os.Getuid(), os.Getgid())
	r := run(t, opts{}, "run", "--workspace="+dir, "--", "sh", "-c", workspaceScript)
	checkWorkspaceRun(t, r, dir, os.Getuid(), os.Getgid())
	// --workdir says otherwise; the workspace is still there.
	if r := run(t, opts{}, "run", "--workspace="+dir+":rw", "--workdir=/tmp", "--", "sh", "-c", "pwd; cat /workspace/in.txt"); r.stdout != "/tmp\ninput\n" {
		t.Errorf("--workdir=/tmp with a workspace: want /tmp as the cwd and the workspace readable\n%s", r)
	}
	// A --mount beneath the workspace.
	other := t.TempDir()
	if err := os.WriteFile(filepath.Join(other, "o"), []byte("other\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if r := run(t, opts{}, "run", "--workspace="+dir, "--mount="+other+":/workspace/data:ro", "--", "cat", "data/o", "in.txt"); r.stdout != "other\ninput\n" {
		t.Errorf("--mount beneath /workspace\n%s", r)
	}
}

// TestWorkspaceReadOnly: DIR:ro is readable, and no write reaches it.
func TestWorkspaceReadOnly(t *testing.T) {
	dir := newWorkspace(t, t.TempDir(), os.Getuid(), os.Getgid())
	r := run(t, opts{}, "run", "--workspace="+dir+":ro", "--", "sh", "-c", "pwd; cat in.txt; echo x > new.txt || echo REFUSED; rm in.txt || echo REFUSED")
	if !strings.HasPrefix(r.stdout, "/workspace\ninput\nREFUSED\nREFUSED") || !strings.Contains(r.stderr, "Read-only file system") {
		t.Errorf("want the workspace readable and every write refused with EROFS\n%s", r)
	}
	entries, _ := os.ReadDir(dir)
	if len(entries) != 1 || entries[0].Name() != "in.txt" {
		t.Errorf("the read-only workspace changed on the host: %v", entries)
	}
}

// TestWorkspaceBadInputExits2: a missing DIR, a file, and a bad mode are
// refused before anything starts, naming the value.
func TestWorkspaceBadInputExits2(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "file")
	if err := os.WriteFile(file, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	for _, v := range []string{filepath.Join(dir, "missing"), file, dir + ":rx"} {
		if r := run(t, opts{}, "run", "--workspace="+v, "--", "true"); r.code != 2 || !strings.Contains(r.stderr, "--workspace="+v) {
			t.Errorf("--workspace=%s: exit %d, want 2 naming it\n%s", v, r.code, r)
		}
	}
	missing := filepath.Join(dir, "gone")
	if r := run(t, opts{}, "start", "--name="+sandboxName(), "--workspace="+missing); r.code != 2 || !strings.Contains(r.stderr, missing) {
		t.Errorf("ward start --workspace=%s: exit %d, want 2 naming it\n%s", missing, r.code, r)
	}
}

// TestWorkspaceFromTheConfigFile: workspace (relative to the file) and
// workspace_access, and "none" for no workspace.
func TestWorkspaceFromTheConfigFile(t *testing.T) {
	proj := t.TempDir()
	newWorkspace(t, proj, os.Getuid(), os.Getgid())
	conf := filepath.Join(proj, "ward.toml")
	doc := "[sandbox]\nworkspace = \"ws\"\nworkspace_access = \"ro\"\n\n[sandbox.profiles.none]\nworkspace_access = \"none\"\n"
	if err := os.WriteFile(conf, []byte(doc), 0o644); err != nil {
		t.Fatal(err)
	}
	r := run(t, opts{}, "run", "--config="+conf, "--explain", "--", "sh", "-c", "pwd; cat in.txt; touch x || echo REFUSED")
	if r.stdout != "/workspace\ninput\nREFUSED\n" || !strings.Contains(r.stderr, "workspace_access from "+conf) {
		t.Errorf("the file's read-only workspace\n%s", r)
	}
	if r := run(t, opts{}, "run", "--config="+conf, "--profile=none", "--", "sh", "-c", "pwd; ls -d /workspace || echo NONE"); r.stdout != "/home/sandbox\nNONE\n" {
		t.Errorf("workspace_access = \"none\": want no /workspace\n%s", r)
	}
}

// TestWorkspaceRootless: for an ordinary user (both mappings), the
// workspace is bound and the cwd, what the program makes there is the
// user's and never setuid, and :ro holds.
func TestWorkspaceRootless(t *testing.T) {
	forBothMappings(t, func(t *testing.T, u testUser) {
		dir := newWorkspace(t, u.dir, u.uid, u.gid)
		r := u.run(t, opts{}, "run", "--workspace=ws", "--", "sh", "-c", workspaceScript)
		checkWorkspaceRun(t, r, dir, u.uid, u.gid)
		r = u.run(t, opts{}, "run", "--workspace=ws:ro", "--", "sh", "-c", "pwd; cat in.txt; echo x > ro.txt || echo REFUSED")
		if r.stdout != "/workspace\ninput\nREFUSED\n" {
			t.Errorf("--workspace=ws:ro\n%s", r)
		}
		if _, err := os.Stat(filepath.Join(dir, "ro.txt")); err == nil {
			t.Errorf("a write reached the read-only workspace")
		}
		missing := filepath.Join(u.dir, "missing")
		if r := u.run(t, opts{}, "run", "--workspace="+missing, "--", "true"); r.code != 2 || !strings.Contains(r.stderr, "--workspace="+missing) {
			t.Errorf("missing workspace: exit %d, want 2 naming it\n%s", r.code, r)
		}
	})
}

// TestWorkspaceSharedByStartAndExec: ward start --workspace gives every
// ward exec the same workspace, as its working directory (a3s's
// BashSandbox), and what they make there is on the host, the caller's
// once the sandbox stops (where the workspace cannot be idmapped, as /tmp
// on the VM's tmpfs, it is lent to the sandbox user until then).
func TestWorkspaceSharedByStartAndExec(t *testing.T) {
	dir := newWorkspace(t, t.TempDir(), os.Getuid(), os.Getgid())
	name := sandboxName()
	if r := run(t, opts{}, "start", "--name="+name, "--workspace="+dir); r.code != 0 {
		t.Fatalf("start: %s", r)
	}
	t.Cleanup(func() { run(t, opts{}, "stop", name) })
	if r := run(t, opts{}, "exec", name, "--", "sh", "-c", "pwd; echo one > a.txt"); r.code != 0 || r.stdout != "/workspace\n" {
		t.Errorf("first exec: want it in /workspace\n%s", r)
	}
	if r := run(t, opts{}, "exec", name, "--", "sh", "-c", "cat a.txt in.txt; echo two >> a.txt"); r.stdout != "one\ninput\n" {
		t.Errorf("second exec: want the first one's file and the caller's\n%s", r)
	}
	if r := run(t, opts{}, "exec", name, "--workdir=/tmp", "--", "sh", "-c", "pwd; cat /workspace/a.txt"); r.stdout != "/tmp\none\ntwo\n" {
		t.Errorf("exec --workdir=/tmp\n%s", r)
	}
	b, err := os.ReadFile(filepath.Join(dir, "a.txt"))
	if err != nil || string(b) != "one\ntwo\n" {
		t.Errorf("a.txt on the host: %q, %v; want both execs' lines", b, err)
	}
	if r := run(t, opts{}, "stop", name); r.code != 0 {
		t.Errorf("stop: %s", r)
	}
	for _, p := range []string{dir, filepath.Join(dir, "a.txt")} {
		if fi, err := os.Stat(p); err != nil {
			t.Error(err)
		} else if st := fi.Sys().(*syscall.Stat_t); int(st.Uid) != os.Getuid() || int(st.Gid) != os.Getgid() {
			t.Errorf("%s belongs to %d:%d on the host after stop, want the caller's %d:%d", p, st.Uid, st.Gid, os.Getuid(), os.Getgid())
		}
	}
}

// envInside runs `env` in a sandbox and returns its variables.
func envInside(t *testing.T, r result) map[string]string {
	t.Helper()
	if r.code != 0 {
		t.Fatalf("env failed\n%s", r)
	}
	got := map[string]string{}
	for _, line := range strings.Split(strings.TrimRight(r.stdout, "\n"), "\n") {
		k, v, _ := strings.Cut(line, "=")
		got[k] = v
	}
	return got
}

// checkOnlyPassed: the sandbox has ward's base variables, and of the
// caller's others exactly want.
func checkOnlyPassed(t *testing.T, got, want map[string]string) {
	t.Helper()
	base := map[string]bool{"PATH": true, "LANG": true, "LC_ALL": true, "TERM": true, "HOME": true, "TMPDIR": true, "USER": true}
	for k, v := range want {
		if got[k] != v {
			t.Errorf("inside %s=%q, want %q", k, got[k], v)
		}
	}
	for k := range got {
		if _, ok := want[k]; !ok && !base[k] && !strings.HasPrefix(k, "WARD_") {
			t.Errorf("%s entered the sandbox", k)
		}
	}
	if got["HOME"] != "/home/sandbox" || got["USER"] != "sandbox" || got["TMPDIR"] != "/tmp" {
		t.Errorf("ward's own HOME, USER, TMPDIR replaced: %v", got)
	}
}

var patternCallerEnv = []string{"APCORE_EXTENSIONS_ROOT=/ext", "APCORE_LOG=debug", "APCOREX=no", "MY_APCORE_Y=no", "SECRET_TOKEN=s3cr3t", "HOME=/root"}

// TestEnvPatternPassesOnlyMatchingNames: --env 'APCORE_*' passes every
// caller variable whose name matches it, and nothing else enters.
func TestEnvPatternPassesOnlyMatchingNames(t *testing.T) {
	r := run(t, opts{env: patternCallerEnv}, "run", "--env=APCORE_*", "--env=A?CORE_LOG", "--env=X=1", "--", "env")
	checkOnlyPassed(t, envInside(t, r), map[string]string{"APCORE_EXTENSIONS_ROOT": "/ext", "APCORE_LOG": "debug", "X": "1"})
	// "*" passes everything but never replaces HOME, USER or TMPDIR.
	got := envInside(t, run(t, opts{env: patternCallerEnv}, "run", "--env=*", "--", "env"))
	if got["SECRET_TOKEN"] != "s3cr3t" || got["HOME"] != "/home/sandbox" {
		t.Errorf("--env='*': want every caller variable but ward's own: %v", got)
	}
}

// TestEnvInvalidValueExits2: a value that is neither K=V, nor a name, nor a
// pattern is refused, naming it.
func TestEnvInvalidValueExits2(t *testing.T) {
	for _, v := range []string{"APCORE_[", "A B", "APCORE_*,PATH", "=x", "A-B"} {
		if r := run(t, opts{}, "run", "--env="+v, "--", "true"); r.code != 2 || !strings.Contains(r.stderr, "--env="+v) {
			t.Errorf("--env=%s: exit %d, want 2 naming it\n%s", v, r.code, r)
		}
	}
}

// TestEnvPassFromTheConfigFile: env_pass does what --env patterns do; a
// bad entry is exit 2 naming the file and key.
func TestEnvPassFromTheConfigFile(t *testing.T) {
	dir := t.TempDir()
	conf := filepath.Join(dir, "ward.toml")
	if err := os.WriteFile(conf, []byte("[sandbox]\nenv_pass = [\"APCORE_*\"]\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	r := run(t, opts{env: patternCallerEnv}, "run", "--config="+conf, "--env=LATE=1", "--", "env")
	checkOnlyPassed(t, envInside(t, r), map[string]string{"APCORE_EXTENSIONS_ROOT": "/ext", "APCORE_LOG": "debug", "LATE": "1"})
	if err := os.WriteFile(conf, []byte("[sandbox]\nenv_pass = [\"APCORE_[\"]\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if r := run(t, opts{}, "run", "--config="+conf, "--", "true"); r.code != 2 || !strings.Contains(r.stderr, conf) || !strings.Contains(r.stderr, "env_pass") {
		t.Errorf("a bad env_pass: exit %d, want 2 naming the file and the key\n%s", r.code, r)
	}
}
