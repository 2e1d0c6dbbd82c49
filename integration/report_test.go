package integration

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// reportKeys must all be present in every result object (null when unknown).
var reportKeys = []string{
	"status", "exit_code", "signal",
	"wall_time_ms", "cpu_time_ms", "user_time_ms", "sys_time_ms",
	"memory_peak_bytes", "cpu_throttled_ms", "processes_peak",
	"stdout_truncated", "stderr_truncated",
	"network", "limits", "error",
}

// checkReportShape asserts presence and types of every documented key.
func checkReportShape(t *testing.T, rep map[string]any) {
	t.Helper()
	for _, k := range reportKeys {
		if _, ok := rep[k]; !ok {
			t.Errorf("report lacks key %q", k)
		}
	}
	if _, ok := rep["status"].(string); !ok {
		t.Errorf("status = %#v, want a string", rep["status"])
	}
	for _, k := range []string{"wall_time_ms", "cpu_time_ms", "user_time_ms", "sys_time_ms"} {
		if v, ok := rep[k].(float64); !ok || v < 0 {
			t.Errorf("%s = %#v, want a number >= 0", k, rep[k])
		}
	}
	for _, k := range []string{"memory_peak_bytes", "cpu_throttled_ms", "processes_peak"} {
		if v, ok := rep[k]; ok && v != nil {
			if _, isNum := v.(float64); !isNum {
				t.Errorf("%s = %#v, want a number or null", k, v)
			}
		}
	}
	for _, k := range []string{"stdout_truncated", "stderr_truncated"} {
		if _, ok := rep[k].(bool); !ok {
			t.Errorf("%s = %#v, want a bool", k, rep[k])
		}
	}
	if _, ok := rep["network"].([]any); !ok {
		t.Errorf("network = %#v, want an array", rep["network"])
	}
	if _, ok := rep["limits"].(map[string]any); !ok {
		t.Errorf("limits = %#v, want an object", rep["limits"])
	}
	if e, ok := rep["error"]; ok && e != nil {
		if _, isStr := e.(string); !isStr {
			t.Errorf("error = %#v, want null or a string", e)
		}
	}
}

// TestReportSetupMsTimesEachSide: setup_ms has the steps of ward's side,
// the init's (its runtime's start included) and the program's process's.
func TestReportSetupMsTimesEachSide(t *testing.T) {
	r := run(t, opts{}, "run", "--json", "true")
	rep := decodeOne(t, "--json stdout", r.stdout)
	steps, ok := rep["setup_ms"].(map[string]any)
	if !ok {
		t.Fatalf("setup_ms = %#v, want an object\n%s", rep["setup_ms"], r)
	}
	for _, k := range []string{"total", "create-cgroup", "clone-init", "start-init", "receive-config", "build-root", "enter-cgroup", "set-user", "seccomp"} {
		if v, ok := steps[k].(float64); !ok || v < 0 {
			t.Errorf("setup_ms[%q] = %#v, want a number >= 0", k, steps[k])
		}
	}
}

func readReport(t *testing.T, path string, r result) map[string]any {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("report file not written: %v\n%s", err, r)
	}
	return decodeOne(t, "report file", string(b))
}

func TestReportStatusExitCodeSignal(t *testing.T) {
	cases := []struct {
		name       string
		args       []string // after --report
		wantExit   int
		status     string
		exitCode   any // float64 or nil
		signal     any // float64 or nil; skip is "any"
		checkSig   bool
		timeLimitM any // limits.time_limit_ms wanted, nil: not checked
	}{
		{name: "clean exit", args: []string{"true"}, wantExit: 0, status: "exited", exitCode: 0.0, signal: nil, checkSig: true},
		{name: "exit code kept", args: []string{"sh", "-c", "exit 3"}, wantExit: 3, status: "exited", exitCode: 3.0, signal: nil, checkSig: true},
		{name: "killed by signal", args: []string{"sh", "-c", "kill -9 $$"}, wantExit: 137, status: "signaled", exitCode: nil, signal: 9.0, checkSig: true},
		{name: "wall time limit", args: []string{"--time-limit=1s", "sleep", "120"}, wantExit: 124, status: "timeout", exitCode: nil, timeLimitM: 1000.0},
		{name: "limit recorded when not hit", args: []string{"--time-limit=5s", "true"}, wantExit: 0, status: "exited", exitCode: 0.0, timeLimitM: 5000.0},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			needRoot(t)
			path := filepath.Join(t.TempDir(), "report.json")
			r := run(t, opts{}, append([]string{"run", "--report=" + path}, c.args...)...)
			if r.code != c.wantExit {
				t.Errorf("ward exit code %d, want %d", r.code, c.wantExit)
			}
			rep := readReport(t, path, r)
			checkReportShape(t, rep)
			if rep["status"] != c.status {
				t.Errorf("status = %#v, want %q", rep["status"], c.status)
			}
			if rep["exit_code"] != c.exitCode {
				t.Errorf("exit_code = %#v, want %#v", rep["exit_code"], c.exitCode)
			}
			if c.checkSig && rep["signal"] != c.signal {
				t.Errorf("signal = %#v, want %#v", rep["signal"], c.signal)
			}
			// A limit violation may explain itself in error; a program that
			// merely exited or died of a signal is not an error of ward's.
			if (c.status == "exited" || c.status == "signaled") && rep["error"] != nil {
				t.Errorf("error = %#v, want null", rep["error"])
			}
			if c.timeLimitM != nil {
				lim, _ := rep["limits"].(map[string]any)
				if lim["time_limit_ms"] != c.timeLimitM {
					t.Errorf("limits.time_limit_ms = %#v, want %#v", lim["time_limit_ms"], c.timeLimitM)
				}
			}
			if _, ok := rep["stdout"]; ok {
				t.Errorf("report file has a stdout field; it belongs to --json only")
			}
			if _, ok := rep["stderr"]; ok {
				t.Errorf("report file has a stderr field; it belongs to --json only")
			}
			if t.Failed() {
				t.Logf("%s\nreport: %v", r, rep)
			}
		})
	}
}

func TestReportWallTimeCoversRun(t *testing.T) {
	path := filepath.Join(t.TempDir(), "report.json")
	r := run(t, opts{}, "run", "--report="+path, "sleep", "0.3")
	rep := readReport(t, path, r)
	checkReportShape(t, rep)
	w, _ := rep["wall_time_ms"].(float64)
	if w < 290 || w > float64(r.elapsed.Milliseconds())+50 {
		t.Errorf("wall_time_ms = %v for sleep 0.3 (ward took %v)", w, r.elapsed)
	}
}

func TestJSONPrintsResultWithCapturedStreams(t *testing.T) {
	r := run(t, opts{}, "run", "--json", "sh", "-c", "echo out-line; echo err-line >&2; exit 4")
	if r.code != 4 {
		t.Errorf("ward exit code %d, want the program's 4", r.code)
	}
	rep := decodeOne(t, "--json stdout", r.stdout)
	checkReportShape(t, rep)
	if rep["status"] != "exited" || rep["exit_code"] != 4.0 {
		t.Errorf("status=%#v exit_code=%#v, want exited/4", rep["status"], rep["exit_code"])
	}
	if rep["stdout"] != "out-line\n" {
		t.Errorf("stdout field = %#v, want %q", rep["stdout"], "out-line\n")
	}
	if rep["stderr"] != "err-line\n" {
		t.Errorf("stderr field = %#v, want %q", rep["stderr"], "err-line\n")
	}
	if rep["stdout_truncated"] != false || rep["stderr_truncated"] != false {
		t.Errorf("truncated flags = %#v/%#v, want false/false", rep["stdout_truncated"], rep["stderr_truncated"])
	}
	if t.Failed() {
		t.Logf("%s", r)
	}
}

func TestJSONAndReportFileAgree(t *testing.T) {
	path := filepath.Join(t.TempDir(), "report.json")
	r := run(t, opts{}, "run", "--json", "--report="+path, "sh", "-c", "echo x; exit 2")
	if r.code != 2 {
		t.Errorf("ward exit code %d, want 2", r.code)
	}
	js := decodeOne(t, "--json stdout", r.stdout)
	file := readReport(t, path, r)
	checkReportShape(t, file)
	for _, k := range reportKeys {
		if !jsonEqual(js[k], file[k]) {
			t.Errorf("%s differs: --json %#v, report file %#v", k, js[k], file[k])
		}
	}
}

func TestOutputLimitTruncatesCapturedStreams(t *testing.T) {
	const gen = `import sys
n, stream = int(sys.argv[1]), sys.argv[2]
data = "".join(chr(48 + i % 10) for i in range(n))
(sys.stdout if stream == "out" else sys.stderr).write(data)
`
	digits := func(n int) string {
		var b strings.Builder
		for i := range n {
			b.WriteByte(byte('0' + i%10))
		}
		return b.String()
	}
	cases := []struct {
		name     string
		limit    string
		n        string
		stream   string
		wantOut  string
		wantErr  string
		truncOut bool
		truncErr bool
	}{
		{name: "stdout cut to 10 bytes", limit: "10", n: "100", stream: "out", wantOut: "0123456789", truncOut: true},
		{name: "stderr cut to 10 bytes", limit: "10", n: "100", stream: "err", wantErr: "0123456789", truncErr: true},
		{name: "under 1K kept whole", limit: "1K", n: "100", stream: "out", wantOut: digits(100)},
		{name: "2MB cut to 1K, program not blocked", limit: "1K", n: "2000000", stream: "out", wantOut: digits(1024), truncOut: true},
		{name: "1M accepted", limit: "1M", n: "100", stream: "out", wantOut: digits(100)},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			r := run(t, opts{}, "run", "--json", "--output-limit="+c.limit, "python3", "-c", gen, c.n, c.stream)
			if r.code != 0 {
				t.Errorf("ward exit code %d, want 0 (the program must run to completion)", r.code)
			}
			rep := decodeOne(t, "--json stdout", r.stdout)
			checkReportShape(t, rep)
			if rep["stdout"] != c.wantOut {
				t.Errorf("stdout field = %.80q (len %d), want %.80q (len %d)", rep["stdout"], lenOf(rep["stdout"]), c.wantOut, len(c.wantOut))
			}
			if rep["stderr"] != c.wantErr {
				t.Errorf("stderr field = %.80q (len %d), want %.80q (len %d)", rep["stderr"], lenOf(rep["stderr"]), c.wantErr, len(c.wantErr))
			}
			if rep["stdout_truncated"] != c.truncOut || rep["stderr_truncated"] != c.truncErr {
				t.Errorf("stdout_truncated=%#v stderr_truncated=%#v, want %v/%v", rep["stdout_truncated"], rep["stderr_truncated"], c.truncOut, c.truncErr)
			}
			if rep["status"] != "exited" || rep["exit_code"] != 0.0 {
				t.Errorf("status=%#v exit_code=%#v, want exited/0", rep["status"], rep["exit_code"])
			}
			if t.Failed() {
				t.Logf("exit=%d elapsed=%v stderr:\n%s", r.code, r.elapsed, r.stderr)
			}
		})
	}
}

func lenOf(v any) int {
	s, _ := v.(string)
	return len(s)
}

func jsonEqual(a, b any) bool {
	switch av := a.(type) {
	case map[string]any:
		bv, ok := b.(map[string]any)
		if !ok || len(av) != len(bv) {
			return false
		}
		for k := range av {
			if !jsonEqual(av[k], bv[k]) {
				return false
			}
		}
		return true
	case []any:
		bv, ok := b.([]any)
		if !ok || len(av) != len(bv) {
			return false
		}
		for i := range av {
			if !jsonEqual(av[i], bv[i]) {
				return false
			}
		}
		return true
	default:
		return a == b
	}
}
