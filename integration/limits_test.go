package integration

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// forkBomb tries 3000 forks; each child sleeps, so they pile up, and the
// count of successful forks is printed. Bounded: it can never outlive its
// sandbox, and the children exit after 2 s anyway.
const forkBomb = `
import os, time
n = 0
for i in range(3000):
    try:
        pid = os.fork()
    except OSError:
        continue
    if pid == 0:
        time.sleep(2)
        os._exit(0)
    n += 1
print("forked", n)
`

func TestLimitsExitCodesAndStatus(t *testing.T) {
	for _, tc := range []struct {
		name       string
		args       []string
		wantCode   int
		wantStatus string
		stderrHas  string
		within     time.Duration
	}{
		{"memory hog under 64M is OOM: 125", []string{"--memory-limit=64M", "python3", "-c", "b = bytearray(300 << 20); print(len(b))"},
			125, "memory", "ward: memory limit exceeded (64M)", 0},
		{"untouched 1G mapping under 64M is fine", []string{"--memory-limit=64M", "python3", "-c", "import mmap; m = mmap.mmap(-1, 1 << 30); print('mapped')"},
			0, "exited", "", 0},
		{"spin under 1s of CPU: 124 cpu_timeout", []string{"--cpu-time-limit=1s", "sh", "-c", "while :; do :; done"},
			124, "cpu_timeout", "ward: execution exceeded CPU time limit (1s)", 4 * time.Second},
		{"two spinning threads share one CPU budget", []string{"--cpu-time-limit=1s", "python3", "-c",
			"import threading\ndef spin():\n    while True: pass\nfor _ in range(2): threading.Thread(target=spin, daemon=True).start()\nspin()"},
			124, "cpu_timeout", "", 4 * time.Second},
		{"exit code kept under every limit", []string{"--memory-limit=64M", "--cpu-time-limit=5s", "--cpu-limit=50", "--processes=10",
			"--file-descriptors=64", "--max-file-size=1M", "sh", "-c", "exit 7"}, 7, "exited", "", 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			report := filepath.Join(t.TempDir(), "r.json")
			args := append([]string{"run", "--report=" + report}, tc.args...)
			r := run(t, opts{}, args...)
			if r.code != tc.wantCode {
				t.Fatalf("exit %d, want %d\n%s", r.code, tc.wantCode, r)
			}
			rep := readReport(t, report, r)
			if rep["status"] != tc.wantStatus {
				t.Errorf("status %v, want %s\n%s", rep["status"], tc.wantStatus, r)
			}
			if tc.stderrHas != "" && !strings.Contains(r.stderr, tc.stderrHas) {
				t.Errorf("stderr lacks %q\n%s", tc.stderrHas, r)
			}
			if tc.within > 0 && r.elapsed > tc.within {
				t.Errorf("took %v, want under %v", r.elapsed, tc.within)
			}
			if tc.wantStatus == "memory" && rep["oom_killed"] != true {
				t.Errorf("oom_killed = %v, want true", rep["oom_killed"])
			}
		})
	}
}

func TestLimitsForkBombHeld(t *testing.T) {
	r := run(t, opts{stdin: forkBomb}, "run", "--processes=30", "--", "python3", "-")
	if r.code != 0 {
		t.Fatalf("the fork bomb's sandbox failed\n%s", r)
	}
	n, err := strconv.Atoi(strings.TrimSpace(strings.TrimPrefix(strings.TrimSpace(r.stdout), "forked")))
	if err != nil {
		t.Fatalf("no fork count\n%s", r)
	}
	if n >= 30 || n < 20 {
		t.Errorf("forked %d children under --processes=30; want fewer than 30 (the program itself counts) and more than 20 (ward's init must not eat the budget)", n)
	}
}

func TestLimitsProcessesOneMeansNoFork(t *testing.T) {
	if r := run(t, opts{}, "run", "--processes=1", "--", "/bin/echo", "single"); r.code != 0 || strings.TrimSpace(r.stdout) != "single" {
		t.Errorf("a single-threaded program must run under --processes=1\n%s", r)
	}
	r := run(t, opts{}, "run", "--processes=1", "--", "python3", "-c",
		"import os\ntry:\n    os.fork()\n    print('forked')\nexcept OSError as e:\n    print('fork failed', e.errno)")
	if !strings.Contains(r.stdout, "fork failed 11") {
		t.Errorf("fork under --processes=1 must fail with EAGAIN\n%s", r)
	}
}

func TestLimitsCPUShare(t *testing.T) {
	report := filepath.Join(t.TempDir(), "r.json")
	r := run(t, opts{}, "run", "--report="+report, "--cpu-limit=25", "--sandbox-log=verbose", "--",
		"python3", "-c", "import time\nt = time.time()\nwhile time.time() - t < 2: pass")
	if r.code != 0 {
		t.Fatalf("exit %d\n%s", r.code, r)
	}
	rep := readReport(t, report, r)
	cpu, wall := num(t, rep, "cpu_time_ms"), num(t, rep, "wall_time_ms")
	if ratio := cpu / wall; ratio < 0.1 || ratio > 0.4 {
		t.Errorf("cpu/wall = %.2f under --cpu-limit=25, want between 0.1 and 0.4", ratio)
	}
	if num(t, rep, "cpu_throttled_ms") <= 0 {
		t.Errorf("cpu_throttled_ms = %v, want > 0", rep["cpu_throttled_ms"])
	}
	if !strings.Contains(r.stderr, "[SANDBOX] Warning: CPU usage throttled to 25%") {
		t.Errorf("verbose log lacks the throttling warning\n%s", r)
	}
}

func TestLimitsFilesAndScratch(t *testing.T) {
	for _, tc := range []struct {
		name  string
		args  []string
		stdin string
		want  string
	}{
		{"--file-descriptors=40 stops the 38th open", []string{"--file-descriptors=40", "python3", "-"},
			"import os\nfds = []\ntry:\n    while True: fds.append(os.open('/dev/null', os.O_RDONLY))\nexcept OSError as e:\n    print('opened', len(fds), 'errno', e.errno)\n",
			"opened 37 errno 24"},
		{"--max-file-size=1M stops a 5M write with EFBIG", []string{"--max-file-size=1M", "python3", "-"},
			"import os\nf = os.open('/tmp/big', os.O_WRONLY | os.O_CREAT)\nn = 0\ntry:\n    while n < 5 << 20: n += os.write(f, b'x' * 65536)\nexcept OSError as e:\n    print('wrote', n, 'errno', e.errno)\n",
			"wrote 1048576 errno 27"},
		{"filling /tmp ends in ENOSPC", []string{"python3", "-"},
			"import os\nf = os.open('/tmp/fill', os.O_WRONLY | os.O_CREAT)\nn = 0\ntry:\n    while n < 1 << 30: n += os.write(f, b'x' * (1 << 20))\nexcept OSError as e:\n    print('errno', e.errno, 'after', n >> 20, 'MiB')\n",
			"errno 28 after 256 MiB"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := run(t, opts{stdin: tc.stdin}, append([]string{"run"}, tc.args...)...)
			if !strings.Contains(r.stdout, tc.want) {
				t.Errorf("stdout lacks %q\n%s", tc.want, r)
			}
		})
	}
}

func TestLimitsReportFigures(t *testing.T) {
	report := filepath.Join(t.TempDir(), "r.json")
	r := run(t, opts{}, "run", "--report="+report, "--memory-limit=128M", "--cpu-time-limit=10s", "--processes=50", "--",
		"python3", "-c", "b = bytearray(32 << 20); import os; os.system('true')")
	if r.code != 0 {
		t.Fatalf("exit %d\n%s", r.code, r)
	}
	rep := readReport(t, report, r)
	if peak := num(t, rep, "memory_peak_bytes"); peak < 32<<20 || peak > 128<<20 {
		t.Errorf("memory_peak_bytes = %v, want between 32M (what it touched) and 128M (the limit)", peak)
	}
	if n := num(t, rep, "processes_peak"); n < 1 {
		t.Errorf("processes_peak = %v", n)
	}
	// The kernel splits CPU time into user and system by sampling at its
	// ticks, so a short, page-fault-heavy program can show 0 user time, and
	// the parts only roughly add up to the total, which is exact.
	cpu, user, sys := num(t, rep, "cpu_time_ms"), num(t, rep, "user_time_ms"), num(t, rep, "sys_time_ms")
	if cpu <= 0 || user < 0 || sys < 0 || user+sys <= 0 {
		t.Errorf("cpu figures missing: cpu %v user %v sys %v", cpu, user, sys)
	}
	lim, _ := rep["limits"].(map[string]any)
	if lim["memory_limit_bytes"] != float64(128<<20) || lim["cpu_time_limit_ms"] != float64(10000) || lim["processes"] != float64(50) {
		t.Errorf("limits not echoed: %v", lim)
	}
}

func TestLimitsIsolateMetaFile(t *testing.T) {
	dir := t.TempDir()
	for _, tc := range []struct {
		name string
		args []string
		want []string
	}{
		{"ok", []string{"true"}, []string{"time:", "time-wall:", "max-rss:", "cg-mem:", "csw-voluntary:", "exitcode:0"}},
		{"runtime error", []string{"sh", "-c", "exit 3"}, []string{"exitcode:3", "status:RE"}},
		{"timeout", []string{"--time-limit=300ms", "sleep", "5"}, []string{"killed:1", "status:TO"}},
		{"oom", []string{"--memory-limit=32M", "python3", "-c", "b = bytearray(200 << 20)"}, []string{"cg-oom-killed:1", "status:SG"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			meta := filepath.Join(dir, tc.name+".meta")
			run(t, opts{}, append([]string{"run", "--meta=" + meta}, tc.args...)...)
			b, err := os.ReadFile(meta)
			if err != nil {
				t.Fatal(err)
			}
			for _, w := range tc.want {
				if !strings.Contains(string(b), "\n"+w) && !strings.HasPrefix(string(b), w) {
					t.Errorf("meta lacks %q:\n%s", w, b)
				}
			}
		})
	}
}

func TestLimitsBadValuesExit2(t *testing.T) {
	for _, args := range [][]string{
		{"--memory-limit=lots"}, {"--memory-limit=0"}, {"--memory-limit=100"}, {"--cpu-time-limit=-1s"},
		{"--cpu-limit=-5"}, {"--processes=0"}, {"--max-file-size=x"}, {"--meta=/nonexistent-dir/m"},
	} {
		r := run(t, opts{}, append(append([]string{"run"}, args...), "--", "true")...)
		flag, _, _ := strings.Cut(strings.TrimPrefix(args[0], "--"), "=")
		if r.code != 2 || !strings.Contains(r.stderr, flag) {
			t.Errorf("%v: exit %d, want 2 and a message naming %s\n%s", args, r.code, flag, r)
		}
	}
}

// TestCleanRemovesStaleCgroupAfterSIGKILL: a ward killed by SIGKILL cannot
// remove its cgroup; `ward clean` (and the next run) does.
func TestCleanRemovesStaleCgroupAfterSIGKILL(t *testing.T) {
	u := uniqueArg()
	killSurvivors(t, u)
	p := startWard(t, opts{}, "run", "sleep", u)
	if !waitForProc(u, "sleep", 10*time.Second) {
		_ = p.cmd.Process.Kill()
		t.Fatalf("sandbox never started\n%s", p.wait())
	}
	pid := p.cmd.Process.Pid
	_ = p.cmd.Process.Kill()
	p.wait()
	if pids := waitGone(u, 3*time.Second); len(pids) > 0 {
		t.Fatalf("sandbox survived ward's SIGKILL: %v", pids)
	}
	left := wardCgroups("ward-" + strconv.Itoa(pid) + "-")
	if len(left) == 0 {
		t.Fatalf("expected the killed ward's cgroup to be left behind (nothing to test)")
	}
	r := run(t, opts{}, "clean")
	if r.code != 0 || !strings.Contains(r.stdout, "removed cgroup") {
		t.Errorf("ward clean did not say what it removed\n%s", r)
	}
	if left := wardCgroups("ward-" + strconv.Itoa(pid) + "-"); len(left) > 0 {
		t.Errorf("still there after ward clean: %v", left)
	}
}

// wardCgroups lists cgroup directories (any hierarchy, any depth) whose
// name starts with prefix.
func wardCgroups(prefix string) []string {
	var found []string
	_ = filepath.WalkDir("/sys/fs/cgroup", func(p string, d os.DirEntry, err error) error {
		if err != nil || !d.IsDir() {
			return nil
		}
		if strings.HasPrefix(d.Name(), prefix) {
			found = append(found, p)
			return filepath.SkipDir
		}
		return nil
	})
	return found
}

// staleWardCgroups lists ward-<pid>-* cgroups whose ward is gone: a
// leak. (Those of live wards belong to runs still going, e.g. a parallel
// test run.)
func staleWardCgroups() []string {
	var stale []string
	for _, p := range wardCgroups("ward-") {
		parts := strings.SplitN(filepath.Base(p), "-", 3)
		if len(parts) < 3 {
			continue
		}
		pid, err := strconv.Atoi(parts[1])
		if err != nil {
			continue
		}
		if _, err := os.Stat(fmt.Sprintf("/proc/%d", pid)); os.IsNotExist(err) {
			stale = append(stale, p)
		}
	}
	return stale
}

func num(t *testing.T, m map[string]any, k string) float64 {
	t.Helper()
	v, ok := m[k].(float64)
	if !ok {
		t.Errorf("%s = %v, want a number", k, m[k])
	}
	return v
}

// TestLimitsFileDescriptorDefault: with no --file-descriptors the program
// starts at soft 1024 and may raise itself to 524288, or to ward's own hard
// limit when that is lower (issue 20); the flag sets both.
func TestLimitsFileDescriptorDefault(t *testing.T) {
	const probe = `import resource
soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
print("nofile", soft, hard)
resource.setrlimit(resource.RLIMIT_NOFILE, (hard, hard))
import os
fds = [os.open("/dev/null", os.O_RDONLY) for _ in range(min(hard, 1100) - 10)]
print("opened", len(fds))
`
	var own syscall.Rlimit
	if err := syscall.Getrlimit(syscall.RLIMIT_NOFILE, &own); err != nil {
		t.Fatal(err)
	}
	ownHard := min(own.Max, 524288)
	for _, tc := range []struct {
		name       string
		ulimit     string // the hard limit ward itself is started with ("": the test's)
		args       []string
		soft, hard uint64
	}{
		{"unset: soft 1024, hard up to 524288", "", nil, 1024, ownHard},
		{"unset under ward's hard 2000: hard 2000", "2000", nil, 1024, 2000},
		{"unset under ward's hard 600: both 600", "600", nil, 600, 600},
		{"--file-descriptors=1500 sets both", "", []string{"--file-descriptors=1500"}, 1500, 1500},
	} {
		t.Run(tc.name, func(t *testing.T) {
			report := filepath.Join(t.TempDir(), "r.json")
			args := append([]string{"run", "--report=" + report}, tc.args...)
			args = append(args, "--", "python3", "-")
			var r result
			if tc.ulimit == "" {
				r = run(t, opts{stdin: probe}, args...)
			} else {
				// Only ward's own process (a child shell) gets the lower limit.
				ctx, cancel := context.WithTimeout(context.Background(), safetyTimeout)
				defer cancel()
				cmd := exec.CommandContext(ctx, "sh", append([]string{"-c", `ulimit -n "$0" && exec "$@"`, tc.ulimit, wardBin}, args...)...)
				cmd.Stdin = strings.NewReader(probe)
				r = runCmd(t, ctx, cmd, args)
			}
			if r.code != 0 {
				t.Fatalf("exit %d\n%s", r.code, r)
			}
			want := fmt.Sprintf("nofile %d %d\nopened %d\n", tc.soft, tc.hard, min(tc.hard, 1100)-10)
			if r.stdout != want {
				t.Errorf("program printed %q, want %q\n%s", r.stdout, want, r)
			}
			lim, _ := readReport(t, report, r)["limits"].(map[string]any)
			if lim["file_descriptors"] != float64(tc.soft) || lim["file_descriptors_hard"] != float64(tc.hard) {
				t.Errorf("report limits file_descriptors=%v file_descriptors_hard=%v, want %d and %d", lim["file_descriptors"], lim["file_descriptors_hard"], tc.soft, tc.hard)
			}
		})
	}
	if r := run(t, opts{}, "run", "--file-descriptors=0", "--", "true"); r.code != 2 || !strings.Contains(r.stderr, "--file-descriptors=0") {
		t.Errorf("--file-descriptors=0 must be refused (exit 2) naming the flag\n%s", r)
	}
}

// TestLimitsOtherRlimitsAsTheCallers: stack, locked memory, message queues,
// pending signals, file size and the rest are the caller's own; only
// RLIMIT_CORE is 0 (docs/limits.md says why).
func TestLimitsOtherRlimitsAsTheCallers(t *testing.T) {
	const probe = `import resource
for name in sorted(n for n in dir(resource) if n.startswith("RLIMIT_")):
    print(name, *resource.getrlimit(getattr(resource, name)))
`
	bare, err := exec.Command("/usr/bin/python3", "-c", probe).Output()
	if err != nil {
		t.Fatalf("python3 bare: %v", err)
	}
	r := run(t, opts{stdin: probe}, "run", "--", "/usr/bin/python3", "-")
	if r.code != 0 {
		t.Fatalf("exit %d\n%s", r.code, r)
	}
	inside := map[string]string{}
	for _, l := range strings.Split(strings.TrimSpace(r.stdout), "\n") {
		k, v, _ := strings.Cut(l, " ")
		inside[k] = v
	}
	for _, l := range strings.Split(strings.TrimSpace(string(bare)), "\n") {
		k, v, _ := strings.Cut(l, " ")
		want := v
		switch k {
		case "RLIMIT_NOFILE", "RLIMIT_OFILE":
			continue // TestLimitsFileDescriptorDefault
		case "RLIMIT_CORE":
			want = "0 0"
		}
		if inside[k] != want {
			t.Errorf("%s inside is %q, want %q (outside: %q)", k, inside[k], want, v)
		}
	}
}
