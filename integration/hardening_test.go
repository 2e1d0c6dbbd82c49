package integration

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// The findings of the security review of da612ca, each a probe that the
// sandbox must contain (escape/README.md lists them with the others).

// setIDWays are the syscalls that set a mode, each a case of setid_mode.py.
var setIDWays = []string{"chmod", "chmod-setgid", "fchmod", "fchmodat", "fchmodat2", "open", "openat",
	"openat-tmpfile", "creat", "mkdir", "mkdirat", "mknod"}

// TestHardeningNoSetIDFileReachesTheHost: whatever the syscall policy and
// whichever writable host path, nothing the program makes there is setuid
// or setgid (for a root caller it would be setuid root on the host).
func TestHardeningNoSetIDFileReachesTheHost(t *testing.T) {
	needRoot(t)
	// A JSON profile that allows everything: the setuid/setgid filter
	// must hold on its own.
	allowAll := filepath.Join(t.TempDir(), "allow-all.json")
	if err := os.WriteFile(allowAll, []byte(`{"defaultAction": "SCMP_ACT_ALLOW"}`), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, policy := range []string{"default", "unconfined", "allow-all.json"} {
		for _, path := range []string{"allow-write", "mount-rw"} {
			t.Run(policy+" "+path, func(t *testing.T) {
				dir := t.TempDir()
				if err := os.Chmod(dir, 0o777); err != nil {
					t.Fatal(err)
				}
				inside, flags := dir, []string{"--allow-write=" + dir}
				if path == "mount-rw" {
					inside, flags = "/mnt", []string{"--mount=" + dir + ":/mnt:rw"}
				}
				seccompFlag := "--seccomp=" + policy
				if strings.HasSuffix(policy, ".json") {
					seccompFlag = "--seccomp=" + allowAll
				}
				var cases []escapeCase
				for _, how := range setIDWays {
					cases = append(cases, escapeCase{name: how + " with a setuid or setgid bit is denied", probe: "setid_mode.py",
						flags: append([]string{seccompFlag}, flags...), args: []string{inside, how}, want: []string{"EPERM"}})
				}
				runEscapeCases(t, cases)
				// And the shell's way, the review's reproduction.
				r := run(t, opts{}, append(append([]string{"run", seccompFlag}, flags...), "--", "sh", "-c",
					`cp /bin/true `+inside+`/e; chmod 6755 `+inside+`/e; ls -l `+inside+`/e`)...)
				if !strings.Contains(r.stderr, "Operation not permitted") {
					t.Errorf("chmod 6755 was not refused\n%s", r)
				}
				noSetIDFiles(t, dir)
			})
		}
	}
}

// noSetIDFiles fails for any setuid or setgid file or directory under dir.
func noSetIDFiles(t *testing.T, dir string) {
	t.Helper()
	_ = filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return nil
		}
		if fi, err := os.Lstat(p); err == nil && fi.Mode()&(os.ModeSetuid|os.ModeSetgid) != 0 && p != dir {
			t.Errorf("the sandbox left %s on the host with mode %v", p, fi.Mode())
		}
		return nil
	})
}

// TestHardeningOpenat2IsUnusable: its mode is out of a filter's reach.
func TestHardeningOpenat2IsUnusable(t *testing.T) {
	for _, policy := range []string{"default", "unconfined"} {
		runEscapeCases(t, []escapeCase{{name: "openat2 under " + policy + " fails with ENOSYS", probe: "openat2.py",
			flags: []string{"--seccomp=" + policy}, want: []string{"ENOSYS"}}})
	}
}

// TestHardeningStrictNeverWrites: --seccomp=strict refuses every open
// flavour that could write, the legacy open(2) and O_TRUNC included.
func TestHardeningStrictNeverWrites(t *testing.T) {
	needRoot(t)
	dir := t.TempDir()
	file := filepath.Join(dir, "keep.txt")
	if err := os.WriteFile(file, []byte("intact\n"), 0o666); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(dir, 0o777); err != nil {
		t.Fatal(err)
	}
	var cases []escapeCase
	for _, how := range []string{"open-wronly", "open-rdwr", "openat-trunc", "open-trunc"} {
		cases = append(cases, escapeCase{name: how + " is denied", probe: "strict_write.py",
			flags: []string{"--seccomp=strict", "--allow-write=" + dir}, args: []string{file, how}, want: []string{"EPERM"}})
	}
	runEscapeCases(t, cases)
	if b, err := os.ReadFile(file); err != nil || string(b) != "intact\n" {
		t.Errorf("the file under --seccomp=strict holds %q (err %v), want it intact", b, err)
	}
}

// TestHardeningSocketFamiliesAllowList: only UNIX, INET, INET6 and NETLINK
// sockets; every other family (and SCTP) is refused by the policy, EPERM,
// whatever modules the kernel has.
func TestHardeningSocketFamiliesAllowList(t *testing.T) {
	var cases []escapeCase
	for _, c := range []struct{ name, fam, typ, proto string }{
		{"AF_X25", "9", "5", "0"}, {"AF_RDS", "21", "5", "0"}, {"AF_CAN", "29", "3", "1"}, {"AF_TIPC", "30", "5", "0"},
		{"AF_BLUETOOTH", "31", "3", "1"}, {"AF_NFC", "39", "5", "0"}, {"AF_KCM", "41", "2", "0"}, {"AF_SMC", "43", "1", "0"},
		{"AF_APPLETALK", "5", "2", "0"}, {"AF_UNSPEC", "0", "1", "0"},
		{"SCTP over INET", "2", "1", "132"}, {"SCTP over INET6", "10", "5", "132"}, {"SOCK_SEQPACKET over INET", "2", "5", "0"},
	} {
		cases = append(cases, escapeCase{name: "socket " + c.name + " is denied with EPERM", probe: "socket_family.py",
			args: []string{c.fam, c.typ, c.proto}, want: []string{"EPERM"}})
	}
	runEscapeCases(t, cases)
}

// TestHardeningExecLeavesNoCallerStreamInTheSandbox: `ward exec` relays the
// caller's streams through pipes. A background process of the command
// keeps nothing of the caller's: what is written to the caller's stdin
// after exec returned reaches nobody (EPIPE), and the caller's stdout
// closes when ward does.
func TestHardeningExecLeavesNoCallerStreamInTheSandbox(t *testing.T) {
	needRoot(t)
	name := sandboxName()
	if r := run(t, opts{}, "start", "--name="+name); r.code != 0 {
		t.Fatalf("start: %s", r)
	}
	t.Cleanup(func() { run(t, opts{}, "stop", name) })
	stdinR, stdinW, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { stdinR.Close(); stdinW.Close() })
	ctx, cancel := context.WithTimeout(context.Background(), safetyTimeout)
	defer cancel()
	args := []string{"exec", name, "--", "sh", "-c", `(sleep 3; cat > /tmp/stolen) & (sleep 30 &) ; echo started`}
	cmd := wardCmd(ctx, opts{}, args)
	cmd.Stdin = stdinR
	r := runCmd(t, ctx, cmd, args) // fails if a sandbox process kept ward's stdout open
	stdinR.Close()
	if r.code != 0 || !strings.Contains(r.stdout, "started") {
		t.Fatalf("exec: %s", r)
	}
	if _, err := stdinW.Write([]byte("typed after exec returned\n")); !errors.Is(err, syscall.EPIPE) {
		t.Errorf("writing to the caller's stdin after exec returned: %v, want EPIPE (a sandbox process still holds it)", err)
	}
	stdinW.Close()
	time.Sleep(3500 * time.Millisecond) // the background reader's turn
	if r := run(t, opts{}, "exec", name, "--", "sh", "-c", "cat /tmp/stolen 2>/dev/null; echo end"); strings.Contains(r.stdout, "typed") {
		t.Errorf("a background process read what the caller typed after exec returned\n%s", r)
	}
}

// TestHardeningStdioJSONAnswersDespiteABackgroundProcess: a request whose
// program leaves a process holding stdout is answered when the program
// ends (not when the background process does), and a request's time limit
// holds.
func TestHardeningStdioJSONAnswersDespiteABackgroundProcess(t *testing.T) {
	in := `{"args":["sh","-c","sleep 40 & echo first"],"time_limit":"2s"}` + "\n" +
		`{"args":["sh","-c","setsid sleep 40 & sleep 40"],"time_limit":"2s"}` + "\n"
	r := run(t, opts{stdin: in}, "run", "--stdio-json")
	lines := strings.Split(strings.TrimSpace(r.stdout), "\n")
	if r.code != 0 || len(lines) != 2 {
		t.Fatalf("want two result lines\n%s", r)
	}
	first, second := decodeOne(t, "first result", lines[0]), decodeOne(t, "second result", lines[1])
	if first["status"] != "exited" || !strings.Contains(fmt.Sprint(first["stdout"]), "first") {
		t.Errorf("first request: %v", first)
	}
	if second["status"] != "timeout" {
		t.Errorf("second request: status %v, want timeout", second["status"])
	}
	// Both background sleeps run 40 s: answering before them is the point.
	if r.elapsed > 20*time.Second {
		t.Errorf("the answers waited for the background processes (%v)\n%s", r.elapsed, r)
	}
}

// TestHardeningTTYProgramCannotStopWard: with --tty, run from a
// job-control shell with ward's stderr on the terminal, a program that
// takes the foreground and sets TOSTOP cannot stop ward (the shell would
// see 150, SIGTTOU): the time limit still ends it with 124.
func TestHardeningTTYProgramCannotStopWard(t *testing.T) {
	needRoot(t)
	master, err := os.OpenFile("/dev/ptmx", os.O_RDWR|unix.O_NOCTTY, 0)
	if err != nil {
		t.Skipf("no pty on this host: %v", err)
	}
	defer master.Close()
	if err := unix.IoctlSetPointerInt(int(master.Fd()), unix.TIOCSPTLCK, 0); err != nil {
		t.Fatal(err)
	}
	n, err := unix.IoctlGetUint32(int(master.Fd()), unix.TIOCGPTN)
	if err != nil {
		t.Fatal(err)
	}
	tty, err := os.OpenFile(fmt.Sprintf("/dev/pts/%d", n), os.O_RDWR|unix.O_NOCTTY, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer tty.Close()
	screen := make(chan string)
	go func() { b, _ := io.ReadAll(master); screen <- string(b) }()
	src := escapeFile(t, "_prelude.py") + escapeFile(t, "tty_tostop.py")
	ctx, cancel := context.WithTimeout(context.Background(), safetyTimeout)
	defer cancel()
	// bash -m: job control, so ward runs as a job of its own in the
	// shell's session, as from an interactive shell.
	cmd := exec.CommandContext(ctx, "bash", "-m", "-c", `"$0" run --tty --time-limit=2s -- python3 -c "$1" tty_tostop; echo "ward-exit=$?"`, wardBin, src)
	cmd.Stdin, cmd.Stdout, cmd.Stderr = tty, tty, tty
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true, Setctty: true, Ctty: 0}
	if err := cmd.Run(); err != nil {
		t.Fatalf("bash: %v", err)
	}
	tty.Close()
	var out string
	select {
	case out = <-screen:
	case <-time.After(5 * time.Second):
		t.Fatal("the terminal stayed open after the shell exited")
	}
	if !strings.Contains(out, "ward-exit=124") {
		t.Errorf("want ward-exit=124 (a stopped ward shows 150); the terminal showed:\n%s", out)
	}
}

// TestHardeningSandboxCannotExhaustHostRootsCounters: while a sandbox
// holds every inotify instance it can get, host root can still make one
// (the sandbox's user namespace is not owned by host root).
func TestHardeningSandboxCannotExhaustHostRootsCounters(t *testing.T) {
	needRoot(t)
	src := escapeFile(t, "_prelude.py") + escapeFile(t, "inotify_exhaust.py")
	p := startWard(t, opts{}, "run", "--file-descriptors=4096", "--", "python3", "-c", src, "inotify_exhaust", "4")
	deadline := time.Now().Add(30 * time.Second)
	out := func() string { b, _ := os.ReadFile(p.outPath); return string(b) }
	for !strings.Contains(out(), "holding") {
		if time.Now().After(deadline) || p.exited() {
			t.Fatalf("the probe never held its instances\n%s", p.wait())
		}
		time.Sleep(50 * time.Millisecond)
	}
	fd, err := unix.InotifyInit1(unix.IN_CLOEXEC)
	if err != nil {
		t.Errorf("host root's inotify_init1 while a sandbox holds its instances: %v (%s)", err, strings.TrimSpace(out()))
	} else {
		unix.Close(fd)
	}
	if r := p.wait(); r.code != 0 || !strings.Contains(r.stdout, "CONTAINED") {
		t.Errorf("probe: %s", r)
	}
}
