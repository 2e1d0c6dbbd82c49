package integration

// Regression tests for issue 13's file-system findings (2 and 10) and the
// Landlock layer. Each reproduction failed against da612ca/9767af8.

import (
	"context"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// hostSocket listens on dir/app.sock (mode 0777, as X11's is) and answers
// every connection with HOST-SOCKET, until the test ends.
func hostSocket(t *testing.T, dir string) string {
	t.Helper()
	sock := filepath.Join(dir, "app.sock")
	ln, err := net.Listen("unix", sock)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	if err := os.Chmod(sock, 0o777); err != nil {
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
	return sock
}

// unixConnectProbe is a Python program that tries each path given as an
// argument and prints what it got: HOST-SOCKET, or "refused ERRNO".
const unixConnectProbe = `import socket, sys
for p in sys.argv[1:]:
    s = socket.socket(socket.AF_UNIX)
    try:
        s.connect(p); print(p, s.recv(64).decode().strip())
    except OSError as e:
        print(p, 'refused', e.errno)
`

// TestSourceSwappedForALinkNeverSkipsSocketHiding (finding 2): a sandbox
// that may write a shared directory keeps exchanging one of its
// directories with a symlink to a host directory holding a unix socket,
// while other sandboxes are given that directory (--allow-read). Before,
// ward resolved the path, then cloned it by name and looked for sockets by
// name again: the clone could follow the link while the walk saw the empty
// directory, and the program connected to the host socket (run 11 of the
// review's). Now each source is opened once, refusing symlinks, and
// everything goes through that fd: a run either mounts the directory it
// resolved, with its sockets hidden, or fails naming the link.
func TestSourceSwappedForALinkNeverSkipsSocketHiding(t *testing.T) {
	shared, sockDir := t.TempDir(), t.TempDir()
	sock := hostSocket(t, sockDir)
	sub, stop := filepath.Join(shared, "sub"), filepath.Join(shared, "stop")
	// RENAME_EXCHANGE swaps the two names atomically: sub is always there,
	// a directory or a link to sockDir, flipping every few microseconds.
	racer := `import ctypes, os, sys, time
libc = ctypes.CDLL(None, use_errno=True)
d = sys.argv[1]
os.mkdir(d + '/sub'); os.symlink(sys.argv[2], d + '/alt')
a, b = (d + '/sub').encode(), (d + '/alt').encode()
print('ready', flush=True)
end, n = time.time() + 30, 0
while time.time() < end and not os.path.exists(d + '/stop'):
    for _ in range(200):
        libc.renameat2(-100, a, -100, b, 2)
    n += 200
print('swapped', n)
`
	p := startWard(t, opts{stdin: racer}, "run", "--time-limit=40s", "--allow-write="+shared, "--", "python3", "-", shared, sockDir)
	t.Cleanup(func() { _ = os.WriteFile(stop, nil, 0o644) })
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(10 * time.Millisecond) {
		if _, err := os.Lstat(filepath.Join(shared, "alt")); err == nil {
			break
		}
		if time.Now().After(deadline) || p.exited() {
			t.Fatalf("the racer did not start\n%s", p.wait())
		}
	}
	mounted, refused := 0, 0
	for i := 0; i < 30 && !p.exited(); i++ {
		r := run(t, opts{stdin: unixConnectProbe}, "run", "--allow-read="+sub, "--", "python3", "-", sub+"/app.sock", sock)
		switch r.code {
		case 0:
			mounted++
			if strings.Contains(r.stdout, "HOST-SOCKET") {
				t.Errorf("run %d: the program reached the host socket through a swapped-in link\n%s", i+1, r)
			}
		case 2:
			// Resolving the caller's own path raced with the swap
			// (readlink of what is a directory again by then).
			refused++
		case 71:
			refused++
			if !strings.Contains(r.stderr, "symlink") {
				t.Errorf("run %d: setup failed for another reason\n%s", i+1, r)
			}
		default:
			t.Errorf("run %d: unexpected exit %d\n%s", i+1, r.code, r)
		}
	}
	if err := os.WriteFile(stop, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	rr := p.wait()
	t.Logf("%d runs mounted (socket hidden), %d failed on a swapped-in link; racer: %s", mounted, refused, strings.TrimSpace(rr.stdout))
}

// TestSocketSourceRefusedUnlessAllowed (finding 2): a source that is
// itself a unix socket was bound as is (the walk only looked under
// directories), reachable without --allow-sockets.
func TestSocketSourceRefusedUnlessAllowed(t *testing.T) {
	sock := hostSocket(t, t.TempDir())
	for _, flag := range []string{"--allow-read=" + sock, "--mount=" + sock + ":/tmp/in.sock"} {
		r := run(t, opts{stdin: unixConnectProbe}, "run", flag, "--", "python3", "-", sock, "/tmp/in.sock")
		if strings.Contains(r.stdout, "HOST-SOCKET") {
			t.Errorf("%s: the program reached the host socket without --allow-sockets\n%s", flag, r)
		}
		if r.code != 2 || !strings.Contains(r.stderr, "socket") {
			t.Errorf("%s: exit %d, want 2 saying it is a socket\n%s", flag, r.code, r)
		}
	}
	r := run(t, opts{stdin: unixConnectProbe}, "run", "--allow-read="+sock, "--allow-sockets", "--", "python3", "-", sock)
	if !strings.Contains(r.stdout, "HOST-SOCKET") {
		t.Errorf("--allow-sockets did not let the socket source through\n%s", r)
	}
}

// TestLentDirGivenBackWhenALaterStepFails (finding 10): a writable source
// that cannot be idmapped (ramfs here) is lent to the sandbox user; when a
// later setup step failed (here --overlay-keep on a read-only ramfs, which
// can be neither idmapped nor lent), the lent directory stayed host uid
// 1000001000's. The ramfs mounts live in a private mount namespace of the
// test's own (unshare), on its temp dir, gone when it exits.
func TestLentDirGivenBackWhenALaterStepFails(t *testing.T) {
	needRoot(t)
	if _, err := exec.LookPath("unshare"); err != nil {
		t.Skip("needs unshare (util-linux)")
	}
	d := t.TempDir()
	script := `set -e
mount --make-rprivate /
mount -t ramfs ramfs "$D"
mkdir "$D/out" "$D/keep"
chown 4242:4343 "$D/out"
mount --bind "$D/keep" "$D/keep"
mount -o remount,bind,ro "$D/keep"
set +e
"$WARD" run --allow-write="$D/out" --overlay-keep="$D/keep" -- true
echo "exit $?"
stat -c 'owner %u:%g' "$D/out"
"$WARD" run --allow-write="$D/out" -- sh -c "stat -c 'inside %u' $D/out"
stat -c 'after %u:%g' "$D/out"
`
	cmd := exec.Command("unshare", "--mount", "--propagation", "private", "sh", "-c", script)
	cmd.Env = append(os.Environ(), "D="+d, "WARD="+wardBin)
	out, err := cmd.CombinedOutput()
	s := string(out)
	if err != nil {
		t.Fatalf("%v\n%s", err, s)
	}
	if !strings.Contains(s, "exit 71") {
		t.Fatalf("the overlay-keep step did not fail as staged\n%s", s)
	}
	if !strings.Contains(s, "owner 4242:4343") {
		t.Errorf("the lent directory was not given back after the failed setup\n%s", s)
	}
	if !strings.Contains(s, "inside 1000\n") || !strings.Contains(s, "after 4242:4343") {
		t.Errorf("the lend fallback itself did not work as expected\n%s", s)
	}
}

// landlockABI is this kernel's Landlock ABI version (0: none).
func landlockABI() int {
	r, _, errno := unix.Syscall(unix.SYS_LANDLOCK_CREATE_RULESET, 0, 0, unix.LANDLOCK_CREATE_RULESET_VERSION)
	if errno != 0 {
		return 0
	}
	return int(r)
}

// TestEscapeHardeningFS: the file-system findings and the Landlock layer as
// probes of the escape battery (escape/README.md).
func TestEscapeHardeningFS(t *testing.T) {
	dir := t.TempDir()
	sock := hostSocket(t, dir)
	abi := landlockABI()
	ioctl := []string{"ENOTTY"}
	if abi >= 5 {
		ioctl = []string{"EACCES"}
	}
	cases := []escapeCase{
		{name: "a host socket in an allowed dir is covered", probe: "host_unix_socket.py", flags: []string{"--allow-read=" + dir}, args: []string{sock}, want: []string{"ECONNREFUSED"}},
		{name: "no ioctl on a device opened inside", probe: "landlock_ioctl_dev.py", want: ioctl},
	}
	if abi >= 4 {
		cases = append(cases, escapeCase{name: "proxy mode connects only to the proxy", probe: "landlock_tcp_connect.py",
			flags: []string{"--network=proxy"}, args: []string{"8765"}, want: []string{"EACCES"}})
	} else {
		t.Logf("Landlock ABI %d: no TCP rules (ABI 4+), the proxy-mode connect probe is left out", abi)
	}
	runEscapeCases(t, cases)
}

// TestLandlockLayerReportedAndHoldingAlone: the report and the verbose log
// name the layers; `ward verify`'s Landlock check (a writable mount the
// rules leave out still refuses writes with EACCES) passes, and fails when
// sabotaged (the rules include it). On a kernel without Landlock the log
// says why and verify skips the check.
func TestLandlockLayerReportedAndHoldingAlone(t *testing.T) {
	abi := landlockABI()
	report := filepath.Join(t.TempDir(), "report.json")
	r := run(t, opts{}, "run", "--sandbox-log=verbose", "--report="+report, "--", "true")
	b, err := os.ReadFile(report)
	if err != nil {
		t.Fatalf("%v\n%s", err, r)
	}
	rep := decodeOne(t, "report", string(b))
	layers, _ := rep["layers"].([]any)
	var names []string
	for _, l := range layers {
		names = append(names, fmt.Sprint(l))
	}
	want := []string{"namespaces", "seccomp"}
	if abi > 0 {
		want = append(want, fmt.Sprintf("landlock-abi-%d", abi))
	}
	if strings.Join(names, ",") != strings.Join(want, ",") {
		t.Errorf("report layers %q, want %q", names, want)
	}
	if abi > 0 && !strings.Contains(r.stderr, "Layers: "+strings.Join(want, ", ")+"\n") {
		t.Errorf("the verbose log does not name the layers %q\n%s", want, r)
	}
	if abi == 0 && !strings.Contains(r.stderr, "no Landlock: ") {
		t.Errorf("without Landlock the verbose log does not say why\n%s", r)
	}
	v := run(t, opts{}, "verify")
	line := "ok   Landlock holds on its own, below the mounts"
	if abi == 0 {
		line = "skip Landlock holds on its own, below the mounts: Landlock absent here"
	}
	if !strings.Contains(v.stdout, line) {
		t.Errorf("verify lacks %q\n%s", line, v)
	}
	if abi > 0 {
		s := run(t, opts{env: []string{"WARD_VERIFY_SABOTAGE=landlock"}}, "verify")
		if s.code != 1 || !strings.Contains(s.stdout, "FAIL Landlock holds on its own") {
			t.Errorf("sabotaged (the rules include the mount): exit %d, want 1 and a FAIL\n%s", s.code, s)
		}
	}
}

// TestLandlockKeepsTheCallersStdinReopenable: a host file given as stdin is
// outside the view, yet `cat /dev/stdin` (a reopen through /proc/self/fd)
// worked before Landlock and must still: its own rule lets it through.
func TestLandlockKeepsTheCallersStdinReopenable(t *testing.T) {
	needRoot(t)
	in := filepath.Join(t.TempDir(), "in.txt")
	if err := os.WriteFile(in, []byte("FROM-STDIN\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	f, err := os.Open(in)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	args := []string{"run", "--", "cat", "/dev/stdin"}
	ctx, cancel := context.WithTimeout(context.Background(), safetyTimeout)
	defer cancel()
	cmd := wardCmd(ctx, opts{}, args)
	cmd.Stdin = f
	if r := runCmd(t, ctx, cmd, args); r.code != 0 || r.stdout != "FROM-STDIN\n" {
		t.Errorf("cat /dev/stdin of a host file: exit %d\n%s", r.code, r)
	}
}
