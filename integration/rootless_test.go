package integration

// ward for ordinary users: the same bin/ward, run as a throwaway user the
// test creates (and removes), with no setuid bit and no delegated cgroup
// (this host's cgroup v1 gives an ordinary user none; in the VM, cgroup v2
// does not either unless a test delegates a subtree).

import (
	"context"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
)

// testUser is a throwaway account and a copy of bin/ward it can run.
type testUser struct {
	name     string
	uid, gid int
	ward     string // bin/ward, copied where the user can reach it
	dir      string // a working directory the user owns
	single   bool   // run ward with the single id mapping (WARD_SINGLE_MAPPING)
}

// newTestUser creates a user for this test only; t.Cleanup removes it,
// its files and every process it left.
func newTestUser(t *testing.T) testUser {
	t.Helper()
	needRoot(t)
	name := fmt.Sprintf("wardt%06d", rand.IntN(1000000))
	if out, err := exec.Command("useradd", "--no-create-home", "--shell", "/bin/sh", name).CombinedOutput(); err != nil {
		t.Fatalf("useradd %s: %v\n%s", name, err, out)
	}
	u, err := user.Lookup(name)
	if err != nil {
		t.Fatal(err)
	}
	uid, _ := strconv.Atoi(u.Uid)
	gid, _ := strconv.Atoi(u.Gid)
	t.Cleanup(func() {
		// Only this test's user's processes: none should be left.
		_ = exec.Command("pkill", "-KILL", "-U", strconv.Itoa(uid)).Run()
		if out, err := exec.Command("userdel", name).CombinedOutput(); err != nil {
			t.Errorf("userdel %s: %v\n%s", name, err, out)
		}
		// The state directory ward made for the user's sessions.
		_ = os.RemoveAll(filepath.Join(os.TempDir(), "ward-"+strconv.Itoa(uid)))
	})
	base, err := os.MkdirTemp("", "ward-rootless-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(base) })
	tu := testUser{name: name, uid: uid, gid: gid, ward: filepath.Join(base, "ward"), dir: filepath.Join(base, "work")}
	if err := os.Chmod(base, 0o755); err != nil {
		t.Fatal(err)
	}
	copyFile(t, wardBin, tu.ward, 0o755)
	if err := os.Mkdir(tu.dir, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Chown(tu.dir, uid, gid); err != nil {
		t.Fatal(err)
	}
	return tu
}

func copyFile(t *testing.T, src, dst string, mode os.FileMode) {
	t.Helper()
	in, err := os.Open(src)
	if err != nil {
		t.Fatal(err)
	}
	defer in.Close()
	out, err := os.OpenFile(dst, os.O_CREATE|os.O_WRONLY|os.O_TRUNC, mode)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := io.Copy(out, in); err != nil {
		t.Fatal(err)
	}
	if err := out.Close(); err != nil {
		t.Fatal(err)
	}
}

// run runs the user's ward with args, as the user, in the user's dir.
func (u testUser) run(t *testing.T, o opts, args ...string) result {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), safetyTimeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, u.ward, args...)
	cmd.Dir = u.dir
	cmd.Env = append([]string{"PATH=/usr/local/bin:/usr/bin:/bin", "HOME=" + u.dir, "USER=" + u.name, "LANG=C.UTF-8"}, o.env...)
	if u.single {
		cmd.Env = append(cmd.Env, "WARD_SINGLE_MAPPING=1")
	}
	if o.stdin != "" {
		cmd.Stdin = strings.NewReader(o.stdin)
	}
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: uint32(u.uid), Gid: uint32(u.gid)}}
	return runCmd(t, ctx, cmd, args)
}

// TestRootlessMappings: a user with subordinate ranges (useradd gives
// them) and newuidmap gets the full range, the sandbox user being the
// caller; with the single mapping (no ranges, or WARD_SINGLE_MAPPING) only
// the caller is mapped. Both look the same from inside.
func TestRootlessMappings(t *testing.T) {
	for _, single := range []bool{false, true} {
		t.Run(map[bool]string{false: "full range", true: "single"}[single], func(t *testing.T) {
			u := newTestUser(t)
			u.single = single
			r := u.run(t, opts{}, "run", "--", "cat", "/proc/1/uid_map") // the sandbox's namespace (the init's)
			lines := strings.Split(strings.TrimSpace(r.stdout), "\n")
			caller := fmt.Sprintf("1000 %d 1", u.uid)
			found := false
			for _, l := range lines {
				found = found || strings.Join(strings.Fields(l), " ") == caller
			}
			// Under the single mapping the program reads it from a user
			// namespace of its own (the caller shows as 1000 there too);
			// that files made are the caller's is TestRootlessFilesAndMounts'.
			if single {
				found = len(lines) == 1 && strings.HasPrefix(strings.Join(strings.Fields(lines[0]), " "), "1000 ")
			}
			if r.code != 0 || !found || (single && len(lines) != 1) || (!single && len(lines) != 3) {
				t.Errorf("uid_map: want %q among %d lines\n%s", caller, map[bool]int{false: 3, true: 1}[single], r)
			}
			testInsideView(t, u)
		})
	}
}

// forBothMappings runs check as a fresh user under the full range and
// under the single mapping.
func forBothMappings(t *testing.T, check func(*testing.T, testUser)) {
	for _, single := range []bool{false, true} {
		t.Run(map[bool]string{false: "full range", true: "single"}[single], func(t *testing.T) {
			u := newTestUser(t)
			u.single = single
			check(t, u)
		})
	}
}

// TestRootlessInsideViewIsRoots: an ordinary user's sandbox looks as a
// root caller's does from inside.
func TestRootlessInsideViewIsRoots(t *testing.T) {
	testInsideView(t, newTestUser(t))
}

func testInsideView(t *testing.T, u testUser) {
	t.Helper()
	r := u.run(t, opts{}, "run", "--", "sh", "-c", `id; hostname
for k in CapInh CapPrm CapEff CapBnd CapAmb NoNewPrivs Seccomp; do sed -n "s/^$k:[[:space:]]*/$k=/p" /proc/self/status; done
ip -o link | awk -F': ' '{print "link " $2}'; touch /usr/x 2>/dev/null && echo WROTE-USR; echo x > /tmp/f && echo tmp-ok; echo x > ~/f && echo home-ok; pwd`)
	want := []string{"uid=1000(sandbox) gid=1000(sandbox)", "\nsandbox\n", "CapInh=0000000000000000", "CapPrm=0000000000000000",
		"CapEff=0000000000000000", "CapBnd=0000000000000000", "CapAmb=0000000000000000", "NoNewPrivs=1", "Seccomp=2",
		"link lo\n", "tmp-ok", "home-ok", "/home/sandbox"}
	if r.code != 0 {
		t.Fatalf("exit %d\n%s", r.code, r)
	}
	for _, w := range want {
		if !strings.Contains(r.stdout, w) {
			t.Errorf("stdout lacks %q\n%s", w, r)
		}
	}
	if strings.Contains(r.stdout, "WROTE-USR") {
		t.Errorf("/usr is writable\n%s", r)
	}
}

// TestRootlessLimitsWithoutACgroup: the time limit, processes, file
// descriptors and file size hold without a cgroup; memory is refused (71,
// saying how to get a cgroup) unless --limits=best-effort, and then the
// result says it is held per process.
func TestRootlessLimitsWithoutACgroup(t *testing.T) { forBothMappings(t, testLimitsWithoutACgroup) }

func testLimitsWithoutACgroup(t *testing.T, u testUser) {
	t.Helper()
	if r := u.run(t, opts{}, "run", "--time-limit=1s", "--", "sh", "-c", "while :; do :; done"); r.code != 124 {
		t.Errorf("time limit: exit %d, want 124\n%s", r.code, r)
	}
	forks := "import os, time\nn = 0\nfor i in range(8):\n    try:\n        if os.fork() == 0:\n            time.sleep(2)\n            os._exit(0)\n        n += 1\n" +
		"    except OSError as e:\n        print('errno', e.errno)\n        break\nprint('forked', n)\n"
	if r := u.run(t, opts{stdin: forks}, "run", "--processes=4", "--", "python3", "-"); !strings.Contains(r.stdout, "forked 3") || !strings.Contains(r.stdout, "errno 11") {
		t.Errorf("--processes=4: want 3 children (4 processes) and EAGAIN\n%s", r)
	}
	if r := u.run(t, opts{stdin: "import os\nfds = []\ntry:\n    while True: fds.append(os.open('/dev/null', os.O_RDONLY))\nexcept OSError as e:\n    print('opened', len(fds), 'errno', e.errno)\n"},
		"run", "--file-descriptors=40", "--", "python3", "-"); !strings.Contains(r.stdout, "opened 37 errno 24") {
		t.Errorf("--file-descriptors=40\n%s", r)
	}
	if r := u.run(t, opts{}, "run", "--max-file-size=1M", "--", "sh", "-c", "head -c 2M /dev/zero > /tmp/big; wc -c < /tmp/big"); !strings.Contains(r.stdout, "1048576") {
		t.Errorf("--max-file-size=1M\n%s", r)
	}
	r := u.run(t, opts{}, "run", "--memory-limit=64M", "--", "true")
	if r.code != 71 || !strings.Contains(r.stderr, "--memory-limit needs a cgroup") || !strings.Contains(r.stderr, "--limits=best-effort") || !strings.Contains(r.stderr, "Delegate=yes") {
		t.Errorf("--memory-limit without a cgroup: want 71 naming the flag, delegation and --limits=best-effort\n%s", r)
	}
	if r := u.run(t, opts{}, "run", "--cpu-limit=50", "--limits=best-effort", "--", "true"); r.code != 71 || !strings.Contains(r.stderr, "CPU share") {
		t.Errorf("--cpu-limit without a cgroup is refused even best-effort\n%s", r)
	}
	r = u.run(t, opts{}, "run", "--memory-limit=64M", "--limits=best-effort", "--json", "--", "python3", "-c", "b = bytearray(256 << 20)")
	res := decodeOne(t, "result", r.stdout)
	limits, _ := res["limits"].(map[string]any)
	by, _ := limits["enforced_by"].(map[string]any)
	if r.code == 0 || by["memory_limit_bytes"] != "rlimit-per-process" || by["processes"] != "rlimit-per-user-namespace" {
		t.Errorf("best-effort memory: exit %d, enforced_by %v; want the 256M allocation refused and per-process enforcement named\n%s", r.code, by, r)
	}
}

// TestRootlessSessionsArePerUser: an ordinary user's long-lived sandboxes
// live in their own private state directory; a second user can neither
// list, exec into nor stop them, nor reach their sockets.
func TestRootlessSessionsArePerUser(t *testing.T) {
	alice, bob := newTestUser(t), newTestUser(t)
	name := sandboxName()
	if r := alice.run(t, opts{}, "start", "--name="+name); r.code != 0 {
		t.Fatalf("start: %s", r)
	}
	t.Cleanup(func() { alice.run(t, opts{}, "stop", name) })
	if r := alice.run(t, opts{}, "exec", name, "--", "id", "-un"); r.code != 0 || strings.TrimSpace(r.stdout) != "sandbox" {
		t.Errorf("alice's exec: %s", r)
	}
	if r := alice.run(t, opts{}, "ps"); !strings.Contains(r.stdout, name) {
		t.Errorf("alice's ps lacks her sandbox\n%s", r)
	}
	if r := bob.run(t, opts{}, "ps"); strings.Contains(r.stdout, name) {
		t.Errorf("bob's ps lists alice's sandbox\n%s", r)
	}
	if r := bob.run(t, opts{}, "exec", name, "--", "id"); r.code == 0 {
		t.Errorf("bob exec'd into alice's sandbox\n%s", r)
	}
	if r := bob.run(t, opts{}, "stop", name); r.code == 0 {
		t.Errorf("bob stopped alice's sandbox\n%s", r)
	}
	sock := filepath.Join(os.TempDir(), "ward-"+strconv.Itoa(alice.uid), name, "sock")
	if _, err := os.Stat(sock); err != nil {
		t.Fatalf("alice's socket is not where ward keeps it: %v", err)
	}
	// A plain connect as bob, on the host: a permission check, no attack.
	conn := exec.Command("/usr/bin/python3", "-c", "import socket,sys\ns=socket.socket(socket.AF_UNIX)\ntry:\n    s.connect(sys.argv[1]); print('CONNECTED')\nexcept OSError as e: print('refused', e.errno)", sock)
	conn.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: uint32(bob.uid), Gid: uint32(bob.gid)}}
	if out, err := conn.CombinedOutput(); !strings.Contains(string(out), "refused 13") {
		t.Errorf("bob connecting to alice's socket: %s (%v), want EACCES (13)", out, err)
	}
	if r := alice.run(t, opts{}, "exec", name, "--", "true"); r.code != 0 {
		t.Errorf("alice's sandbox did not survive bob's tries\n%s", r)
	}
}

// TestRootlessFilesAndMounts: --allow-read, --allow-write and --mount work
// for an ordinary user (the init clones the sources), read-only where
// asked, and what the program makes is the caller's, never setuid.
func TestRootlessFilesAndMounts(t *testing.T) { forBothMappings(t, testFilesAndMounts) }

func testFilesAndMounts(t *testing.T, u testUser) {
	t.Helper()
	data := filepath.Join(u.dir, "data")
	if err := os.Mkdir(data, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(data, "in.txt"), []byte("input\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, p := range []string{data, filepath.Join(data, "in.txt")} {
		if err := os.Chown(p, u.uid, u.gid); err != nil {
			t.Fatal(err)
		}
	}
	r := u.run(t, opts{}, "run", "--allow-read=data", "--", "sh", "-c", "cat "+data+"/in.txt; echo x > "+data+"/new && echo WROTE; echo end")
	if !strings.Contains(r.stdout, "input") || strings.Contains(r.stdout, "WROTE") {
		t.Errorf("--allow-read: want the file readable and the dir read-only\n%s", r)
	}
	r = u.run(t, opts{}, "run", "--allow-write="+data, "--", "sh", "-c", "echo made > "+data+"/out.txt; chmod 4755 "+data+"/out.txt; echo end")
	if r.code != 0 {
		t.Errorf("--allow-write: %s", r)
	}
	fi, err := os.Stat(filepath.Join(data, "out.txt"))
	if err != nil {
		t.Fatalf("the file the program made is not on the host: %v", err)
	}
	if st := fi.Sys().(*syscall.Stat_t); int(st.Uid) != u.uid || int(st.Gid) != u.gid || fi.Mode()&os.ModeSetuid != 0 {
		t.Errorf("out.txt is %d:%d %v, want the caller's %d:%d and no setuid", st.Uid, st.Gid, fi.Mode(), u.uid, u.gid)
	}
	if r := u.run(t, opts{}, "run", "--mount="+data+":/data:ro", "--", "cat", "/data/in.txt"); strings.TrimSpace(r.stdout) != "input" {
		t.Errorf("--mount: %s", r)
	}
}

// TestRootlessVerifySaysWhatThisHostGives: ward verify, as an ordinary
// user on a host that gives them no cgroup, passes what holds and says how
// to get the rest.
func TestRootlessVerifySaysWhatThisHostGives(t *testing.T) {
	u := newTestUser(t)
	r := u.run(t, opts{}, "verify")
	if r.code != 0 || !strings.Contains(r.stdout, "0 failing") {
		t.Fatalf("verify as an ordinary user: %s", r)
	}
	if r.code == 0 && strings.Contains(r.stdout, "skip a memory limit is enforced") && !strings.Contains(r.stdout, "Delegate=yes") {
		t.Errorf("verify skips the memory limit without saying how to get a cgroup\n%s", r)
	}
}

// TestRootlessDelegatedCgroupV2: an ordinary user whose cgroup v2 subtree
// is delegated to them (as systemd's Delegate=yes leaves it: the directory
// and its cgroup.procs, cgroup.subtree_control and cgroup.threads are
// theirs) gets every limit as root does: memory 125, CPU time 124, and
// the cgroup's figures in the result.
func TestRootlessDelegatedCgroupV2(t *testing.T) {
	needCgroupV2(t)
	u := newTestUser(t)
	// As the user, in a cgroup delegated to them (a fresh one each time:
	// ward turns the one it finds into an inner node): root moves the
	// shell there before it execs ward.
	inDelegated := func(args ...string) result {
		dir := delegatedCgroup(t)
		for _, f := range []string{"", "cgroup.procs", "cgroup.subtree_control", "cgroup.threads"} {
			if err := os.Chown(filepath.Join(dir, f), u.uid, u.gid); err != nil {
				t.Fatal(err)
			}
		}
		ctx, cancel := context.WithTimeout(context.Background(), safetyTimeout)
		defer cancel()
		cmd := exec.CommandContext(ctx, "sh", append([]string{"-c", `read go; exec "$@"`, "sh", u.ward}, args...)...)
		cmd.Dir = u.dir
		cmd.Env = []string{"PATH=/usr/local/bin:/usr/bin:/bin", "HOME=" + u.dir}
		cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: uint32(u.uid), Gid: uint32(u.gid)}}
		in, err := cmd.StdinPipe()
		if err != nil {
			t.Fatal(err)
		}
		var out, errb strings.Builder
		cmd.Stdout, cmd.Stderr = &out, &errb
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, "cgroup.procs"), []byte(strconv.Itoa(cmd.Process.Pid)), 0); err != nil {
			t.Fatal(err)
		}
		_, _ = io.WriteString(in, "go\n")
		in.Close()
		err = cmd.Wait()
		return result{stdout: out.String(), stderr: errb.String(), code: exitCode(cmd, err)}
	}
	r := inDelegated("run", "--memory-limit=64M", "--json", "--", "tail", "/dev/zero")
	res := decodeOne(t, "result", r.stdout)
	limits, _ := res["limits"].(map[string]any)
	by, _ := limits["enforced_by"].(map[string]any)
	if r.code != 125 || res["status"] != "memory" || by["memory_limit_bytes"] != "cgroup" {
		t.Errorf("memory hog in a delegated cgroup: exit %d, status %v, enforced_by %v; want 125, memory, cgroup\n%s", r.code, res["status"], by, r)
	}
	if res["memory_peak_bytes"] == nil || res["processes_peak"] == nil || res["cpu_time_ms"] == nil {
		t.Errorf("no cgroup figures in the result: %v", res)
	}
	if r := inDelegated("run", "--cpu-time-limit=1s", "--", "sh", "-c", "while :; do :; done"); r.code != 124 {
		t.Errorf("CPU time limit in a delegated cgroup: exit %d, want 124\n%s", r.code, r)
	}
}

// TestUserNamespacesBlockedSaysWhyAndTheFix: with user namespaces off
// (user.max_user_namespaces=0), ward exits 71 naming the knob and the fix.
// It changes a host-wide sysctl for a moment, so it runs in the test VM
// (WARD_VM), never on a developer's machine.
func TestUserNamespacesBlockedSaysWhyAndTheFix(t *testing.T) {
	needRoot(t)
	if os.Getenv("WARD_VM") == "" {
		t.Skip("sets user.max_user_namespaces=0 host-wide for a moment: runs in the cgroup-v2 VM suite only")
	}
	const knob = "/proc/sys/user/max_user_namespaces"
	old, err := os.ReadFile(knob)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(knob, []byte("0"), 0); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := os.WriteFile(knob, old, 0); err != nil {
			t.Errorf("restore %s: %v", knob, err)
		}
	})
	r := run(t, opts{}, "run", "--", "true")
	if r.code != 71 || !strings.Contains(r.stderr, "user.max_user_namespaces is 0") || !strings.Contains(r.stderr, "sysctl -w") {
		t.Errorf("exit %d, want 71 naming user.max_user_namespaces and the fix\n%s", r.code, r)
	}
}

// TestNestedWardOnlyWithAllowNested: the program of a sandbox can run ward
// itself only when the outer one is given --allow-nested; without it the
// inner ward exits 71 naming seccomp and the flag.
func TestNestedWardOnlyWithAllowNested(t *testing.T) {
	needRoot(t)
	mount := "--mount=" + wardBin + ":/opt/ward:ro"
	r := run(t, opts{}, "run", "--allow-nested", mount, "--", "/opt/ward", "run", "--", "id", "-u")
	if r.code != 0 || strings.TrimSpace(r.stdout) != "1000" {
		t.Errorf("ward inside ward with --allow-nested: want 1000\n%s", r)
	}
	r = run(t, opts{}, "run", mount, "--", "/opt/ward", "run", "--", "id", "-u")
	if r.code != 71 || !strings.Contains(r.stderr, "seccomp") || !strings.Contains(r.stderr, "--allow-nested") {
		t.Errorf("ward inside ward without --allow-nested: want 71 naming seccomp and --allow-nested\n%s", r)
	}
	// An ordinary user's sandbox may hold one too.
	u := newTestUser(t)
	r = u.run(t, opts{}, "run", "--allow-nested", "--mount="+u.ward+":/opt/ward:ro", "--", "/opt/ward", "run", "--", "id", "-u")
	if r.code != 0 || strings.TrimSpace(r.stdout) != "1000" {
		t.Errorf("nested under an ordinary user: want 1000\n%s", r)
	}
}

// TestRootlessEscapeBattery runs the escape battery's probes as an
// ordinary user's sandbox: all contained, as for root.
func TestRootlessEscapeBattery(t *testing.T) {
	u := newTestUser(t)
	escapeRun = u.run
	t.Cleanup(func() { escapeRun = run })
	for name, f := range map[string]func(*testing.T){
		"seccomp": TestEscapeSeccompDenied, "filesystem and proc": TestEscapeFilesystemAndProc,
		"namespaces": TestEscapeNamespaces, "privileges": TestEscapePrivileges,
	} {
		t.Run(name, f)
	}
}

// TestRootlessOverlayKeepCopiesWhatTheProgramLeftUnreadable: rootless,
// ward copies the overlay's changes without capabilities; a file the
// program left at 000 and a directory it closed (000) are the caller's
// own and are copied all the same, the whole copy not failed.
func TestRootlessOverlayKeepCopiesWhatTheProgramLeftUnreadable(t *testing.T) {
	forBothMappings(t, func(t *testing.T, u testUser) {
		keep := filepath.Join(u.dir, "keep")
		if err := os.Mkdir(keep, 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.Chown(keep, u.uid, u.gid); err != nil {
			t.Fatal(err)
		}
		r := u.run(t, opts{}, "run", "--overlay-keep="+keep, "--", "sh", "-c",
			"mkdir -p /usr/ward-k/d && echo secret > /usr/ward-k/f && echo inner > /usr/ward-k/d/g && chmod 000 /usr/ward-k/f /usr/ward-k/d")
		if r.code != 0 || strings.Contains(r.stderr, "--overlay-keep=") {
			t.Fatalf("exit %d, or the copy failed\n%s", r.code, r)
		}
		for name, want := range map[string]string{"usr/ward-k/f": "secret\n", "usr/ward-k/d/g": "inner\n"} {
			if b, err := os.ReadFile(filepath.Join(keep, name)); err != nil || string(b) != want {
				t.Errorf("%s: %q, %v; want %q\n%s", name, b, err, want, r)
			}
		}
	})
}
