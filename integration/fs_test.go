package integration

import (
	"net"
	"os"
	"path/filepath"
	"strings"
	"syscall"
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

func TestAllowWritePersistsAndFilesBelongToTheCaller(t *testing.T) {
	dir := t.TempDir()
	r := run(t, opts{}, "run", "--allow-write="+dir, "--", "sh", "-c", "echo out > "+dir+"/result && mkdir "+dir+"/sub && echo in > "+dir+"/sub/f && id -u")
	if r.code != 0 || strings.TrimSpace(r.stdout) != "1000" {
		t.Fatalf("exit %d\n%s", r.code, r)
	}
	for _, p := range []string{"result", "sub", "sub/f"} {
		fi, err := os.Lstat(filepath.Join(dir, p))
		if err != nil {
			t.Fatalf("%s not written to the host: %v", p, err)
		}
		st := fi.Sys().(*syscall.Stat_t)
		if int(st.Uid) != os.Getuid() || int(st.Gid) != os.Getgid() {
			t.Errorf("%s belongs to %d:%d on the host, want the caller %d:%d", p, st.Uid, st.Gid, os.Getuid(), os.Getgid())
		}
	}
}

// TestAllowWriteChownToAnotherUserIsEPERM: giving a file away fails as it
// does for any unprivileged user, with EPERM, not with the idmapped mount's
// EOVERFLOW (libuv's fs_chown test, docs/corpus.md); to itself it works.
func TestAllowWriteChownToAnotherUserIsEPERM(t *testing.T) {
	dir := t.TempDir()
	r := run(t, opts{}, "run", "--allow-write="+dir, "--", "python3", "-c", `import os, sys
p = sys.argv[1] + "/f"
open(p, "w").close()
os.chown(p, 1000, 1000)
for uid, gid in ((0, -1), (-1, 0), (5, -1), (65534, -1)):
    try:
        os.chown(p, uid, gid)
        print(uid, gid, "chowned")
    except OSError as e:
        print(uid, gid, e.errno)
`, dir)
	if want := "0 -1 1\n-1 0 1\n5 -1 1\n65534 -1 1\n"; r.code != 0 || r.stdout != want {
		t.Errorf("chown inside an --allow-write dir printed %q, want %q (errno 1, EPERM, each time)\n%s", r.stdout, want, r)
	}
}

func TestMountAtChosenPathsReadOnlyAndReadWrite(t *testing.T) {
	in, out := t.TempDir(), t.TempDir()
	if err := os.WriteFile(filepath.Join(in, "input"), []byte("from-host\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	r := run(t, opts{}, "run", "--mount="+in+":/data", "--mount="+out+":/results:rw", "--",
		"sh", "-c", "cat /data/input; touch /data/x 2>&1; cp /data/input /results/copy && echo copied")
	if !strings.Contains(r.stdout, "from-host") || !strings.Contains(r.stdout, "Read-only file system") || !strings.Contains(r.stdout, "copied") {
		t.Errorf("--mount ro/rw did not behave\n%s", r)
	}
	if b, err := os.ReadFile(filepath.Join(out, "copy")); err != nil || string(b) != "from-host\n" {
		t.Errorf("the rw mount's write did not reach the host: %q %v", b, err)
	}
}

func TestMountRefusesSystemTargetsAndBadSyntax(t *testing.T) {
	src := t.TempDir()
	for _, tc := range []struct{ value, want string }{
		{src + ":/usr", "would cover the system directory /usr"},
		{src + ":/proc", "would cover the system directory /proc"},
		{src + ":/", "would cover the system directory"},
		{src + ":/dev/x", "inside /dev"},
		{src + ":relative", "absolute"},
		{src + ":/data:rx", "want ro or rw"},
		{src, "SRC:DST"},
		{"/nonexistent-ward-src:/data", "no such file"},
	} {
		r := run(t, opts{}, "run", "--mount="+tc.value, "--", "true")
		if r.code != 2 || !strings.Contains(r.stderr, "--mount=") || !strings.Contains(r.stderr, tc.want) {
			t.Errorf("--mount=%s: exit %d, want 2 with %q\n%s", tc.value, r.code, tc.want, r)
		}
	}
}

func TestVirtualFSShowsOnlyMountTargetsAndRunsPython(t *testing.T) {
	dir := t.TempDir()
	r := run(t, opts{}, "run", "--virtual-fs", "--allow-read="+dir, "--mount="+dir+":/sandbox/data", "--",
		"sh", "-c", "test -e "+dir+" && echo allow-path-visible; test -d /sandbox/data && echo mount-visible; python3 -c 'print(6*7)'")
	if strings.Contains(r.stdout, "allow-path-visible") || !strings.Contains(r.stdout, "mount-visible") || !strings.Contains(r.stdout, "42") {
		t.Errorf("--virtual-fs view is wrong\n%s", r)
	}
}

func TestLinkEscapesFromAWritableDirFail(t *testing.T) {
	dir := t.TempDir()
	secret := filepath.Join(t.TempDir(), "host-secret")
	if err := os.WriteFile(secret, []byte("TOPSECRET\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	// A link planted on the host points outside the allowed dir.
	if err := os.Symlink(secret, filepath.Join(dir, "planted")); err != nil {
		t.Fatal(err)
	}
	r := run(t, opts{}, "run", "--allow-write="+dir, "--", "sh", "-c",
		"cat "+dir+"/planted; ln -s "+secret+" "+dir+"/mine && cat "+dir+"/mine; ln /etc/passwd "+dir+"/hard; echo done")
	if strings.Contains(r.stdout, "TOPSECRET") {
		t.Errorf("a symlink reached a host file outside the allow list\n%s", r)
	}
	if !strings.Contains(r.stderr, "Invalid cross-device link") {
		t.Errorf("a hard link to another mount's file did not fail with EXDEV\n%s", r)
	}
}

func TestMaxFilesStopsThe21stFile(t *testing.T) {
	r := run(t, opts{}, "run", "--max-files=20", "--", "sh", "-c",
		"i=1; while [ $i -le 30 ]; do touch /tmp/f$i 2>/dev/null || { echo stopped at $i; break; }; i=$((i+1)); done")
	if strings.TrimSpace(r.stdout) != "stopped at 21" {
		t.Errorf("want the 21st file refused\n%s", r)
	}
}

func TestDenyPatternHidesWhatItMatches(t *testing.T) {
	r := run(t, opts{}, "run", "--deny-pattern=/etc/*", "--", "sh", "-c",
		"wc -c < /etc/hostname; wc -c < /etc/os-release; ls /etc/ssl | wc -l; id -un")
	got := strings.Fields(r.stdout)
	if r.code != 0 || len(got) != 4 || got[0] != "0" || got[1] != "0" || got[2] != "0" || got[3] != "sandbox" {
		t.Errorf("want /etc/hostname, /etc/os-release (a link) and /etc/ssl emptied, the user still known\n%s", r)
	}
}

func TestHostSocketsHiddenUnlessAllowed(t *testing.T) {
	dir := t.TempDir()
	sock := filepath.Join(dir, "app.sock")
	ln, err := net.Listen("unix", sock)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	if err := os.Chmod(sock, 0o777); err != nil { // as X11's socket is
		t.Fatal(err)
	}
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			_, _ = c.Write([]byte("HOST-SOCKET\n"))
			c.Close()
		}
	}()
	probe := "import socket\ns = socket.socket(socket.AF_UNIX)\ntry:\n    s.connect('" + sock + "'); print(s.recv(64).decode().strip())\nexcept OSError as e:\n    print('refused', e.errno)\n"
	if r := run(t, opts{stdin: probe}, "run", "--allow-read="+dir, "--", "python3", "-"); strings.Contains(r.stdout, "HOST-SOCKET") {
		t.Errorf("a host socket in an allowed dir was reachable without --allow-sockets\n%s", r)
	}
	if r := run(t, opts{stdin: probe}, "run", "--allow-read="+dir, "--allow-sockets", "--", "python3", "-"); !strings.Contains(r.stdout, "HOST-SOCKET") {
		t.Errorf("--allow-sockets did not let the socket through\n%s", r)
	}
}

func TestWorkdirMustExistInside(t *testing.T) {
	r := run(t, opts{}, "run", "--workdir=/no/such/dir", "--", "true")
	if r.code != 2 || !strings.Contains(r.stderr, "--workdir=/no/such/dir") {
		t.Errorf("exit %d, want 2 naming --workdir\n%s", r.code, r)
	}
	dir := t.TempDir()
	if r := run(t, opts{}, "run", "--allow-write="+dir, "--workdir="+dir, "--", "pwd"); strings.TrimSpace(r.stdout) != dir {
		t.Errorf("--workdir in an allowed dir: %s", r)
	}
}

func TestMinimalDevAndProc(t *testing.T) {
	r := run(t, opts{}, "run", "--", "sh", "-c", "ls /dev; ls /sys 2>&1; head -c 16 /proc/kcore 2>/dev/null | wc -c")
	for _, bad := range []string{"sda", "vda", "nvme", "mem\n", "kmsg", "port"} {
		if strings.Contains(r.stdout, bad) {
			t.Errorf("/dev shows %q\n%s", bad, r)
		}
	}
	if !strings.Contains(r.stdout, "No such file or directory") {
		t.Errorf("/sys is visible\n%s", r)
	}
	if !strings.HasSuffix(strings.TrimSpace(r.stdout), "0") {
		t.Errorf("/proc/kcore gave bytes\n%s", r)
	}
}

// TestMountTargetRaceNeverRedirects: one sandbox keeps swapping a directory
// for a symlink (to /etc, and to a host path) inside a writable dir it
// shares with other sandboxes that mount onto that directory while it
// swaps. A mount either lands at the real directory or setup fails; it
// never lands where a link points.
func TestMountTargetRaceNeverRedirects(t *testing.T) {
	shared, src := t.TempDir(), t.TempDir()
	if err := os.WriteFile(filepath.Join(src, "marker"), []byte("MOUNTED\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	swapper := `end=$(( $(date +%s) + 4 ))
while [ $(date +%s) -lt $end ]; do
  rm -rf ` + shared + `/sub; mkdir ` + shared + `/sub
  rm -rf ` + shared + `/sub; ln -s /etc ` + shared + `/sub
  rm -rf ` + shared + `/sub; ln -s ` + src + ` ` + shared + `/sub
done; echo swapped`
	p := startWard(t, opts{}, "run", "--allow-write="+shared, "--", "sh", "-c", swapper)
	mounted, failed := 0, 0
	for i := 0; i < 15 && !p.exited(); i++ {
		r := run(t, opts{}, "run", "--allow-write="+shared, "--mount="+src+":"+shared+"/sub", "--",
			"sh", "-c", "cat /etc/hostname; cat "+shared+"/sub/marker 2>/dev/null")
		switch r.code {
		case 0, 1: // 1: mounted, then the swapper removed the directory under it
			mounted++
			if !strings.HasPrefix(r.stdout, "sandbox\n") {
				t.Errorf("the mount landed on /etc through a planted link\n%s", r)
			}
		case 71:
			failed++
			if !strings.Contains(r.stderr, "mount point") {
				t.Errorf("setup failed for another reason\n%s", r)
			}
		default:
			t.Errorf("unexpected exit %d\n%s", r.code, r)
		}
	}
	p.wait()
	t.Logf("%d sandboxes mounted, %d refused a planted link", mounted, failed)
	if b, err := os.ReadFile("/etc/hostname"); err != nil || strings.Contains(string(b), "MOUNTED") {
		t.Errorf("the host's /etc changed: %q %v", b, err)
	}
}

// TestOverlayMakesTheSystemWritableAndLeavesTheHostAlone: with --overlay,
// writes to /usr, /etc and / succeed inside and vanish at exit.
func TestOverlayMakesTheSystemWritableAndLeavesTheHostAlone(t *testing.T) {
	name := "ward-overlay-test-" + uniqueArg()
	hostsBefore, err := os.ReadFile("/etc/hosts")
	if err != nil {
		t.Fatal(err)
	}
	r := run(t, opts{}, "run", "--overlay", "--", "sh", "-c",
		"touch /usr/"+name+" && echo usr-ok; echo '10.203.9.9 "+name+"' >> /etc/hosts && grep -c "+name+" /etc/hosts; touch /"+name+" && echo root-ok; python3 -c 'print(42)'")
	for _, want := range []string{"usr-ok", "\n1\n", "root-ok", "42"} {
		if !strings.Contains(r.stdout, want) {
			t.Errorf("stdout lacks %q\n%s", want, r)
		}
	}
	for _, p := range []string{"/usr/" + name, "/" + name} {
		if _, err := os.Lstat(p); err == nil {
			t.Errorf("%s exists on the host after an --overlay run", p)
			_ = os.Remove(p)
		}
	}
	if after, _ := os.ReadFile("/etc/hosts"); string(after) != string(hostsBefore) {
		t.Errorf("the host's /etc/hosts changed")
	}
	if r := run(t, opts{}, "run", "--", "touch", "/usr/"+name); r.code == 0 {
		t.Errorf("without --overlay /usr is writable\n%s", r)
	}
}

// TestOverlayChangesExistingSystemFiles: where the system dirs can be
// idmapped (ext4 and the like; not 9p, over which the cgroup-v2 VM shares
// /usr), even host root's files can be changed, inside only.
func TestOverlayChangesExistingSystemFiles(t *testing.T) {
	before, err := os.ReadFile("/usr/share/common-licenses/GPL-3")
	if err != nil {
		t.Skipf("no /usr/share/common-licenses/GPL-3 on this host: %v", err)
	}
	r := run(t, opts{}, "run", "--overlay", "--sandbox-log=verbose", "--", "sh", "-c", "echo APPENDED >> /usr/share/common-licenses/GPL-3 && tail -1 /usr/share/common-licenses/GPL-3")
	if strings.Contains(r.stderr, "cannot be idmapped") {
		// ward says so; the file system lacks the feature (9p in the VM).
		t.Skipf("/usr cannot be idmapped on this host, so existing files stay read-only under --overlay:\n%s", r.stderr)
	}
	if strings.TrimSpace(r.stdout) != "APPENDED" {
		t.Errorf("could not change an existing system file under --overlay\n%s", r)
	}
	if after, _ := os.ReadFile("/usr/share/common-licenses/GPL-3"); string(after) != string(before) {
		t.Errorf("the host's file changed")
	}
}

// TestOverlayKeepCopiesTheChangesToTheCaller: --overlay-keep=DIR receives
// what the program changed (new files, and the list of what it deleted),
// owned by the caller; the host's system stays as it was.
func TestOverlayKeepCopiesTheChangesToTheCaller(t *testing.T) {
	keep := t.TempDir()
	name := "ward-keep-" + uniqueArg()
	r := run(t, opts{}, "run", "--overlay-keep="+keep, "--", "sh", "-c",
		"mkdir -p /usr/"+name+"/sub && echo kept > /usr/"+name+"/sub/f && ln -s f /usr/"+name+"/sub/l")
	if r.code != 0 {
		t.Fatalf("exit %d\n%s", r.code, r)
	}
	for _, p := range []string{"usr/" + name + "/sub/f", "usr/" + name + "/sub/l"} {
		fi, err := os.Lstat(filepath.Join(keep, p))
		if err != nil {
			t.Errorf("%s not kept: %v\n%s", p, err, r)
			continue
		}
		if st := fi.Sys().(*syscall.Stat_t); int(st.Uid) != os.Getuid() {
			t.Errorf("%s kept as uid %d, want the caller %d", p, st.Uid, os.Getuid())
		}
	}
	if _, err := os.Lstat("/usr/" + name); err == nil {
		t.Errorf("the change reached the host's /usr")
	}
	if err := os.WriteFile(filepath.Join(keep, "x"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	if r := run(t, opts{}, "run", "--overlay-keep="+keep, "--", "true"); r.code != 2 || !strings.Contains(r.stderr, "--overlay-keep=") {
		t.Errorf("a non-empty --overlay-keep dir must be refused with 2\n%s", r)
	}
}

// TestOverlayKeepInsideAWritablePathIsRefused: an --overlay-keep directory
// the sandbox could write (inside the workspace or an --allow-write path,
// or one of them itself) would let the program plant links for ward to
// write through when it copies the changes there; it is refused with 2
// before anything runs.
func TestOverlayKeepInsideAWritablePathIsRefused(t *testing.T) {
	ws, aw, same := t.TempDir(), t.TempDir(), t.TempDir()
	for _, d := range []string{filepath.Join(ws, "keep"), filepath.Join(aw, "keep")} {
		if err := os.Mkdir(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	for _, tc := range []struct {
		name string
		args []string
	}{
		{"inside the workspace", []string{"--workspace=" + ws, "--overlay-keep=" + ws + "/keep"}},
		{"inside --allow-write", []string{"--allow-write=" + aw, "--overlay-keep=" + aw + "/keep"}},
		{"the --allow-write path itself", []string{"--allow-write=" + same, "--overlay-keep=" + same}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := run(t, opts{}, append(append([]string{"run"}, tc.args...), "--", "true")...)
			if r.code != 2 || !strings.Contains(r.stderr, "--overlay-keep=") || !strings.Contains(r.stderr, "overlaps") {
				t.Errorf("want exit 2 naming --overlay-keep and the overlap\n%s", r)
			}
		})
	}
}
