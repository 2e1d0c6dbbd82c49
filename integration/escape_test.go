package integration

// The escape battery (docs/security.md): one small
// program per attack under escape/, each run only inside the sandbox, each
// printing one line "CONTAINED <case>: <how>" or "ESCAPED <case>: <what>".
// Python probes go to `python3 - CASE ARG...` on stdin behind
// escape/_prelude.py; C probes are compiled and run inside the sandbox
// behind escape/_prelude.h. Every probe is harmless even if the sandbox
// failed (invalid arguments, open-only, own process only); see
// escape/README.md for the case list and the CVE or anchor behind each.

import (
	"context"
	"embed"
	"errors"
	"fmt"
	"math/rand/v2"
	"net"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"

	"golang.org/x/sys/unix"
)

//go:embed escape/*
var escapeFS embed.FS

// escapeCase is one attack and what containment must look like.
type escapeCase struct {
	name  string   // subtest name: what it asserts
	probe string   // file under escape/: NAME.py (python3, ctypes) or NAME.c (compiled inside)
	flags []string // extra `ward run` flags
	args  []string // probe arguments (after the case name)
	want  []string // accepted first word of <how> (errno names); nil: any CONTAINED line
}

func escapeFile(t *testing.T, name string) string {
	t.Helper()
	b, err := escapeFS.ReadFile("escape/" + name)
	if err != nil {
		t.Fatalf("probe %s: %v", name, err)
	}
	return string(b)
}

func probeCase(probe string) string {
	return strings.TrimSuffix(probe, path.Ext(probe))
}

// needProbeHost skips unless the probes can run here: x86_64 syscall
// numbers, and the host's python3 (or gcc) that the sandbox binds from /usr.
func needProbeHost(t *testing.T, probe string) {
	t.Helper()
	needRoot(t)
	if runtime.GOARCH != "amd64" {
		t.Skip("escape probes use x86_64 syscall numbers")
	}
	need := "/usr/bin/python3"
	if path.Ext(probe) == ".c" {
		need = "/usr/bin/gcc"
	}
	if _, err := os.Stat(need); err != nil {
		t.Skipf("escape probe %s needs %s on the host (bound into the sandbox): %v", probe, need, err)
	}
}

// escapeExtraFlags are added to every probe's `ward run`, from
// WARD_ESCAPE_FLAGS (space-separated). For looking at the battery by hand:
// WARD_ESCAPE_FLAGS=--seccomp=unconfined shows what the kernel alone
// contains, --seccomp=FILE tries a JSON profile; the expectations stay
// those of the default policy.
func escapeExtraFlags() []string {
	return strings.Fields(os.Getenv("WARD_ESCAPE_FLAGS"))
}

// escapeInvocation returns the `ward` arguments and stdin that run c's probe
// inside the sandbox.
func escapeInvocation(t *testing.T, c escapeCase) ([]string, string) {
	t.Helper()
	args := append(append(append([]string{"run"}, escapeExtraFlags()...), c.flags...), "--")
	var stdin string
	switch path.Ext(c.probe) {
	case ".py":
		stdin = escapeFile(t, "_prelude.py") + escapeFile(t, c.probe)
		args = append(args, "python3", "-", probeCase(c.probe))
	case ".c":
		stdin = escapeFile(t, "_prelude.h") + escapeFile(t, c.probe)
		args = append(args, "sh", "-c", `cat > /tmp/p.c && gcc -O0 -w -o /tmp/p /tmp/p.c && exec /tmp/p "$@"`, "sh", probeCase(c.probe))
	default:
		t.Fatalf("probe %s: want .py or .c", c.probe)
	}
	return append(args, c.args...), stdin
}

// checkEscape asserts that the run printed exactly one verdict line, that it
// is CONTAINED for the probe's case, and that <how> starts with a wanted
// errno name.
func checkEscape(t *testing.T, c escapeCase, r result) {
	t.Helper()
	var verdicts []string
	for _, l := range strings.Split(r.stdout, "\n") {
		if strings.HasPrefix(l, "CONTAINED ") || strings.HasPrefix(l, "ESCAPED ") {
			verdicts = append(verdicts, l)
		}
	}
	if len(verdicts) != 1 {
		t.Errorf("probe %s printed %d verdict lines, want 1\n%s", c.probe, len(verdicts), r)
		return
	}
	line := verdicts[0]
	prefix := "CONTAINED " + probeCase(c.probe) + ": "
	if !strings.HasPrefix(line, prefix) {
		t.Errorf("%s\n%s", line, r)
		return
	}
	how := strings.TrimPrefix(line, prefix)
	if c.want != nil {
		first, _, _ := strings.Cut(how, " ")
		if !slices.Contains(c.want, first) {
			t.Errorf("%s (want %s)\n%s", line, strings.Join(c.want, " or "), r)
			return
		}
	}
	if r.code != 0 {
		t.Errorf("%s, but ward exited %d, want 0\n%s", line, r.code, r)
		return
	}
	t.Log(line)
}

// escapeRun runs a probe's ward: as root, or, in
// TestRootlessEscapeBattery, as a throwaway ordinary user.
var escapeRun = run

func runEscapeCases(t *testing.T, cases []escapeCase) {
	t.Helper()
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			needProbeHost(t, c.probe)
			args, stdin := escapeInvocation(t, c)
			checkEscape(t, c, escapeRun(t, opts{stdin: stdin}, args...))
		})
	}
}

// deniedCase: the default policy answers the probe's syscall with errno.
func deniedCase(probe, what, errno string) escapeCase {
	return escapeCase{name: what + " is denied with " + errno, probe: probe, want: []string{errno}}
}

// TestEscapeSeccompDenied: syscalls the default policy denies (issue 4);
// every probe passes arguments that make the call a no-op if it got through.
func TestEscapeSeccompDenied(t *testing.T) {
	runEscapeCases(t, []escapeCase{
		deniedCase("mount.py", "mount", "EPERM"),
		deniedCase("umount2.py", "umount2", "EPERM"),
		deniedCase("pivot_root.py", "pivot_root", "EPERM"),
		deniedCase("chroot.py", "chroot", "EPERM"),
		deniedCase("setns.py", "setns into own uts namespace", "EPERM"),
		deniedCase("unshare_newuser.py", "unshare CLONE_NEWUSER", "EPERM"),
		deniedCase("unshare_newns.py", "unshare CLONE_NEWNS", "EPERM"),
		deniedCase("unshare_fs.py", "unshare CLONE_FS without namespace flags", "EPERM"),
		deniedCase("clone_newuser.py", "clone CLONE_NEWUSER", "EPERM"),
		deniedCase("clone_newnet.py", "clone CLONE_NEWNET", "EPERM"),
		deniedCase("clone_newuser_highbits.py", "clone CLONE_NEWUSER with high bits set", "EPERM"),
		deniedCase("clone3_newuser.py", "clone3 CLONE_NEWUSER", "ENOSYS"),
		deniedCase("keyctl.py", "keyctl", "EPERM"),
		deniedCase("add_key.py", "add_key", "EPERM"),
		deniedCase("request_key.py", "request_key", "EPERM"),
		deniedCase("bpf.py", "bpf", "EPERM"),
		deniedCase("perf_event_open.py", "perf_event_open", "EPERM"),
		deniedCase("ptrace_pid1.py", "ptrace seize of pid 1", "EPERM"),
		deniedCase("ptrace_parent.py", "ptrace seize of the parent", "EPERM"),
		deniedCase("pidfd_getfd.py", "pidfd_getfd from the parent", "EPERM"),
		deniedCase("process_vm_readv.py", "process_vm_readv of pid 1", "EPERM"),
		deniedCase("process_vm_writev.py", "process_vm_writev to pid 1", "EPERM"),
		deniedCase("kexec_load.py", "kexec_load", "EPERM"),
		deniedCase("kexec_file_load.py", "kexec_file_load", "EPERM"),
		deniedCase("init_module.py", "init_module", "EPERM"),
		deniedCase("finit_module.py", "finit_module", "EPERM"),
		deniedCase("delete_module.py", "delete_module", "EPERM"),
		deniedCase("reboot.py", "reboot", "EPERM"),
		deniedCase("swapon.py", "swapon", "EPERM"),
		deniedCase("swapoff.py", "swapoff", "EPERM"),
		deniedCase("acct.py", "acct", "EPERM"),
		deniedCase("quotactl.py", "quotactl", "EPERM"),
		deniedCase("clock_settime.py", "clock_settime", "EPERM"),
		deniedCase("settimeofday.py", "settimeofday", "EPERM"),
		deniedCase("adjtimex.py", "adjtimex ADJ_TICK", "EPERM"),
		deniedCase("syslog.py", "syslog", "EPERM"),
		deniedCase("open_by_handle_at.py", "open_by_handle_at", "EPERM"),
		deniedCase("name_to_handle_at.py", "name_to_handle_at", "EPERM"),
		deniedCase("personality.py", "personality ADDR_NO_RANDOMIZE", "EPERM"),
		deniedCase("personality_highbits.py", "personality ADDR_NO_RANDOMIZE with high bits set", "EPERM"),
		deniedCase("userfaultfd.py", "userfaultfd", "EPERM"),
		deniedCase("io_uring_setup.py", "io_uring_setup", "EPERM"),
		deniedCase("io_uring_enter.py", "io_uring_enter", "EPERM"),
		deniedCase("io_uring_register.py", "io_uring_register", "EPERM"),
		deniedCase("lookup_dcookie.py", "lookup_dcookie", "EPERM"),
		deniedCase("fsopen.py", "fsopen", "EPERM"),
		deniedCase("fsconfig.py", "fsconfig", "EPERM"),
		deniedCase("fsmount.py", "fsmount", "EPERM"),
		deniedCase("fspick.py", "fspick", "EPERM"),
		deniedCase("open_tree.py", "open_tree", "EPERM"),
		deniedCase("move_mount.py", "move_mount", "EPERM"),
		deniedCase("mount_setattr.py", "mount_setattr", "EPERM"),
		deniedCase("sethostname.py", "sethostname", "EPERM"),
		deniedCase("setdomainname.py", "setdomainname", "EPERM"),
		deniedCase("socket_packet.py", "socket AF_PACKET", "EPERM"),
		deniedCase("socket_packet_highbits.py", "socket AF_PACKET with high bits set", "EPERM"),
		deniedCase("socket_alg.py", "socket AF_ALG", "EPERM"),
		deniedCase("socket_vsock.py", "socket AF_VSOCK", "EPERM"),
		deniedCase("socket_vsock_highbits.py", "socket AF_VSOCK with high bits set", "EPERM"),
		deniedCase("socket_raw_icmp.py", "socket AF_INET SOCK_RAW ICMP", "EPERM"),
		deniedCase("tiocsti.py", "ioctl TIOCSTI", "EPERM"),
		deniedCase("tiocsti_highbits.py", "ioctl TIOCSTI with high bits set", "EPERM"),
		deniedCase("tioclinux.py", "ioctl TIOCLINUX", "EPERM"),
		deniedCase("mknod_chardev.py", "mknod of a char device", "EPERM"),
		// Issue 4: non-native architectures are killed (or at least never run).
		{name: "x32 syscall ABI is unusable", probe: "x32_abi.py"},
		{name: "i386 int 0x80 syscall ABI is unusable", probe: "i386_abi.c"},
	})
}

// TestEscapeFilesystemAndProc: host control files, cgroups and the
// /proc/*/exe family are out of reach.
func TestEscapeFilesystemAndProc(t *testing.T) {
	sysrq := []string{"EROFS", "EACCES"}
	if _, err := os.Stat("/proc/sysrq-trigger"); errors.Is(err, os.ErrNotExist) {
		sysrq = append(sysrq, "ENOENT") // kernel without CONFIG_MAGIC_SYSRQ
	}
	exe := []string{"ETXTBSY", "EACCES", "EROFS"}
	runEscapeCases(t, []escapeCase{
		{name: "sysrq-trigger cannot be opened for writing", probe: "sysrq_trigger.py", want: sysrq},
		{name: "core_pattern cannot be opened for writing", probe: "core_pattern.py", want: []string{"EROFS", "EACCES"}},
		{name: "uevent_helper does not exist", probe: "uevent_helper.py", want: []string{"ENOENT"}},
		{name: "no cgroup.procs of a parent cgroup to join", probe: "cgroup_procs.py", want: []string{"ENOENT"}},
		{name: "no memory.max to raise", probe: "memory_max.py", want: []string{"ENOENT"}},
		{name: "cgroup v1 mount for release_agent is denied with EPERM", probe: "release_agent.py", want: []string{"EPERM"}},
		{name: "proc self exe cannot be opened for writing", probe: "proc_self_exe.py", want: exe},
		{name: "proc self exe cannot be reopened for writing through an O_PATH fd", probe: "proc_self_exe_reopen.py", want: exe},
		{name: "proc 1 exe cannot be opened for writing", probe: "proc_1_exe.py", want: exe},
		{name: "proc 1 mem cannot be read", probe: "proc_1_mem.py", want: []string{"EACCES", "EPERM"}},
		{name: "proc 1 environ cannot be read", probe: "proc_1_environ.py", want: []string{"EACCES", "EPERM"}},
		{name: "no fd of ward leaks in and cwd is inside", probe: "leaked_fds.py"},
	})
}

// TestEscapeNamespaces: host objects the test creates are invisible inside.
func TestEscapeNamespaces(t *testing.T) {
	needRoot(t)
	unique := uniqueArg()

	abstract := "ward-escape-" + unique
	ul, err := net.Listen("unix", "@"+abstract)
	if err != nil {
		t.Fatalf("listening on abstract socket @%s: %v", abstract, err)
	}
	t.Cleanup(func() { ul.Close() })

	tl, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { tl.Close() })
	port := strconv.Itoa(tl.Addr().(*net.TCPAddr).Port)

	key := int(rand.Int32N(1<<30)) + 1<<30
	shmID, err := unix.SysvShmGet(key, 4096, unix.IPC_CREAT|unix.IPC_EXCL|0o600)
	if err != nil {
		t.Fatalf("creating SysV shm key %d: %v", key, err)
	}
	t.Cleanup(func() {
		if _, err := unix.SysvShmCtl(shmID, unix.IPC_RMID, nil); err != nil {
			t.Errorf("removing SysV shm %d: %v", shmID, err)
		}
	})

	sleep := exec.Command("sleep", "60")
	if err := sleep.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = sleep.Process.Kill() // by pid: the process this test started
		_ = sleep.Wait()
	})
	hostPid := strconv.Itoa(sleep.Process.Pid)

	runEscapeCases(t, []escapeCase{
		{name: "host abstract unix socket is unreachable", probe: "abstract_unix.py", args: []string{abstract}, want: []string{"ECONNREFUSED"}},
		{name: "host 127.0.0.1 listener is unreachable", probe: "host_tcp.py", args: []string{port}, want: []string{"ECONNREFUSED"}},
		{name: "host SysV shm key is invisible", probe: "sysv_shm.py", args: []string{strconv.Itoa(key)}, want: []string{"ENOENT"}},
		{name: "host pid cannot be signalled", probe: "kill_host_pid.py", args: []string{hostPid}, want: []string{"ESRCH"}},
		{name: "only lo in the network namespace", probe: "net_interfaces.py"},
	})
}

// TestEscapePrivileges: no capability, no way to get one back, setuid
// binaries gain nothing.
func TestEscapePrivileges(t *testing.T) {
	cases := []escapeCase{
		{name: "status shows no capabilities NoNewPrivs 1 Seccomp 2", probe: "proc_status.py"},
		// EINVAL where uid 0 is not mapped at all (an ordinary user's sandbox).
		{name: "setuid 0 fails with EPERM", probe: "setuid_root.py", want: []string{"EPERM", "EINVAL"}},
		{name: "capset to all capabilities fails with EPERM", probe: "capset.py", want: []string{"EPERM"}},
		{name: "ambient raise of CAP_SYS_ADMIN fails with EPERM", probe: "ambient_raise.py", want: []string{"EPERM"}},
	}
	for _, argv := range [][]string{{"/usr/bin/su", "-c", "id"}, {"/usr/bin/sudo", "id"}, {"/usr/bin/passwd"}, {"/usr/bin/newgrp"}} {
		c := escapeCase{name: "setuid " + path.Base(argv[0]) + " runs without euid 0", probe: "setuid_binary.py", args: argv}
		if _, err := os.Stat(argv[0]); err != nil {
			t.Run(c.name, func(t *testing.T) { t.Skipf("%s not on this host", argv[0]) })
			continue
		}
		cases = append(cases, c)
	}
	runEscapeCases(t, cases)
}

// runUnderPty runs ward with a fresh pty as its stdin and controlling
// terminal, as from an interactive shell; stdout and stderr are pipes. It
// also returns what the terminal echoed (an injected byte shows up there).
func runUnderPty(t *testing.T, args ...string) (result, string) {
	t.Helper()
	needRoot(t)
	master, err := os.OpenFile("/dev/ptmx", os.O_RDWR|unix.O_NOCTTY, 0)
	if err != nil {
		t.Skipf("no pty on this host: %v", err)
	}
	defer master.Close()
	mfd := int(master.Fd())
	if err := unix.IoctlSetPointerInt(mfd, unix.TIOCSPTLCK, 0); err != nil {
		t.Fatalf("unlockpt: %v", err)
	}
	n, err := unix.IoctlGetUint32(mfd, unix.TIOCGPTN)
	if err != nil {
		t.Fatalf("ptsname: %v", err)
	}
	slave, err := os.OpenFile(fmt.Sprintf("/dev/pts/%d", n), os.O_RDWR|unix.O_NOCTTY, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer slave.Close()

	ctx, cancel := context.WithTimeout(context.Background(), safetyTimeout)
	defer cancel()
	cmd := wardCmd(ctx, opts{}, args)
	cmd.Stdin = slave
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true, Setctty: true, Ctty: 0}
	r := runCmd(t, ctx, cmd, args)

	var echoed []byte
	if err := unix.SetNonblock(mfd, true); err == nil {
		buf := make([]byte, 4096)
		for {
			k, err := unix.Read(mfd, buf)
			if k <= 0 || err != nil {
				break
			}
			echoed = append(echoed, buf[:k]...)
		}
	}
	return r, string(echoed)
}

// TestEscapeTerminal: with ward's stdin a real terminal (its controlling
// tty), the program cannot push input into it (CVE-2017-5226 class).
func TestEscapeTerminal(t *testing.T) {
	for _, c := range []escapeCase{
		{name: "TIOCSTI on the inherited terminal is denied with EPERM", probe: "tiocsti_tty.py", want: []string{"EPERM"}},
		{name: "TIOCSTI with high bits on the inherited terminal is denied with EPERM", probe: "tiocsti_tty_highbits.py", want: []string{"EPERM"}},
		{name: "TIOCLINUX on the inherited terminal is denied with EPERM", probe: "tioclinux_tty.py", want: []string{"EPERM"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			needProbeHost(t, c.probe)
			src := escapeFile(t, "_prelude.py") + escapeFile(t, c.probe)
			args := append(append([]string{"run"}, escapeExtraFlags()...), "--", "python3", "-c", src, probeCase(c.probe))
			r, echoed := runUnderPty(t, args...)
			checkEscape(t, c, r)
			if strings.Contains(echoed, "#") {
				t.Errorf("the terminal echoed an injected byte: %q", echoed)
			}
		})
	}
}

// TestFalsePositivesWorkUnderDefault: ordinary programs still work under
// the default policy.
func TestFalsePositivesWorkUnderDefault(t *testing.T) {
	runCases(t, []runCase{
		{name: "gcc compiles and runs a threaded C program",
			args:  []string{"sh", "-c", "cat > /tmp/t.c && gcc -O2 -pthread -o /tmp/t /tmp/t.c && /tmp/t"},
			stdin: escapeFile(t, "fp_threads.c"), stdoutEq: str("sum 4950")},
		{name: "python3 threads subprocess and localhost TCP work",
			args: []string{"python3", "-"}, stdin: escapeFile(t, "fp_python.py"),
			stdoutEq: str("tcp PING threads 4950 subprocess x")},
		{name: "python3 os.fork works",
			args:     []string{"python3", "-c", "import os\npid = os.fork()\nif pid == 0: os._exit(3)\nprint(os.waitstatus_to_exitcode(os.waitpid(pid, 0)[1]))"},
			stdoutEq: str("3")},
		{name: "bash pipeline works", args: []string{"bash", "-c", "seq 1 1000 | sort -rn | head -1"}, stdoutEq: str("1000")},
		{name: "sh echo works", args: []string{"sh", "-c", "echo x"}, stdoutEq: str("x")},
		{name: "mkfifo works (mknod denies only devices)", args: []string{"sh", "-c", "mkfifo /tmp/f && test -p /tmp/f && echo fifo"}, stdoutEq: str("fifo")},
	})
	t.Run("go version works", func(t *testing.T) {
		if _, err := os.Stat("/usr/local/go/bin/go"); err != nil {
			t.Skipf("/usr/local/go/bin/go not on this host: %v", err)
		}
		runCases(t, []runCase{{name: "go version", args: []string{"go", "version"},
			env: []string{"PATH=/usr/local/go/bin:/usr/local/bin:/usr/bin:/bin"}, stdoutHas: []string{"go version go"}}})
	})
}

// TestSeccompStrictProfile: the allow-list still runs plain programs and
// denies the rest.
func TestSeccompStrictProfile(t *testing.T) {
	runCases(t, []runCase{
		{name: "python3 -c print runs", args: []string{"--seccomp=strict", "--", "python3", "-c", "print(1)"}, stdoutEq: str("1")},
		{name: "sh -c echo runs", args: []string{"--seccomp=strict", "--", "sh", "-c", "echo hi"}, stdoutEq: str("hi")},
		{name: "python3 socket creation fails",
			args:    []string{"--seccomp=strict", "--", "python3", "-c", "import socket; socket.socket(); print('socket-created')"},
			nonZero: true, stdoutNot: []string{"socket-created"}},
	})
	t.Run("static C binary runs", func(t *testing.T) {
		// Built on the host (compiling is no probe), handed in with --mount
		// (read-only, exec allowed).
		dir := t.TempDir()
		src := filepath.Join(dir, "hello.c")
		if err := os.WriteFile(src, []byte("#include <stdio.h>\nint main(void){puts(\"static-ok\");return 0;}\n"), 0o644); err != nil {
			t.Fatal(err)
		}
		if out, err := exec.Command("gcc", "-static", "-O2", "-o", filepath.Join(dir, "hello"), src).CombinedOutput(); err != nil {
			t.Skipf("gcc -static is not available on this host: %v\n%s", err, out)
		}
		r := run(t, opts{}, "run", "--seccomp=strict", "--mount="+dir+":/opt/static", "--", "/opt/static/hello")
		if r.code != 0 || strings.TrimSpace(r.stdout) != "static-ok" {
			t.Errorf("a static C binary does not run under strict\n%s", r)
		}
	})
}

// TestSeccompProfileFlagModes: --seccomp=default is the no-flag default
// (a filter), --seccomp=unconfined loads none.
func TestSeccompProfileFlagModes(t *testing.T) {
	status := []string{"awk", "/^Seccomp:/ {print $2}", "/proc/self/status"}
	runCases(t, []runCase{
		{name: "default shows Seccomp 2", args: append([]string{"--seccomp=default", "--"}, status...), stdoutEq: str("2")},
		// Unconfined keeps only the setuid/setgid filter: one filter.
		{name: "unconfined keeps one filter", args: []string{"--seccomp=unconfined", "--", "awk", "/^Seccomp_filters:/ {print $2}", "/proc/self/status"}, stdoutEq: str("1")},
	})
}
