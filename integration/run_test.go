package integration

import (
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"
)

// runCase is one `ward run` invocation and what must come out of it.
type runCase struct {
	name    string
	args    []string // after "run"
	stdin   string
	env     []string
	exit    int  // wanted exit code (ignored when nonZero)
	nonZero bool // any non-zero exit code will do

	stdoutEq    *string  // stdout, surrounding whitespace trimmed, equals this
	stdoutHas   []string // substrings stdout must contain
	stdoutNot   []string // substrings stdout must not contain
	stderrHas   []string
	stderrNot   []string
	stderrEmpty bool

	maxElapsed time.Duration // 0: no bound
	minElapsed time.Duration
}

func str(s string) *string { return &s }

func runCases(t *testing.T, cases []runCase) {
	t.Helper()
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			needRoot(t)
			r := run(t, opts{stdin: c.stdin, env: c.env}, append([]string{"run"}, c.args...)...)
			checkRun(t, c, r)
		})
	}
}

func checkRun(t *testing.T, c runCase, r result) {
	t.Helper()
	ok := true
	fail := func(format string, a ...any) {
		t.Helper()
		t.Errorf(format, a...)
		ok = false
	}
	switch {
	case c.nonZero && r.code == 0:
		fail("exit code 0, want non-zero")
	case !c.nonZero && r.code != c.exit:
		fail("exit code %d, want %d", r.code, c.exit)
	}
	if c.stdoutEq != nil && strings.TrimSpace(r.stdout) != *c.stdoutEq {
		fail("stdout %q, want %q", strings.TrimSpace(r.stdout), *c.stdoutEq)
	}
	for _, s := range c.stdoutHas {
		if !strings.Contains(r.stdout, s) {
			fail("stdout lacks %q", s)
		}
	}
	for _, s := range c.stdoutNot {
		if strings.Contains(r.stdout, s) {
			fail("stdout contains %q, must not", s)
		}
	}
	for _, s := range c.stderrHas {
		if !strings.Contains(r.stderr, s) {
			fail("stderr lacks %q", s)
		}
	}
	for _, s := range c.stderrNot {
		if strings.Contains(r.stderr, s) {
			fail("stderr contains %q, must not", s)
		}
	}
	if c.stderrEmpty && r.stderr != "" {
		fail("stderr not empty")
	}
	if c.maxElapsed > 0 && r.elapsed > c.maxElapsed {
		fail("took %v, want under %v", r.elapsed, c.maxElapsed)
	}
	if c.minElapsed > 0 && r.elapsed < c.minElapsed {
		fail("took %v, want at least %v (limit fired early?)", r.elapsed, c.minElapsed)
	}
	if !ok {
		t.Logf("ward run %q\n%s", c.args, r)
	}
}

func TestRunExitStatusMapping(t *testing.T) {
	runCases(t, []runCase{
		{name: "true exits 0", args: []string{"true"}, exit: 0},
		{name: "program exit code is ward's exit code", args: []string{"sh", "-c", "exit 7"}, exit: 7},
		{name: "double dash separates flags from command", args: []string{"--", "sh", "-c", "exit 5"}, exit: 5},
		{name: "SIGKILLed program gives 137", args: []string{"sh", "-c", "kill -9 $$"}, exit: 137},
		{name: "SIGTERMed program gives 143", args: []string{"sh", "-c", "kill -TERM $$"}, exit: 143},
		{name: "non-executable file gives 126", args: []string{"/etc/passwd"}, exit: 126},
		{name: "missing command name gives 127", args: []string{"ward-no-such-command-8c1f"}, exit: 127},
		{name: "missing command path gives 127", args: []string{"/nonexistent/ward-no-such-command"}, exit: 127},
		{name: "args after command go to the command", args: []string{"echo", "--frobnicate", "--json"}, exit: 0, stdoutEq: str("--frobnicate --json")},
		// The program's process reports with write(2), which every policy
		// allows: a missing command is still named under the strict one.
		{name: "missing command under strict seccomp gives 127 and says so", args: []string{"--seccomp=strict", "ward-no-such-command-8c1f"},
			exit: 127, stderrHas: []string{"ward-no-such-command-8c1f: command not found"}},
		// PATH has only an empty entry: "true" is found in the working
		// directory or nowhere.
		{name: "empty PATH entry is the working directory", args: []string{"--env=PATH=:", "--workdir=/usr/bin", "true"}, exit: 0},
		{name: "PATH without the command gives 127", args: []string{"--env=PATH=/nonexistent", "--workdir=/usr/bin", "true"}, exit: 127},
		{name: "over-long command name gives 126", args: []string{strings.Repeat("x", 4350)}, exit: 126},
		// 300 KB of arguments do not fit the early child's socket: the init
		// forks another program process instead.
		{name: "arguments larger than the config socket still run", args: []string{"sh", "-c", `echo "$#"`, "sh",
			strings.Repeat("a", 100000), strings.Repeat("b", 100000), strings.Repeat("c", 100000)}, exit: 0, stdoutEq: str("3")},
	})
}

// TestRunVerboseSeccompListener: in verbose mode the seccomp listener goes
// from the program's process to the init before exec, under every policy
// and however few file descriptors the program may have.
func TestRunVerboseSeccompListener(t *testing.T) {
	runCases(t, []runCase{
		{name: "strict policy", args: []string{"--seccomp=strict", "--sandbox-log=verbose", "--time-limit=20s", "true"}, exit: 0,
			stderrHas: []string{"[SANDBOX] Exit: 0"}, maxElapsed: 15 * time.Second},
		{name: "default policy counts a denial", args: []string{"--sandbox-log=verbose", "--time-limit=20s", "sh", "-c", "unshare -r true; exit 0"}, exit: 0,
			stderrHas: []string{"[SANDBOX] Syscall denied: unshare (EPERM) x1"}},
		{name: "four file descriptors", args: []string{"--sandbox-log=verbose", "--file-descriptors=4", "true"}, exit: 0},
	})
}

func TestRunIdentityIsUnprivilegedSandboxUser(t *testing.T) {
	host, err := os.Hostname()
	if err != nil {
		t.Fatal(err)
	}
	if host == "sandbox" {
		t.Fatal("host is named sandbox; the hostname check would prove nothing")
	}
	runCases(t, []runCase{
		{name: "uid is 1000", args: []string{"id", "-u"}, stdoutEq: str("1000")},
		{name: "gid is 1000", args: []string{"id", "-g"}, stdoutEq: str("1000")},
		{name: "user name is sandbox", args: []string{"whoami"}, stdoutEq: str("sandbox")},
		{name: "hostname is sandbox not the host's", args: []string{"hostname"}, stdoutEq: str("sandbox"), stdoutNot: []string{host}},
		{name: "sudo fails", args: []string{"sudo", "whoami"}, nonZero: true, stdoutNot: []string{"root"}},
		{name: "su fails", args: []string{"su", "-c", "id"}, nonZero: true, stdoutNot: []string{"uid=0"}},
	})
}

func TestRunFilesystemRootReadOnlyScratchWritable(t *testing.T) {
	runCases(t, []runCase{
		{name: "touch /usr/x fails read-only", args: []string{"touch", "/usr/x"}, nonZero: true, stderrHas: []string{"Read-only file system"}},
		{name: "touch /etc/x fails read-only", args: []string{"touch", "/etc/x"}, nonZero: true, stderrHas: []string{"Read-only file system"}},
		{name: "touch /x fails read-only", args: []string{"touch", "/x"}, nonZero: true, stderrHas: []string{"Read-only file system"}},
		{name: "tmp is writable", args: []string{"sh", "-c", "echo data > /tmp/x && cat /tmp/x"}, stdoutEq: str("data")},
		{name: "home is writable", args: []string{"sh", "-c", `echo data > "$HOME/x" && cat /home/sandbox/x`}, stdoutEq: str("data")},
		{name: "default workdir is home", args: []string{"pwd"}, stdoutEq: str("/home/sandbox")},
		{name: "workdir flag sets cwd", args: []string{"--workdir=/tmp", "pwd"}, stdoutEq: str("/tmp")},
	})
}

func TestRunHostPathsInvisible(t *testing.T) {
	dir := t.TempDir()
	marker := filepath.Join(dir, "host-marker")
	if err := os.WriteFile(marker, []byte("x"), 0o644); err != nil {
		t.Fatal(err)
	}
	probe := `for p in "$@"; do if test -e "$p"; then echo "visible $p"; else echo "absent $p"; fi; done`
	cwd, err := os.Getwd()
	if err != nil {
		t.Fatal(err)
	}
	paths := []string{"/root", dir, marker, cwd}
	r := run(t, opts{}, append([]string{"run", "sh", "-c", probe, "sh"}, paths...)...)
	if r.code != 0 {
		t.Fatalf("probe failed\n%s", r)
	}
	for _, p := range paths {
		if !strings.Contains(r.stdout, "absent "+p+"\n") {
			t.Errorf("host path %s is visible inside the sandbox\n%s", p, r)
		}
	}
}

func TestRunEnvironmentClearedToAllowList(t *testing.T) {
	callerEnv := []string{
		"PATH=/usr/local/bin:/usr/bin:/bin",
		"LANG=C.UTF-8",
		"LC_ALL=C",
		"TERM=xterm-test",
		"WARD_TEST_VAR=ward-prefixed",
		"HOST_SECRET_TOKEN=s3cr3t-must-not-leak",
		"PASSED_VAR=from-caller",
		"NOT_PASSED_VAR=must-not-appear",
		"HOME=/root",
		"USER=root",
		"TMPDIR=/var/tmp",
	}
	r := run(t, opts{env: callerEnv}, "run", "--env=SET_VAR=set-by-flag", "--env=PASSED_VAR", "env")
	if r.code != 0 {
		t.Fatalf("env failed\n%s", r)
	}
	got := map[string]string{}
	for _, line := range strings.Split(strings.TrimRight(r.stdout, "\n"), "\n") {
		k, v, _ := strings.Cut(line, "=")
		got[k] = v
	}
	want := map[string]string{
		"PATH":          "/usr/local/bin:/usr/bin:/bin",
		"LANG":          "C.UTF-8",
		"LC_ALL":        "C",
		"TERM":          "xterm-test",
		"WARD_TEST_VAR": "ward-prefixed",
		"HOME":          "/home/sandbox",
		"TMPDIR":        "/tmp",
		"USER":          "sandbox",
		"SET_VAR":       "set-by-flag",
		"PASSED_VAR":    "from-caller",
	}
	for k, v := range want {
		if g, ok := got[k]; !ok || g != v {
			t.Errorf("inside %s=%q (present=%v), want %q", k, g, ok, v)
		}
	}
	for k := range got {
		if _, ok := want[k]; !ok && !strings.HasPrefix(k, "WARD_") {
			t.Errorf("variable %s leaked into the sandbox (not in the allow-list)", k)
		}
	}
	for _, secret := range []string{"HOST_SECRET_TOKEN", "s3cr3t-must-not-leak", "NOT_PASSED_VAR"} {
		if strings.Contains(r.stdout, secret) {
			t.Errorf("%s visible inside the sandbox", secret)
		}
	}
	if t.Failed() {
		t.Logf("%s", r)
	}
}

func TestRunNetworkOnlyLoopbackNoRoute(t *testing.T) {
	r := run(t, opts{}, "run", "cat", "/proc/net/dev", "/proc/net/route")
	if r.code != 0 {
		t.Fatalf("reading /proc/net failed\n%s", r)
	}
	var ifaces []string
	var routes []string
	for _, line := range strings.Split(r.stdout, "\n") {
		if name, _, ok := strings.Cut(line, ":"); ok && !strings.Contains(line, "|") {
			ifaces = append(ifaces, strings.TrimSpace(name))
		}
		f := strings.Fields(line)
		if len(f) >= 8 && f[0] != "Iface" && !strings.Contains(line, ":") && !strings.Contains(line, "|") {
			routes = append(routes, line)
		}
	}
	if !slices.Equal(ifaces, []string{"lo"}) {
		t.Errorf("interfaces inside = %q, want only lo\n%s", ifaces, r)
	}
	if len(routes) != 0 {
		t.Errorf("routes inside, want none:\n%s", strings.Join(routes, "\n"))
	}
}

// connectProbe tries a TCP connection from inside to 127.0.0.1:port and
// prints "connected" or the error.
const connectProbe = `import socket,sys
try:
    socket.create_connection(("127.0.0.1", int(sys.argv[1])), timeout=3).close()
    print("connected")
except OSError as e:
    print("refused:", e)
    sys.exit(1)
`

func TestRunNetworkNoneCannotReachHostLoopback(t *testing.T) {
	cases := []struct {
		name        string
		flags       []string
		wantConnect bool
	}{
		{"default denies", nil, false},
		{"network=none denies", []string{"--network=none"}, false},
		// The positive control: proves the probe and listener work, so the
		// denial above is not vacuous.
		{"network=host reaches", []string{"--network=host"}, true},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			needRoot(t)
			ln, err := net.Listen("tcp", "127.0.0.1:0")
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { ln.Close() })
			port := ln.Addr().(*net.TCPAddr).Port
			args := append([]string{"run"}, c.flags...)
			args = append(args, "python3", "-c", connectProbe, strconv.Itoa(port))
			r := run(t, opts{}, args...)

			// A completed handshake sits in the accept queue; look for it.
			ln.(*net.TCPListener).SetDeadline(time.Now().Add(200 * time.Millisecond))
			conn, aerr := ln.Accept()
			accepted := aerr == nil
			if accepted {
				conn.Close()
			}
			if c.wantConnect {
				if r.code != 0 || !strings.Contains(r.stdout, "connected") || !accepted {
					t.Errorf("with %v the program could not reach host 127.0.0.1:%d (accepted=%v)\n%s", c.flags, port, accepted, r)
				}
				return
			}
			if r.code == 0 || strings.Contains(r.stdout, "connected") {
				t.Errorf("program connected to host 127.0.0.1:%d\n%s", port, r)
			}
			if accepted {
				t.Errorf("host listener on 127.0.0.1:%d saw a connection from the sandbox", port)
			}
			if !strings.Contains(r.stdout, "refused:") {
				t.Errorf("probe did not run to its error branch\n%s", r)
			}
		})
	}
}

func TestRunHostProcessesInvisible(t *testing.T) {
	r := run(t, opts{}, "run", "ls", "/proc")
	if r.code != 0 {
		t.Fatalf("ls /proc failed\n%s", r)
	}
	var pids []int
	for _, f := range strings.Fields(r.stdout) {
		if n, err := strconv.Atoi(f); err == nil {
			pids = append(pids, n)
		}
	}
	if len(pids) == 0 || len(pids) >= 6 {
		t.Errorf("sandbox sees %d processes %v, want 1..5\n%s", len(pids), pids, r)
	}
	var high []int
	for _, p := range pids {
		if p >= 20 {
			high = append(high, p)
		}
	}
	if len(high) > 0 {
		t.Errorf("sandbox sees pids >= 20 %v: host or foreign processes visible", high)
	}
	if !slices.Contains(pids, 1) {
		t.Errorf("no PID 1 (ward's init) in the sandbox's /proc: %v", pids)
	}
}

// The program is not PID 1: ward's init is, and the program is its child.
// (Its exact pid depends on how many threads the init has; ls /proc above
// bounds it.)
func TestRunProgramIsPID2ChildOfInit(t *testing.T) {
	r := run(t, opts{}, "run", "sh", "-c", `echo "$$ $PPID"`)
	var pid, ppid int
	if _, err := fmt.Sscan(r.stdout, &pid, &ppid); err != nil || r.code != 0 {
		t.Fatalf("could not read pid/ppid: %v\n%s", err, r)
	}
	if pid != 2 {
		t.Errorf("program pid %d, want 2 (forked before the init's Go runtime starts)", pid)
	}
	if ppid != 1 {
		t.Errorf("program's parent pid %d, want 1 (ward's init)", ppid)
	}
}

func TestRunNoCallerFDLeaksBeyondStdio(t *testing.T) {
	needRoot(t)
	dir := t.TempDir()
	var files []*os.File
	for i := range 2 {
		f, err := os.Create(filepath.Join(dir, fmt.Sprintf("leak%d", i)))
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { f.Close() })
		files = append(files, f)
	}
	r := run(t, opts{extraFiles: files}, "run", "python3", "-c", `import os;print(sorted(os.listdir("/proc/self/fd")))`)
	if r.code != 0 || strings.TrimSpace(r.stdout) != "['0', '1', '2', '3']" {
		t.Errorf("fds inside = %q, want ['0', '1', '2', '3'] (3 is listdir's own)\n%s", strings.TrimSpace(r.stdout), r)
	}
}

func TestRunStdinAndInterpreters(t *testing.T) {
	runCases(t, []runCase{
		{name: "stdin passes through to cat", args: []string{"cat"}, stdin: "hello from the test\nline two\n", stdoutEq: str("hello from the test\nline two")},
		{name: "python3 -c works", args: []string{"python3", "-c", "print(6*7)"}, stdoutEq: str("42")},
		{name: "bash -c works", args: []string{"bash", "-c", "echo $((6*7))"}, stdoutEq: str("42")},
		{name: "stderr passes through", args: []string{"sh", "-c", "echo to-stderr >&2"}, stderrHas: []string{"to-stderr"}},
	})
}

// killedBound is how long a run whose program would sleep 120 s may take once its time limit killed it: far below the
// sleep, so it shows ward did not wait the program out, and far above the
// limit, so a loaded machine (TCG, two cores shared) is no failure. The
// report's own clock is checked in report_test.go.
const killedBound = 30 * time.Second

func TestRunTimeLimitKillsWith124(t *testing.T) {
	runCases(t, []runCase{
		{name: "sleep 120 with 1s limit", args: []string{"--time-limit=1s", "sleep", "120"}, exit: 124,
			stderrHas: []string{"ward: execution exceeded time limit (1s)"}, minElapsed: 950 * time.Millisecond, maxElapsed: killedBound},
		{name: "program ignoring SIGTERM still killed", args: []string{"--time-limit=1s", "sh", "-c", `trap "" TERM; sleep 120`}, exit: 124,
			stderrHas: []string{"ward: execution exceeded time limit (1s)"}, minElapsed: 950 * time.Millisecond, maxElapsed: killedBound},
		{name: "100ms limit", args: []string{"--time-limit=100ms", "sleep", "120"}, exit: 124,
			stderrHas: []string{"ward: execution exceeded time limit (100ms)"}, maxElapsed: killedBound},
		{name: "limit not reached keeps exit code", args: []string{"--time-limit=5s", "sh", "-c", "exit 9"}, exit: 9, stderrNot: []string{"time limit"}},
		{name: "minutes accepted", args: []string{"--time-limit=2m", "true"}, exit: 0},
		{name: "quiet suppresses the limit line", args: []string{"--sandbox-log=quiet", "--time-limit=1s", "sleep", "120"}, exit: 124,
			stderrEmpty: true, maxElapsed: killedBound},
	})
}

// The SIGTERM-ignoring program and its children must actually be gone, not
// just abandoned by ward.
func TestRunTimeLimitLeavesNoSurvivors(t *testing.T) {
	u := uniqueArg()
	killSurvivors(t, u)
	r := run(t, opts{}, "run", "--time-limit=1s", "sh", "-c", `trap "" TERM; sleep `+u)
	if r.code != 124 || r.elapsed > killedBound {
		t.Errorf("want 124 within %v\n%s", killedBound, r)
	}
	if pids := waitGone(u, time.Second); len(pids) > 0 {
		t.Errorf("processes of the timed-out sandbox survive:\n%s", describePids(pids))
	}
}

func TestRunSandboxLogLevels(t *testing.T) {
	verboseLines := []string{
		"[SANDBOX] Starting with profile: default",
		"[SANDBOX] Time limit: 5s",
		"[SANDBOX] Network: denied",
		"[SANDBOX] Filesystem: read-only",
		"[SANDBOX] Running: ",
		"[SANDBOX] CPU time: ",
		"[SANDBOX] Exit: 0",
	}
	runCases(t, []runCase{
		{name: "verbose prints the SANDBOX lines", args: []string{"--sandbox-log=verbose", "--time-limit=5s", "echo", "hi"},
			stdoutEq: str("hi"), stderrHas: verboseLines},
		{name: "verbose without limit prints no time limit", args: []string{"--sandbox-log=verbose", "true"},
			stderrHas: []string{"[SANDBOX] Starting with profile: default", "[SANDBOX] Exit: 0"}, stderrNot: []string{"[SANDBOX] Time limit"}},
		{name: "verbose reports program exit code", args: []string{"--sandbox-log=verbose", "sh", "-c", "exit 3"}, exit: 3,
			stderrHas: []string{"[SANDBOX] Exit: 3"}},
		{name: "normal prints nothing on success", args: []string{"--sandbox-log=normal", "--time-limit=5s", "true"}, stderrEmpty: true},
		{name: "default is normal", args: []string{"--time-limit=5s", "true"}, stderrEmpty: true},
		{name: "quiet prints nothing", args: []string{"--sandbox-log=quiet", "--time-limit=5s", "true"}, stderrEmpty: true},
	})

	t.Run("verbose times every setup step with its side", func(t *testing.T) {
		r := run(t, opts{}, "run", "--sandbox-log=verbose", "true")
		for _, step := range []string{"create-cgroup", "clone-init", "start-init", "build-root", "enter-cgroup", "seccomp"} {
			if !regexp.MustCompile(`\[SANDBOX\] Setup step: ` + step + ` +[0-9.]+ms \((parent|init|program)\)`).MatchString(r.stderr) {
				t.Errorf("no timing line for step %s:\n%s", step, r.stderr)
			}
		}
	})

	t.Run("verbose lines are ordered and prefixed", func(t *testing.T) {
		r := run(t, opts{}, "run", "--sandbox-log=verbose", "--time-limit=5s", "echo", "hi")
		var order []int
		for _, l := range []string{"[SANDBOX] Starting with profile:", "[SANDBOX] Running: ", "[SANDBOX] Exit: 0"} {
			order = append(order, strings.Index(r.stderr, l))
		}
		if !slices.IsSorted(order) || order[0] < 0 {
			t.Errorf("want Starting < Running < Exit in stderr, got offsets %v\n%s", order, r)
		}
		for _, l := range strings.Split(r.stderr, "\n") {
			if strings.HasPrefix(l, "[SANDBOX] Running: ") && !strings.Contains(l, "echo") {
				t.Errorf("Running line does not name the command: %q", l)
			}
		}
	})
}

func TestRunTTYFlagAccepted(t *testing.T) {
	runCases(t, []runCase{
		{name: "tty keeps exit code", args: []string{"--tty", "sh", "-c", "exit 5"}, exit: 5},
		{name: "tty passes output", args: []string{"--tty", "echo", "tty-out"}, stdoutHas: []string{"tty-out"}},
	})
}

func TestRunBadFlagsExit2StartNothing(t *testing.T) {
	cases := []struct {
		name string
		args []string // after "run"
		has  []string // stderr must name these
	}{
		{"time-limit not a duration", []string{"--time-limit=abc"}, []string{"time-limit", "abc"}},
		{"time-limit negative", []string{"--time-limit=-1s"}, []string{"time-limit", "-1s"}},
		{"output-limit not a size", []string{"--output-limit=lots"}, []string{"output-limit", "lots"}},
		{"network unknown mode", []string{"--network=wifi"}, []string{"network", "wifi"}},
		{"sandbox-log unknown level", []string{"--sandbox-log=loud"}, []string{"sandbox-log", "loud"}},
		{"workdir relative", []string{"--workdir=relative/dir"}, []string{"workdir", "relative/dir"}},
		{"unknown flag", []string{"--frobnicate"}, []string{"frobnicate"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			needRoot(t)
			u := uniqueArg()
			killSurvivors(t, u)
			// If ward started the command, it would print the marker.
			args := append([]string{"run"}, c.args...)
			args = append(args, "--", "sh", "-c", "echo started-"+u+"; sleep "+u)
			r := run(t, opts{}, args...)
			if r.code != 2 {
				t.Errorf("exit code %d, want 2", r.code)
			}
			for _, s := range c.has {
				if !strings.Contains(r.stderr, s) {
					t.Errorf("stderr does not name %q", s)
				}
			}
			if strings.Contains(r.stdout, "started-") {
				t.Errorf("the command was started despite the bad flag")
			}
			if pids := procsWithArg(u); len(pids) > 0 {
				t.Errorf("processes started despite the bad flag:\n%s", describePids(pids))
			}
			if t.Failed() {
				t.Logf("%s", r)
			}
		})
	}
	t.Run("missing command", func(t *testing.T) {
		r := run(t, opts{}, "run")
		if r.code != 2 || strings.TrimSpace(r.stderr) == "" {
			t.Errorf("want exit 2 and a message on stderr\n%s", r)
		}
	})
	t.Run("missing command after flags", func(t *testing.T) {
		r := run(t, opts{}, "run", "--time-limit=1s", "--")
		if r.code != 2 || strings.TrimSpace(r.stderr) == "" {
			t.Errorf("want exit 2 and a message on stderr\n%s", r)
		}
	})
}

// TestRunTTYInterruptReachesProgramOnce: with --tty the terminal's ^C goes
// to the whole foreground process group (ward, its init and the program
// alike): the program gets it from the terminal, once, and neither ward nor
// the init relays it a second and a third time.
func TestRunTTYInterruptReachesProgramOnce(t *testing.T) {
	needRoot(t)
	prog := `import signal, time
n = 0
def h(*a):
    global n
    n += 1
signal.signal(signal.SIGINT, h)
print("ready", flush=True)
t = time.time()
while time.time() - t < 1.5:
    time.sleep(0.05)
print("count", n, flush=True)`
	driver := `import os, pty, sys, time
pid, fd = pty.fork()
if pid == 0:
    os.execv(sys.argv[1], sys.argv[1:])
out = b""
while b"ready" not in out:
    out += os.read(fd, 1024)
time.sleep(0.2)
os.write(fd, b"\x03")
try:
    while True:
        b = os.read(fd, 1024)
        if not b:
            break
        out += b
except OSError:
    pass
_, status = os.waitpid(pid, 0)
sys.stdout.write(out.decode(errors="replace"))
sys.stdout.write("\nexit %d\n" % os.waitstatus_to_exitcode(status))`
	cmd := exec.Command("python3", "-c", driver, wardBin, "run", "--tty", "--time-limit=20s", "--", "python3", "-c", prog)
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("pty driver: %v\n%s", err, out)
	}
	if !strings.Contains(string(out), "count 1") || !strings.Contains(string(out), "exit 0") {
		t.Errorf("want the program to count one SIGINT and exit 0:\n%s", out)
	}
}
