package integration

import (
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"golang.org/x/sys/unix"
)

// ociReport is the part of ward's result JSON (docs/result.md) the tests
// of the ward.report annotation check.
type ociReport struct {
	Status          string          `json:"status"`
	ExitCode        *int            `json:"exit_code"`
	Signal          *int            `json:"signal"`
	WardExitCode    int             `json:"ward_exit_code"`
	WallTimeMs      *float64        `json:"wall_time_ms"`
	CPUTimeMs       *float64        `json:"cpu_time_ms"`
	MemoryPeakBytes *int64          `json:"memory_peak_bytes"`
	SyscallsDenied  json.RawMessage `json:"syscalls_denied"`
	Layers          []string        `json:"layers"`
	Limits          struct {
		Processes *int `json:"processes"`
	} `json:"limits"`
	Error *string `json:"error"`
}

// reportConfig writes config.json for id running args, with the
// ward.report annotation naming report, a pids limit, and a seccomp
// profile that allows everything but mkdir and mkdirat (EPERM) and kill
// with signal 0 (EACCES).
func (e *ociEnv) reportConfig(id, report string, args ...string) {
	e.t.Helper()
	e.config(id, args...)
	e.edit(func(c map[string]any) {
		c["annotations"] = map[string]any{"ward.report": report}
		l := c["linux"].(map[string]any)
		l["resources"] = map[string]any{"pids": map[string]any{"limit": 64}}
		l["seccomp"] = map[string]any{"defaultAction": "SCMP_ACT_ALLOW",
			"syscalls": []any{map[string]any{"names": []string{"mkdir", "mkdirat"}, "action": "SCMP_ACT_ERRNO", "errnoRet": 1},
				map[string]any{"names": []string{"kill"}, "action": "SCMP_ACT_ERRNO", "errnoRet": 13,
					"args": []any{map[string]any{"index": 1, "value": 0, "op": "SCMP_CMP_EQ"}}}}}
	})
}

// readOCIReport reads and decodes the report file, failing the test if it
// is missing.
func readOCIReport(t *testing.T, path string) (ociReport, string) {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("the report: %v", err)
	}
	var r ociReport
	if err := json.Unmarshal(b, &r); err != nil {
		t.Fatalf("the report %s: %v", b, err)
	}
	return r, string(b)
}

// TestOCIReport: with the ward.report annotation, the pid file names the
// init, which stays as PID 1 in the container's cgroup; the program (PID
// 2) runs under config.json's seccomp profile and exits 3 after a denied
// mkdir; the subreaper sees 3; delete writes ward's result JSON: exited,
// exit code 3, the cgroup's figures, the limits and the denied mkdir.
func TestOCIReport(t *testing.T) {
	e := newOCIEnv(t)
	e.applets("mkdir")
	report := filepath.Join(t.TempDir(), "report.json")
	e.reportConfig("r1", report, "sh", "-c", "echo pid $$; mkdir /tmp/x || echo denied; kill -0 $$ || echo no kill; kill -0 $$; exit 3")
	out, err := os.Create(filepath.Join(t.TempDir(), "out"))
	if err != nil {
		t.Fatal(err)
	}
	defer out.Close()
	pid := e.create("r1", out)
	e.must(nil, "start", "r1")
	if ws := reapPid(pid); !ws.Exited() || ws.ExitStatus() != 3 {
		t.Fatalf("the subreaper saw %v, want exit 3 (the program's)", ws)
	}
	b, _ := os.ReadFile(out.Name())
	if !strings.Contains(string(b), "pid 2\n") || !strings.Contains(string(b), "Operation not permitted") || !strings.Contains(string(b), "denied\n") ||
		!strings.Contains(string(b), "Permission denied") || !strings.Contains(string(b), "no kill\n") {
		t.Errorf("the program wrote %q, want pid 2 (the init is PID 1), mkdir denied with EPERM, kill -0 with EACCES", b)
	}
	if _, err := os.Stat(report); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("the report is there before delete: %v", err)
	}
	e.must(nil, "delete", "r1")
	e.gone("r1", pid)
	r, raw := readOCIReport(t, report)
	t.Logf("report: %s", raw)
	if r.Status != "exited" || r.ExitCode == nil || *r.ExitCode != 3 || r.Signal != nil || r.WardExitCode != 3 || r.Error != nil {
		t.Errorf("report %s: want exited, exit_code 3, ward_exit_code 3, no signal or error", raw)
	}
	if r.CPUTimeMs == nil || *r.CPUTimeMs < 0 || r.WallTimeMs == nil || *r.WallTimeMs < 0 {
		t.Errorf("report %s: want the cgroup's CPU time and the wall time", raw)
	}
	if r.MemoryPeakBytes == nil || *r.MemoryPeakBytes <= 0 {
		if _, err := os.Stat("/sys/fs/cgroup/cgroup.controllers"); err == nil && !fileInCgroupRoot("memory.peak") {
			t.Logf("memory_peak_bytes null: this kernel's cgroup v2 has no memory.peak")
		} else {
			t.Errorf("report %s: want the cgroup's memory peak", raw)
		}
	}
	if r.Limits.Processes == nil || *r.Limits.Processes != 64 {
		t.Errorf("report %s: want limits.processes 64 (linux.resources.pids.limit)", raw)
	}
	if strings.Join(r.Layers, ",") != "namespaces,seccomp" {
		t.Errorf("report %s: layers %v, want namespaces,seccomp", raw, r.Layers)
	}
	// The init served the profile's listener: the one mkdir and the two
	// kills with signal 0, each denied with its rule's errno, most
	// frequent first.
	var denied []struct {
		Syscall, Errno string
		Count          int
	}
	if err := json.Unmarshal(r.SyscallsDenied, &denied); err != nil || len(denied) != 2 ||
		denied[0].Syscall != "kill" || denied[0].Errno != "EACCES" || denied[0].Count != 2 ||
		denied[1].Syscall != "mkdir" || denied[1].Errno != "EPERM" || denied[1].Count != 1 {
		t.Errorf("report %s: syscalls_denied %s, want kill EACCES twice, mkdir EPERM once", raw, r.SyscallsDenied)
	}
}

// fileInCgroupRoot says whether a cgroup file exists in some cgroup below
// the v2 root (the root itself has no memory.peak).
func fileInCgroupRoot(name string) bool {
	self, err := os.ReadFile("/proc/self/cgroup")
	if err != nil {
		return false
	}
	dir := strings.TrimSpace(strings.TrimPrefix(string(self), "0::"))
	_, err = os.Stat(filepath.Join("/sys/fs/cgroup", dir, name))
	return err == nil
}

// TestOCIReportSignals: exec sees the init as PID 1 and the program as
// PID 2; kill's SIGTERM reaches the program through the
// init, which exits 128+15 (a namespace's init cannot die of its own
// signal) and records the signal; delete --force of a running container
// kills the init with SIGKILL, and the report says so.
func TestOCIReportSignals(t *testing.T) {
	e := newOCIEnv(t)
	for _, c := range []struct {
		id, sig                string
		wantSignal, wantStatus int
		force                  bool
	}{
		{"r2", "TERM", 15, 143, false},
		{"r3", "", 9, -1, true},
	} {
		report := filepath.Join(t.TempDir(), "report.json")
		e.reportConfig(c.id, report, "sleep", "1000")
		pid := e.create(c.id, nil)
		e.must(nil, "start", c.id)
		// exec joins the init's namespaces, which are the container's:
		// PID 1 is the init, the program PID 2.
		if code, out := e.execOut(c.id, "cat", "/proc/1/comm", "/proc/2/comm"); code != 0 || out != "ward-init\nsleep\n" {
			t.Errorf("%s: exec cat /proc/1/comm /proc/2/comm: exit %d, %q; want ward-init and sleep", c.id, code, out)
		}
		if c.force {
			e.must(nil, "delete", "--force", c.id)
			reapPid(pid)
		} else {
			e.must(nil, "kill", c.id, c.sig)
			if ws := reapPid(pid); !ws.Exited() || ws.ExitStatus() != c.wantStatus {
				t.Fatalf("%s: the subreaper saw %v, want exit %d", c.id, ws, c.wantStatus)
			}
			e.must(nil, "delete", c.id)
		}
		e.gone(c.id, pid)
		r, raw := readOCIReport(t, report)
		if r.Status != "signaled" || r.Signal == nil || *r.Signal != c.wantSignal || r.ExitCode != nil || r.WardExitCode != 128+c.wantSignal {
			t.Errorf("%s: report %s: want signaled, signal %d", c.id, raw, c.wantSignal)
		}
		if c.force && r.Error == nil {
			t.Errorf("%s: report %s: want an error saying the init was killed", c.id, raw)
		}
	}
}

// TestOCIReportRelativeRefused: a relative ward.report FILE is refused by
// create, naming the annotation, and nothing is left.
func TestOCIReportRelativeRefused(t *testing.T) {
	e := newOCIEnv(t)
	e.reportConfig("r4", "report.json", "true")
	r := e.run(nil, "create", "--bundle", e.bundle, "r4")
	if r.code == 0 || !strings.Contains(r.stderr, "annotations.ward.report") || !strings.Contains(r.stderr, "absolute") {
		t.Fatalf("create with a relative ward.report: %+v, want a failure naming annotations.ward.report", r)
	}
	if _, err := os.Stat(filepath.Join(e.root, "r4")); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("the state of r4 is there: %v", err)
	}
}

// TestOCIReportRun: ward-oci run (create, start, wait, delete) writes the
// report too, and exits with the program's status; without a seccomp
// profile there is no listener and syscalls_denied is null.
func TestOCIReportRun(t *testing.T) {
	e := newOCIEnv(t)
	report := filepath.Join(t.TempDir(), "report.json")
	e.reportConfig("r5", report, "sh", "-c", "exit 5")
	e.edit(func(c map[string]any) { delete(c["linux"].(map[string]any), "seccomp") })
	if r := e.run(nil, "run", "--bundle", e.bundle, "r5"); r.code != 5 {
		t.Fatalf("run: %+v, want exit 5", r)
	}
	r, raw := readOCIReport(t, report)
	if r.Status != "exited" || r.ExitCode == nil || *r.ExitCode != 5 || string(r.SyscallsDenied) != "null" || strings.Join(r.Layers, ",") != "namespaces" {
		t.Errorf("report %s: want exited, exit_code 5, syscalls_denied null, layers namespaces", raw)
	}
	if _, err := os.Stat(filepath.Join(e.root, "r5")); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("the state of r5 is there: %v", err)
	}
}

// TestOCIReportConsole: with a terminal, the pty master the program's
// process sends reaches the console socket through the init's relay, the
// program has it as its controlling terminal, and the report is written.
func TestOCIReportConsole(t *testing.T) {
	e := newOCIEnv(t)
	report := filepath.Join(t.TempDir(), "report.json")
	e.reportConfig("r6", report, "sh", "-c", ttyScript)
	e.terminal(true)
	sock, ch := consoleSocket(t)
	pidFile := filepath.Join(t.TempDir(), "pid")
	e.must(nil, "create", "--bundle", e.bundle, "--console-socket", sock, "--pid-file", pidFile, "r6")
	pid := readPid(t, pidFile)
	t.Cleanup(func() { _ = unix.Kill(pid, unix.SIGKILL); reapPid(pid) })
	m := e.master(ch)
	e.must(nil, "start", "r6")
	out := readPty(m)
	if ws := reapPid(pid); !ws.Exited() || ws.ExitStatus() != 3 {
		t.Errorf("the subreaper saw %v, want exit 3 (the program's)", ws)
	}
	if !strings.HasPrefix(out, "/dev/pts/0\nisatty\nctty\n") {
		t.Errorf("the program wrote %q on its terminal, want its pty as stdio and controlling terminal", out)
	}
	e.must(nil, "delete", "r6")
	e.gone("r6", pid)
	if r, raw := readOCIReport(t, report); r.Status != "exited" || r.ExitCode == nil || *r.ExitCode != 3 {
		t.Errorf("report %s: want exited, exit_code 3", raw)
	}
}
