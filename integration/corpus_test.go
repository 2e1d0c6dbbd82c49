package integration

// The false-positive corpus (issue 20, docs/corpus.md): real projects' own
// test suites, run bare and inside the default sandbox in the same run;
// a test that passes bare and fails inside is a false positive of ward.

import (
	"bufio"
	"bytes"
	"context"
	"encoding/xml"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

const (
	// The bare side runs as the sandbox's uid and gid: the same user on
	// both sides, so a test that needs root (or that root defeats, such
	// as a permission check) behaves alike.
	corpusUID = 1000
	corpusGID = 1000
	// libuv (libuvSource): a C library built with cmake, make and gcc;
	// its test runner (uv_run_tests_a) exercises files, processes,
	// signals, pipes, ttys, threads and loopback sockets. Debian's own
	// source package, fetched once by make deps, so it is there offline.
	// goroot is the toolchain whose standard-library tests run.
	goroot = "/usr/local/go"
)

// corpusPolicySkips are the tests that pass bare and skip inside because
// the default policy denies, on purpose, what they try: each with why.
var corpusPolicySkips = map[string]string{
	"syscall.TestCloneNEWUSERAndRemap/setgroups=false":                 "new user namespaces are denied (seccomp: clone/unshare with CLONE_NEWUSER)",
	"syscall.TestEmptyCredGroupsDisableSetgroups":                      "new user namespaces are denied",
	"syscall.TestUnshareUidGidMapping":                                 "new user namespaces are denied",
	"syscall.TestPidFDWithUserNS":                                      "new user namespaces are denied",
	"syscall.TestAmbientCapsUserns":                                    "new user namespaces are denied",
	"syscall.TestPidFDClone3":                                          "clone3 returns ENOSYS (seccomp: its flags are in memory the filter cannot read; libc falls back to clone)",
	"python.test.test_os.MakedirTests.test_exist_ok_s_isgid_directory": "setting S_ISGID is denied by every policy (no setgid file may reach the host; seccomp cannot tell a directory from a file): the test skips on EPERM",
}

// libuvOffHost are libuv's cases that send packets past the loopback
// (8.8.8.8, 1.2.3.4, 192.0.2.3, a link-local or a multicast address) or ask
// a resolver: they run on neither side, since a test here talks to the
// loopback only and never makes a real lookup.
var libuvOffHost = []string{"tcp_connect_timeout", "tcp_close_while_connecting", "tcp_connect6_link_local",
	"udp_connect", "udp_connect6", "udp_multicast_interface", "udp_multicast_interface6", "udp_multicast_join",
	"udp_multicast_join6", "udp_multicast_ttl", "udp_send_hang_loop", "getaddrinfo_fail", "getaddrinfo_fail_sync",
	"getaddrinfo_basic", "getaddrinfo_basic_sync", "getaddrinfo_concurrent", "getnameinfo_basic_ip4",
	"getnameinfo_basic_ip4_sync", "getnameinfo_basic_ip6", "threadpool_cancel_getaddrinfo",
	"threadpool_cancel_getnameinfo", "thread_create", "threadpool_multiple_event_loops"}

// corpusEnvDir is where vm.sh puts the prebuilt corpus (Go test binaries,
// libuv's test runner): nothing is compiled in the VM, where gcc and the
// Go compiler run ten to fifty times slower.
const corpusEnvDir = "WARD_CORPUS_PREBUILT"

// corpusSuite is one project's tests, run the same way on both sides.
type corpusSuite struct {
	name string
	// dir is the working directory ("" = the side's work dir); flags are
	// ward's extra flags inside.
	dir   string
	flags []string
	env   []string // K=V; WORK in a value is the side's work dir
	// prepare fills a side's work dir; then the whole dir is given to the
	// side's user.
	prepare func(t *testing.T, work string) error
	// build, if set, runs on both sides before the tests (a build that
	// works bare must work inside); args are relative to dir.
	build []string
	args  []string
	// parse reads the cases (name -> pass, fail or skip) from the output
	// and the work dir.
	parse func(out []byte, work string) map[string]string
	// retry is the args that run only these cases again.
	retry func(cases []string) []string
}

func TestCorpus(t *testing.T) {
	needRoot(t)
	vm := os.Getenv("WARD_VM") != ""
	prebuilt := os.Getenv(corpusEnvDir)
	if vm && prebuilt == "" {
		t.Fatalf("in the VM the corpus needs %s (vm.sh builds it on the host)", corpusEnvDir)
	}
	suites := []corpusSuite{}
	goPkgs := []string{"os", "os/exec", "os/signal", "syscall", "net", "time"}
	pyMods := []string{"test_os", "test_posix", "test_signal", "test_subprocess", "test_socket", "test_select",
		"test_selectors", "test_fcntl", "test_resource", "test_time", "test_pty", "test_tempfile", "test_shutil"}
	var uvTests []string // nil: all
	if prebuilt != "" {
		// vm.sh's choice (CORPUS_GO_PKGS): the test binaries it built.
		bins, _ := filepath.Glob(filepath.Join(prebuilt, "go", "*.test"))
		goPkgs = nil
		for _, b := range bins {
			goPkgs = append(goPkgs, strings.ReplaceAll(strings.TrimSuffix(filepath.Base(b), ".test"), "_", "/"))
		}
		if len(goPkgs) == 0 {
			t.Fatalf("no Go test binaries in %s/go", prebuilt)
		}
	}
	if vm {
		// Under TCG: the kernel-facing part, a few minutes in all.
		pyMods = []string{"test_posix", "test_fcntl", "test_resource", "test_select", "test_pty"}
		uvTests = strings.Fields(`fs_file_noent fs_file_async fs_file_sync fs_chown fs_chmod fs_link fs_symlink
			fs_utime fs_scandir_file fs_event_watch_file fs_rename_to_existing_file fs_copyfile fs_mkdtemp fs_fstat
			spawn_exit_code spawn_stdout spawn_stdin spawn_and_kill spawn_setuid_fails spawn_setgid_fails
			spawn_closed_process_io spawn_detached signal_multiple_loops we_get_signals kill kill_invalid_signum
			process_title get_passwd get_memory pipe_ping_pong tcp_ping_pong udp_send_and_recv threadpool_queue_work_simple
			thread_local_storage hrtime timer loop_alive poll_duplex pipe_getsockname tty uname env_vars homedir tmpdir`)
	}
	for _, pkg := range goPkgs {
		suites = append(suites, goSuite(t, pkg, prebuilt))
	}
	suites = append(suites, pythonSuite(t, pyMods), libuvSuite(t, prebuilt, uvTests))
	for _, s := range suites {
		t.Run(s.name, func(t *testing.T) { runCorpusSuite(t, s) })
	}
}

// side is one of the two runs of a suite.
type side struct {
	name   string // "bare" or "inside"
	work   string
	out    []byte
	code   int
	err    error
	cases  map[string]string
	timing time.Duration
}

func runCorpusSuite(t *testing.T, s corpusSuite) {
	bare, inside := &side{name: "bare"}, &side{name: "inside"}
	bare.work = corpusWorkDir(t)
	inside.work = corpusWorkDir(t)
	for _, sd := range []*side{bare, inside} {
		uid, gid := corpusUID, corpusGID
		if sd == inside {
			uid, gid = insideOwner(t)
		}
		if s.prepare != nil {
			if err := s.prepare(t, sd.work); err != nil {
				t.Fatalf("%s: prepare the %s work dir: %v", s.name, sd.name, err)
			}
		}
		if err := chownTree(sd.work, uid, gid); err != nil {
			t.Fatal(err)
		}
	}
	both := func(args []string) {
		var wg sync.WaitGroup
		for _, sd := range []*side{bare, inside} {
			wg.Add(1)
			go func() {
				defer wg.Done()
				t0 := time.Now()
				sd.out, sd.code, sd.err = corpusRun(s, sd, args)
				sd.timing = time.Since(t0)
			}()
		}
		wg.Wait()
		for _, sd := range []*side{bare, inside} {
			if sd.err != nil {
				t.Fatalf("%s %s: %v\n%s", s.name, sd.name, sd.err, tail(sd.out, 40))
			}
		}
	}
	if s.build != nil {
		both(s.build)
		if bare.code != 0 {
			t.Fatalf("%s: the build fails bare (exit %d), so there is nothing to compare:\n%s", s.name, bare.code, tail(bare.out, 40))
		}
		if inside.code != 0 {
			t.Fatalf("%s: the build works bare but fails inside (exit %d):\n%s", s.name, inside.code, tail(inside.out, 60))
		}
		t.Logf("build: bare %v, inside %v", bare.timing.Round(time.Second), inside.timing.Round(time.Second))
	}
	both(s.args)
	for _, sd := range []*side{bare, inside} {
		sd.cases = s.parse(sd.out, sd.work)
		// The run as a whole: a crash or a kill shows here even when no
		// case could say so.
		sd.cases["(exit status)"] = map[bool]string{true: "pass", false: "fail"}[sd.code == 0]
	}
	count := func(m map[string]string, st string) (n int) {
		for _, v := range m {
			if v == st {
				n++
			}
		}
		return n
	}
	t.Logf("bare: %d passed, %d failed, %d skipped in %v; inside: %d passed, %d failed, %d skipped in %v",
		count(bare.cases, "pass"), count(bare.cases, "fail"), count(bare.cases, "skip"), bare.timing.Round(time.Second),
		count(inside.cases, "pass"), count(inside.cases, "fail"), count(inside.cases, "skip"), inside.timing.Round(time.Second))
	if count(bare.cases, "pass") < 5 {
		t.Fatalf("%s: fewer than 5 cases passed bare: the corpus did not run (exit %d)\n%s", s.name, bare.code, tail(bare.out, 40))
	}
	for name, st := range bare.cases {
		if st == "fail" {
			t.Logf("fails bare too (not ward's): %s", name)
		}
	}
	if bare.code != 0 {
		t.Logf("the bare run's last lines (exit %d):\n%s", bare.code, tail(bare.out, 15))
	}
	var bad []string
	for name, st := range bare.cases {
		if st != "pass" {
			continue
		}
		switch in := inside.cases[name]; {
		case in == "pass":
		case in == "skip" && corpusPolicySkips[s.name+"."+name] != "":
			t.Logf("passes bare, skipped inside by the default policy: %s: %s", name, corpusPolicySkips[s.name+"."+name])
		default:
			bad = append(bad, name)
		}
	}
	sort.Strings(bad)
	if len(bad) > 0 && s.retry != nil {
		// Once more, inside only and only these: a test that then passes
		// is flaky (it is logged), not refused by ward.
		var cases []string
		for _, b := range bad {
			if b != "(exit status)" {
				cases = append(cases, b)
			}
		}
		if len(cases) > 0 {
			out, _, err := corpusRun(s, inside, s.retry(cases))
			if err != nil {
				t.Fatalf("%s: retry inside: %v", s.name, err)
			}
			again := s.parse(out, inside.work)
			var still []string
			for _, b := range bad {
				if again[b] == "pass" || (b == "(exit status)" && allPass(again, cases)) {
					t.Logf("FLAKY: %s failed inside, then passed when run again inside", b)
					continue
				}
				still = append(still, b)
			}
			bad = still
		}
	}
	if len(bad) > 0 {
		var b strings.Builder
		for _, name := range bad {
			fmt.Fprintf(&b, "\n=== %s: bare %s, inside %q\n%s", name, bare.cases[name], inside.cases[name], excerpt(inside.out, name))
		}
		t.Errorf("%s: %d case(s) pass bare but not inside the default sandbox:%s\n--- the inside run's last lines ---\n%s",
			s.name, len(bad), b.String(), tail(inside.out, 30))
	}
}

func allPass(m map[string]string, names []string) bool {
	for _, n := range names {
		if m[n] != "pass" {
			return false
		}
	}
	return true
}

var (
	insideOwnerOnce sync.Once
	insideUID       int
)

// insideOwner is who must own the inside work dir's files on the host for
// the program to own them inside: the caller (root), which an idmapped
// --allow-write mount shows as the sandbox user; or, where /tmp's file
// system cannot be idmapped (tmpfs before Linux 6.3: the cgroup-v2 VM),
// ward lends only the top directory, and the files must be the sandbox
// user's host uid (1_000_001_000: ward's HostUIDBase + 1000; ward gives
// them back to the caller at the end).
func insideOwner(t *testing.T) (int, int) {
	insideOwnerOnce.Do(func() {
		d := corpusWorkDir(t)
		if err := os.WriteFile(filepath.Join(d, "probe"), nil, 0o644); err != nil {
			t.Fatal(err)
		}
		r := run(t, opts{}, "run", "--allow-write="+d, "--", "stat", "-c", "%u", filepath.Join(d, "probe"))
		switch strings.TrimSpace(r.stdout) {
		case "1000":
			insideUID = 0
		case "65534":
			insideUID = 1_000_001_000
			t.Logf("%s cannot be idmapped here: the inside work dir is made the sandbox user's host uid %d", os.TempDir(), insideUID)
		default:
			t.Fatalf("a file of the caller's in an --allow-write dir: want uid 1000 (idmapped) or 65534 inside\n%s", r)
		}
	})
	return insideUID, insideUID
}

// corpusWorkDir makes a work dir, removed at the end. Not t.TempDir: its
// parent is root's 0700, and the bare side runs as uid 1000.
func corpusWorkDir(t *testing.T) string {
	t.Helper()
	d, err := os.MkdirTemp("", "ward-corpus-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := os.RemoveAll(d); err != nil {
			t.Errorf("remove %s: %v", d, err)
		}
	})
	for _, sub := range []string{"tmp", "bin"} {
		if err := os.Mkdir(filepath.Join(d, sub), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Chmod(d, 0o755); err != nil {
		t.Fatal(err)
	}
	return d
}

func chownTree(root string, uid, gid int) error {
	return filepath.WalkDir(root, func(p string, _ fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if err := os.Lchown(p, uid, gid); err != nil {
			return fmt.Errorf("chown %s to %d:%d: %w", p, uid, gid, err)
		}
		return nil
	})
}

// corpusRun runs args on one side and returns the combined output and the
// exit status; err is only for what kept it from running or ending.
func corpusRun(s corpusSuite, sd *side, args []string) ([]byte, int, error) {
	timeout := 8 * time.Minute
	if os.Getenv("WARD_VM") != "" {
		timeout = 10 * time.Minute
	}
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	dir := s.dir
	if dir == "" {
		dir = sd.work
	}
	dir = strings.ReplaceAll(dir, "WORK", sd.work)
	env := []string{"LANG=C.UTF-8", "HOME=" + sd.work, "TMPDIR=" + filepath.Join(sd.work, "tmp"), "USER=sandbox"}
	for _, e := range s.env {
		env = append(env, strings.ReplaceAll(e, "WORK", sd.work))
	}
	argv := make([]string, len(args))
	for i, a := range args {
		argv[i] = strings.ReplaceAll(a, "WORK", sd.work)
	}
	var cmd *exec.Cmd
	if sd.name == "bare" {
		// Every signal at its default, as a login shell and ward's
		// program process have it: ignored ones are inherited, and the
		// VM's test runs (started in the background) ignore SIGINT, so
		// syscall's TestPidFD waited an hour for a SIGINT there.
		argv = append([]string{"/usr/bin/env", "--default-signal"}, argv...)
		cmd = exec.CommandContext(ctx, argv[0], argv[1:]...)
		cmd.Dir, cmd.Env = dir, env
		cmd.SysProcAttr = &syscall.SysProcAttr{
			Credential: &syscall.Credential{Uid: corpusUID, Gid: corpusGID, Groups: []uint32{corpusGID}},
			Setpgid:    true,
		}
		// On timeout, the whole process group we started.
		cmd.Cancel = func() error { return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) }
	} else {
		wargs := []string{"run", "--allow-write=" + sd.work, "--workdir=" + dir}
		wargs = append(wargs, s.flags...)
		for _, e := range env {
			wargs = append(wargs, "--env="+e)
		}
		wargs = append(append(wargs, "--"), argv...)
		cmd = exec.CommandContext(ctx, wardBin, wargs...)
		cmd.Env = os.Environ()
	}
	// A file, not a pipe: Wait returns when the process ends, whatever
	// it left holding its output.
	f, err := os.CreateTemp("", "ward-corpus-out-")
	if err != nil {
		return nil, -1, err
	}
	defer os.Remove(f.Name())
	defer f.Close()
	cmd.Stdout, cmd.Stderr = f, f
	err = cmd.Run()
	if sd.name == "bare" && cmd.Process != nil {
		// What the suite left behind in its process group (ours).
		_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
	}
	out, rerr := os.ReadFile(f.Name())
	if rerr != nil {
		return nil, -1, rerr
	}
	if ctx.Err() != nil {
		return out, -1, fmt.Errorf("timed out after %v", timeout)
	}
	var ee *exec.ExitError
	switch {
	case err == nil:
		return out, 0, nil
	case errors.As(err, &ee):
		return out, exitCode(cmd, err), nil
	}
	return out, -1, err
}

// ---- Go: the standard library's own tests, compiled on the host.

var goCaseRE = regexp.MustCompile(`^\s*--- (PASS|FAIL|SKIP): (\S+) \(`)

func goSuite(t *testing.T, pkg, prebuilt string) corpusSuite {
	bin := strings.ReplaceAll(pkg, "/", "_") + ".test"
	return corpusSuite{
		name:  pkg,
		dir:   filepath.Join(goroot, "src", pkg),
		flags: []string{"--mount=" + goroot + ":" + goroot + ":ro"},
		env: []string{"PATH=" + goroot + "/bin:/usr/bin:/bin", "GOCACHE=WORK/gocache", "GOTMPDIR=WORK/tmp",
			"GOTOOLCHAIN=local", "GOPROXY=off"},
		prepare: func(t *testing.T, work string) error {
			src := filepath.Join(prebuilt, "go", bin)
			if prebuilt == "" {
				src = goTestBinary(t, pkg)
			}
			return corpusCopyFile(src, filepath.Join(work, "bin", bin), 0o755)
		},
		args: append([]string{"WORK/bin/" + bin, "-test.v", "-test.short", "-test.timeout=6m"}, goVMSkip(t, pkg)...),
		parse: func(out []byte, _ string) map[string]string {
			m := map[string]string{}
			sc := bufio.NewScanner(bytes.NewReader(out))
			sc.Buffer(make([]byte, 0, 64<<10), 4<<20)
			for sc.Scan() {
				if g := goCaseRE.FindStringSubmatch(sc.Text()); g != nil {
					m[g[2]] = map[string]string{"PASS": "pass", "FAIL": "fail", "SKIP": "skip"}[g[1]]
				}
			}
			return m
		},
		retry: func(cases []string) []string {
			tops := map[string]bool{}
			for _, c := range cases {
				top, _, _ := strings.Cut(c, "/")
				tops[regexp.QuoteMeta(top)] = true
			}
			var names []string
			for n := range tops {
				names = append(names, n)
			}
			sort.Strings(names)
			return []string{"WORK/bin/" + bin, "-test.v", "-test.short", "-test.run=^(" + strings.Join(names, "|") + ")$"}
		},
	}
}

// goVMSkip leaves out, in the VM only, what compiles a program with the Go
// toolchain from a cold cache on each side: minutes under TCG. The host's
// run has them.
func goVMSkip(t *testing.T, pkg string) []string {
	if os.Getenv("WARD_VM") == "" || pkg != "syscall" {
		return nil
	}
	t.Logf("in the VM, not run: syscall.TestUnshareMountNameSpaceChroot (it builds a program with the go command, minutes under TCG; the host's corpus runs it)")
	return []string{"-test.skip=^TestUnshareMountNameSpaceChroot$"}
}

var (
	goTestBinMu sync.Mutex
	goTestBins  = map[string]string{}
)

// goTestBinary compiles pkg's tests once per test process (go test -c).
func goTestBinary(t *testing.T, pkg string) string {
	goTestBinMu.Lock()
	defer goTestBinMu.Unlock()
	if p, ok := goTestBins[pkg]; ok {
		return p
	}
	dir, err := os.MkdirTemp("", "ward-corpus-bin-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	out := filepath.Join(dir, strings.ReplaceAll(pkg, "/", "_")+".test")
	cmd := exec.Command(filepath.Join(goroot, "bin", "go"), "test", "-c", "-o", out, pkg)
	cmd.Env = append(os.Environ(), "GOTOOLCHAIN=local", "GOFLAGS=")
	if b, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("go test -c %s: %v\n%s", pkg, err, b)
	}
	goTestBins[pkg] = out
	return out
}

// ---- Python: the regression tests of /usr/bin/python3 (Debian's
// libpython3.X-testsuite), with a JUnit report.

type junitCase struct {
	Name    string    `xml:"name,attr"`
	Failure *struct{} `xml:"failure"`
	Error   *struct{} `xml:"error"`
	Skipped *struct{} `xml:"skipped"`
}

func pythonSuite(t *testing.T, mods []string) corpusSuite {
	return corpusSuite{
		name: "python",
		env:  []string{"PATH=/usr/bin:/bin"},
		prepare: func(t *testing.T, _ string) error {
			out, err := exec.Command("/usr/bin/python3", "-c", "import test.test_os, sys; print('%d.%d' % sys.version_info[:2])").CombinedOutput()
			if err != nil {
				return fmt.Errorf("python's regression tests are missing (apt-get install libpython3.X-testsuite; make deps does): %v\n%s", err, out)
			}
			return nil
		},
		// Two workers: most of the time is sleeps (test_signal's alone is
		// 47 s), so this halves the wall time at little cost.
		args: append([]string{"/usr/bin/python3", "-m", "test", "-j2", "--junit-xml", "WORK/junit.xml", "-v"}, mods...),
		parse: func(_ []byte, work string) map[string]string {
			return parseJUnit(filepath.Join(work, "junit.xml"))
		},
		retry: func(cases []string) []string {
			args := []string{"/usr/bin/python3", "-m", "test", "--junit-xml", "WORK/junit.xml", "-v"}
			modSeen := map[string]bool{}
			for _, c := range cases {
				// test.test_os.Class.method
				parts := strings.Split(c, ".")
				if len(parts) > 2 && !modSeen[parts[1]] {
					modSeen[parts[1]] = true
					args = append(args, parts[1])
				}
			}
			for _, c := range cases {
				args = append(args, "-m", c)
			}
			return args
		},
	}
}

func parseJUnit(path string) map[string]string {
	m := map[string]string{}
	b, err := os.ReadFile(path)
	if err != nil {
		return m
	}
	var doc struct {
		Suites []struct {
			Cases []junitCase `xml:"testcase"`
		} `xml:"testsuite"`
	}
	if xml.Unmarshal(b, &doc) != nil {
		return m
	}
	for _, s := range doc.Suites {
		for _, c := range s.Cases {
			switch {
			case c.Failure != nil || c.Error != nil:
				m[c.Name] = "fail"
			case c.Skipped != nil:
				m[c.Name] = "skip"
			default:
				m[c.Name] = "pass"
			}
		}
	}
	return m
}

// ---- C: libuv, built with cmake/make/gcc on both sides, and its TAP
// output.

var tapRE = regexp.MustCompile(`^(ok|not ok) \d+ - (\S+)(.*)$`)

func libuvSuite(t *testing.T, prebuilt string, only []string) corpusSuite {
	s := corpusSuite{
		name: "libuv",
		dir:  "WORK/libuv",
		env:  []string{"PATH=/usr/bin:/bin", "UV_TEST_TIMEOUT_MULTIPLIER=" + map[bool]string{true: "10", false: "2"}[os.Getenv("WARD_VM") != ""]},
		parse: func(out []byte, _ string) map[string]string {
			m := map[string]string{}
			for _, l := range strings.Split(string(out), "\n") {
				if g := tapRE.FindStringSubmatch(strings.TrimRight(l, "\r")); g != nil {
					st := "pass"
					if g[1] == "not ok" {
						st = "fail"
					} else if strings.Contains(g[3], "# SKIP") {
						st = "skip"
					}
					m[g[2]] = st
				}
			}
			return m
		},
		retry: func(cases []string) []string {
			return append([]string{"/bin/sh", "-c", `for t; do build/uv_run_tests_a "$t"; done`, "sh"}, cases...)
		},
	}
	// Every case but libuvOffHost, one at a time.
	s.args = append([]string{"/bin/sh", "-c", `for t in $(build/uv_run_tests_a --list | awk '{print $1}'); do
	case " $* " in *" $t "*) continue ;; esac
	build/uv_run_tests_a "$t"
done`, "sh"}, libuvOffHost...)
	if only != nil {
		s.args = s.retry(only)
	}
	if prebuilt != "" {
		s.prepare = func(t *testing.T, work string) error {
			return copyTree(filepath.Join(prebuilt, "libuv"), filepath.Join(work, "libuv"))
		}
		return s
	}
	s.prepare = func(t *testing.T, work string) error {
		src, err := libuvSource()
		if err != nil {
			return err
		}
		return copyTree(src, filepath.Join(work, "libuv"))
	}
	s.build = []string{"/bin/sh", "-c", "cmake -S . -B build -DLIBUV_BUILD_TESTS=ON -DCMAKE_BUILD_TYPE=Debug >build.log && make -C build -j2 uv_run_tests_a >>build.log || { tail -50 build.log; exit 1; }"}
	return s
}

// libuvSource is libuv's source tree as make deps fetched it: Debian's
// source package, unpacked under $CORPUS_SRC (integration/corpus-src.sh).
func libuvSource() (string, error) {
	dir := os.Getenv("CORPUS_SRC")
	if dir == "" {
		dir = "/var/cache/ward-corpus"
	}
	src := filepath.Join(dir, "libuv")
	if _, err := os.Stat(filepath.Join(src, "CMakeLists.txt")); err != nil {
		return "", fmt.Errorf("libuv's source (make deps fetches it: bash integration/corpus-src.sh): %w", err)
	}
	return src, nil
}

func corpusCopyFile(src, dst string, mode os.FileMode) error {
	b, err := os.ReadFile(src)
	if err != nil {
		return err
	}
	return os.WriteFile(dst, b, mode)
}

// copyTree copies regular files, dirs and symlinks, writable by the owner.
func copyTree(src, dst string) error {
	return filepath.WalkDir(src, func(p string, e fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(src, p)
		to := filepath.Join(dst, rel)
		info, err := e.Info()
		if err != nil {
			return err
		}
		switch {
		case e.IsDir():
			return os.MkdirAll(to, info.Mode().Perm()|0o700)
		case info.Mode()&fs.ModeSymlink != 0:
			l, err := os.Readlink(p)
			if err != nil {
				return err
			}
			return os.Symlink(l, to)
		default:
			return corpusCopyFile(p, to, info.Mode().Perm()|0o600)
		}
	})
}

// excerpt is the output around the last mention of name.
func excerpt(out []byte, name string) string {
	lines := strings.Split(string(out), "\n")
	last := -1
	for i, l := range lines {
		if strings.Contains(l, name) {
			last = i
		}
	}
	if last < 0 {
		return "(not in the output)"
	}
	from := max(0, last-25)
	return strings.Join(lines[from:min(len(lines), last+3)], "\n")
}

func tail(out []byte, n int) string {
	lines := strings.Split(strings.TrimRight(string(out), "\n"), "\n")
	return strings.Join(lines[max(0, len(lines)-n):], "\n")
}
