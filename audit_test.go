package ward

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/santhosh-tekuri/jsonschema/v6"

	"github.com/wardbox/ward/seccomp"
)

// auditSchema compiles docs/audit.schema.json.
func auditSchema(t *testing.T) *jsonschema.Schema {
	t.Helper()
	f, err := os.Open(filepath.Join("docs", "audit.schema.json"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	doc, err := jsonschema.UnmarshalJSON(f)
	if err != nil {
		t.Fatalf("docs/audit.schema.json: %v", err)
	}
	c := jsonschema.NewCompiler()
	c.AssertFormat()
	const url = "https://github.com/wardbox/ward/docs/audit.schema.json"
	if err := c.AddResource(url, doc); err != nil {
		t.Fatal(err)
	}
	sch, err := c.Compile(url)
	if err != nil {
		t.Fatalf("docs/audit.schema.json: %v", err)
	}
	return sch
}

func validateLine(t *testing.T, sch *jsonschema.Schema, line []byte) {
	t.Helper()
	v, err := jsonschema.UnmarshalJSON(bytes.NewReader(line))
	if err != nil {
		t.Fatalf("not JSON: %v\n%s", err, line)
	}
	if err := sch.Validate(v); err != nil {
		t.Errorf("line does not validate: %v\n%s", err, line)
	}
}

func TestAuditClip(t *testing.T) {
	for _, tc := range []struct {
		in   string
		max  int
		want string
		cut  bool
	}{
		{"hello", 5, "hello", false},
		{"hello world", 8, "hello...", true},
		{`a"b"c`, 7, `a"b"c`, false}, // quotes take 2 each
		{`a"b"cd`, 7, `a"b...`, true},
		{"\x01\x02", 12, "\x01\x02", false}, // \u0001 each
		{"\x01\x02\x03", 12, "\x01...", true},
		{"ééé", 6, "ééé", false},
		{"éééé", 7, "éé...", true}, // never half a character
		{"a\xffb", 8, "a\xffb", false},
		{"a\xffbcd", 8, "a...", true},
	} {
		got, cut := clip(tc.in, tc.max)
		if got != tc.want || cut != tc.cut {
			t.Errorf("clip(%q, %d) = %q, %v; want %q, %v", tc.in, tc.max, got, cut, tc.want, tc.cut)
		}
	}
}

// worstRecord has every value of unbounded length far past its cap, in
// characters that take the most JSON text.
func worstRecord() *AuditRecord {
	long := func(n int) string { return strings.Repeat("\x01", n) }
	many := func(k, n int) []string {
		xs := make([]string, k)
		for i := range xs {
			xs[i] = long(n)
		}
		return xs
	}
	ports := make([]int, 70000)
	for i := range ports {
		ports[i] = 1 + i%65535
	}
	attempts := make([]NetworkEvent, 1000)
	for i := range attempts {
		attempts[i] = NetworkEvent{TimeMs: 1e12, Host: long(5000), Port: 65535, Action: "blocked", Reason: long(5000), BytesUp: 1 << 62, BytesDown: 1 << 62}
	}
	denials := make([]seccomp.Denial, 500)
	for i := range denials {
		denials[i] = seccomp.Denial{Syscall: "process_mrelease_" + long(20), Errno: "EPERM", Count: 1 << 62}
	}
	big, step := long(100000), long(1000)
	f, i, b := 1e300, 1<<62, true
	return &AuditRecord{
		Time: time.Now().UTC().Format(auditTimeFormat), Started: time.Now().UTC().Format(auditTimeFormat),
		WardVersion: long(1000), Kind: AuditRun, CallerUID: 1 << 31, CallerPID: 1 << 30, Sandbox: long(1000), Profile: long(1000),
		Argv: many(10000, 5000), Workdir: big, Workspace: big, Seccomp: big, Layers: many(20, 10),
		Limits: Limits{TimeLimitMs: ptr(int64(i)), CPUTimeLimitMs: ptr(int64(i)), MemoryLimitBytes: ptr(int64(i)), CPULimitPercent: &i, Processes: &i,
			FileDescriptors: &i, FileDescriptorsHard: &i, MaxFileSizeBytes: ptr(int64(i)), OutputLimitBytes: ptr(int64(i)),
			EnforcedBy: map[string]string{"time_limit_ms": "rlimit-per-user-namespace", "cpu_time_limit_ms": "rlimit-per-user-namespace",
				"memory_limit_bytes": "rlimit-per-user-namespace", "cpu_limit_percent": "rlimit-per-user-namespace", "processes": "rlimit-per-user-namespace",
				"file_descriptors": "rlimit-per-user-namespace", "max_file_size_bytes": "rlimit-per-user-namespace"}},
		Network:   AuditNetwork{Mode: NetworkProxy, Allow: many(1000, 5000), Deny: many(1000, 5000), Ports: ports, AllowInternal: b},
		Status:    StatusSetupError,
		SetupStep: &step, WardExitCode: ExitSetup, Error: &big,
		WallTimeMs: f, CPUTimeMs: &f, MemoryPeakBytes: ptr(int64(i)), MaxRSSBytes: ptr(int64(i)),
		SyscallsDenied: denials, NetworkAttempts: attempts, NetworkAttemptsOmitted: i >> 2,
		NetworkOmitted: NetworkDropped{Allowed: i >> 2, Blocked: i >> 2, BytesUp: int64(i) >> 2, BytesDown: int64(i) >> 2},
	}
}

// TestAuditLineWorstCaseFits: the caps alone keep the longest record in
// one line under MaxAuditLine (the last-resort cut is never needed), and
// the line says what was cut.
func TestAuditLineWorstCaseFits(t *testing.T) {
	rec := worstRecord()
	capAudit(rec)
	line, err := marshalLine(rec)
	if err != nil {
		t.Fatal(err)
	}
	if len(line) > MaxAuditLine {
		t.Fatalf("the caps leave a line of %d bytes, more than %d", len(line), MaxAuditLine)
	}
	t.Logf("worst line: %d bytes", len(line))
	rec = worstRecord()
	line, err = encodeAudit(rec)
	if err != nil || len(line) > MaxAuditLine || bytes.Count(line, []byte("\n")) != 1 || line[len(line)-1] != '\n' {
		t.Fatalf("encodeAudit: %d bytes, err %v", len(line), err)
	}
	if !rec.ArgvTruncated || !rec.Network.Truncated || len(rec.NetworkAttempts) != auditAttemptsMax ||
		rec.SyscallsDeniedOmitted != 500-auditDenialsMax || rec.NetworkOmitted.Blocked != 1000-auditAttemptsMax+(1<<62>>2) {
		t.Errorf("the record does not say what was cut: argv_truncated %v, network.truncated %v, %d attempts, %d denials omitted, %d blocked omitted",
			rec.ArgvTruncated, rec.Network.Truncated, len(rec.NetworkAttempts), rec.SyscallsDeniedOmitted, rec.NetworkOmitted.Blocked)
	}
	validateLine(t, auditSchema(t), line)
}

// TestAuditRecordsValidate: a record of each kind and ending validates
// against docs/audit.schema.json, and holds no environment.
func TestAuditRecordsValidate(t *testing.T) {
	sch := auditSchema(t)
	cfg := Config{Args: []string{"sh", "-c", "echo $X"}, Env: []string{"X=env-value-never-logged"}, AllowNetwork: []string{"pypi.org"},
		AuditLog: "/x", TimeLimit: time.Second}.withDefaults()
	started := time.Now()
	exited := &Result{Status: StatusExited, ExitCode: ptr(3), WardExitCode: 3, Network: []NetworkEvent{{Host: "a", Port: 80, Action: "blocked", Reason: "not in allow list"}},
		Layers: []string{"namespaces"}, CPUTimeMs: ptr(1.5), Limits: newResult(cfg).Limits}
	signaled := &Result{Status: StatusSignaled, Signal: ptr(9), WardExitCode: 137, Network: []NetworkEvent{}, Limits: newResult(cfg).Limits}
	timeout := &Result{Status: StatusTimeout, Signal: ptr(9), WardExitCode: 124, Error: ptr("execution exceeded time limit (1s)"), Network: []NetworkEvent{}}
	setupRes := &Result{Status: StatusSetupError, WardExitCode: ExitSetup, Error: ptr("create-cgroup: no"), Network: []NetworkEvent{}}
	setupErr := &SetupError{Step: "create-cgroup", Msg: "no"}
	for name, e := range map[string]auditEntry{
		"run exited":          {kind: AuditRun, res: exited},
		"run signaled":        {kind: AuditRun, res: signaled},
		"run timeout":         {kind: AuditRun, res: timeout},
		"run setup error":     {kind: AuditRun, res: setupRes, err: setupErr},
		"run without result":  {kind: AuditRun, err: errors.New("context canceled")},
		"exec exited":         {kind: AuditExec, execID: 4, res: exited, attempts: []NetworkEvent{}},
		"exec failed":         {kind: AuditExec, execID: 5, err: errors.New("the sandbox ended")},
		"start setup error":   {kind: AuditStart, argv: []string{}, err: setupErr},
		"caller from another": {kind: AuditExec, execID: 1, res: exited, caller: &Caller{UID: 1000, PID: 4242}},
	} {
		t.Run(name, func(t *testing.T) {
			e.cfg, e.sandbox, e.started, e.limits = cfg, "agent", started, newResult(cfg).Limits
			if e.argv == nil {
				e.argv = cfg.Args
			}
			rec := e.record()
			line, err := encodeAudit(rec)
			if err != nil {
				t.Fatal(err)
			}
			validateLine(t, sch, line)
			if bytes.Contains(line, []byte("env-value-never-logged")) || bytes.Contains(line, []byte(`"X`)) {
				t.Errorf("the line holds the environment: %s", line)
			}
			if e.err != nil && (rec.SetupStep == nil || rec.Status != StatusSetupError) {
				t.Errorf("a failure without its step: %s", line)
			}
		})
	}
}

// TestAuditSchemaRefuses: the schema is no rubber stamp: a line with an
// unknown key (an environment), a key missing or a value out of place
// fails it.
func TestAuditSchemaRefuses(t *testing.T) {
	sch := auditSchema(t)
	cfg := Config{Args: []string{"true"}}.withDefaults()
	rec := auditEntry{kind: AuditRun, cfg: cfg, sandbox: "x", argv: cfg.Args, started: time.Now(),
		res: &Result{Status: StatusExited, ExitCode: ptr(0), Network: []NetworkEvent{}}}.record()
	line, err := encodeAudit(rec)
	if err != nil {
		t.Fatal(err)
	}
	validateLine(t, sch, line)
	for name, edit := range map[string]func(m map[string]any){
		"an environment":            func(m map[string]any) { m["env"] = map[string]any{"K": "V"} },
		"no status":                 func(m map[string]any) { delete(m, "status") },
		"an unknown status":         func(m map[string]any) { m["status"] = "fine" },
		"a time without a fraction": func(m map[string]any) { m["time"] = "2025-01-01T00:00:00Z" },
		"a step without a failure":  func(m map[string]any) { m["setup_step"] = "clone" },
		"an exec without its id":    func(m map[string]any) { m["kind"] = "exec" },
	} {
		var m map[string]any
		if err := json.Unmarshal(line, &m); err != nil {
			t.Fatal(err)
		}
		edit(m)
		b, _ := json.Marshal(m)
		v, _ := jsonschema.UnmarshalJSON(bytes.NewReader(b))
		if sch.Validate(v) == nil {
			t.Errorf("%s: the schema accepts %s", name, b)
		}
	}
}

func TestOpenAuditLogCreates0600AndAppends(t *testing.T) {
	old := syscall.Umask(0o022)
	defer syscall.Umask(old)
	path := filepath.Join(t.TempDir(), "audit.log")
	for i := 0; i < 2; i++ {
		a, err := openAuditLog(path)
		if err != nil {
			t.Fatal(err)
		}
		if err := a.write(&AuditRecord{Kind: AuditRun, Status: StatusExited, Argv: []string{fmt.Sprint(i)}}); err != nil {
			t.Fatal(err)
		}
		a.close()
	}
	fi, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	if fi.Mode().Perm() != 0o600 {
		t.Errorf("mode %v, want 0600", fi.Mode().Perm())
	}
	b, _ := os.ReadFile(path)
	if n := bytes.Count(b, []byte("\n")); n != 2 || !bytes.Contains(b, []byte(`"argv":["1"]`)) {
		t.Errorf("want 2 lines, the second appended:\n%s", b)
	}
	// An existing file keeps its mode.
	if err := os.Chmod(path, 0o640); err != nil {
		t.Fatal(err)
	}
	a, err := openAuditLog(path)
	if err != nil {
		t.Fatal(err)
	}
	a.close()
	if fi, _ := os.Stat(path); fi.Mode().Perm() != 0o640 {
		t.Errorf("an existing log's mode changed to %v", fi.Mode().Perm())
	}
}

func TestOpenAuditLogRefuses(t *testing.T) {
	dir := t.TempDir()
	target := filepath.Join(dir, "target")
	if err := os.WriteFile(target, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	link := filepath.Join(dir, "link")
	if err := os.Symlink(target, link); err != nil {
		t.Fatal(err)
	}
	fifo := filepath.Join(dir, "fifo")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct{ path, why string }{
		{dir, "is a directory"},
		{filepath.Join(dir, "missing", "audit.log"), "no such file or directory"},
		{link, "symbolic link"},
		{fifo, "want a regular file"},
		{"/dev/null", "not a regular file"},
	} {
		a, err := openAuditLog(tc.path)
		a.close()
		var se *SetupError
		if !errors.As(err, &se) || se.Step != "audit-log" || !strings.Contains(err.Error(), tc.path) || !strings.Contains(err.Error(), tc.why) {
			t.Errorf("%s: got %v, want a setup error of step audit-log naming the file and %q", tc.path, err, tc.why)
		}
	}
	if b, _ := os.ReadFile(target); len(b) != 0 {
		t.Errorf("written through the link: %q", b)
	}
	if err := CheckAuditLog(Config{AuditLog: "audit.log", Cwd: filepath.Join(dir, "missing")}); err == nil || !strings.Contains(err.Error(), filepath.Join(dir, "missing", "audit.log")) {
		t.Errorf("CheckAuditLog: a relative path is resolved against Cwd and named: %v", err)
	}
}

func jsonUnmarshalStrict(b []byte, v any) error {
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	return dec.Decode(v)
}

// TestAuditAppendsNeverInterleave: writers on their own descriptors, all
// appending at once, leave whole lines only.
func TestAuditAppendsNeverInterleave(t *testing.T) {
	path := filepath.Join(t.TempDir(), "audit.log")
	const writers, each = 16, 20
	var wg sync.WaitGroup
	for w := 0; w < writers; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			a, err := openAuditLog(path)
			if err != nil {
				t.Error(err)
				return
			}
			defer a.close()
			for i := 0; i < each; i++ {
				arg := strings.Repeat(string(rune('a'+w)), 15000)
				if err := a.write(&AuditRecord{Kind: AuditRun, Argv: []string{arg, arg}, Sandbox: fmt.Sprint(w, "-", i)}); err != nil {
					t.Error(err)
				}
			}
		}()
	}
	wg.Wait()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	sc.Buffer(nil, 2*MaxAuditLine)
	n := 0
	for sc.Scan() {
		n++
		var rec AuditRecord
		if err := jsonUnmarshalStrict(sc.Bytes(), &rec); err != nil || len(rec.Argv) != 2 || rec.Argv[0] != rec.Argv[1] {
			t.Fatalf("line %d is not whole: %v", n, err)
		}
	}
	if n != writers*each {
		t.Errorf("%d lines, want %d", n, writers*each)
	}
}

// TestAuditWriteFailureIsAnAuditError: a line that cannot be written is
// an *AuditError naming the file.
func TestAuditWriteFailureIsAnAuditError(t *testing.T) {
	path := filepath.Join(t.TempDir(), "audit.log")
	if err := os.WriteFile(path, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	fd, err := syscall.Open(path, syscall.O_RDONLY|syscall.O_CLOEXEC, 0)
	if err != nil {
		t.Fatal(err)
	}
	a := &auditLog{fd: fd, path: path}
	defer a.close()
	err = a.write(&AuditRecord{Kind: AuditRun})
	var ae *AuditError
	if !errors.As(err, &ae) || !errors.Is(err, syscall.EBADF) || !strings.HasPrefix(err.Error(), "audit-log: write "+path+": ") {
		t.Errorf("got %v, want an AuditError naming %s", err, path)
	}
}

func TestAuditFileProblem(t *testing.T) {
	for _, tc := range []struct {
		name string
		st   syscall.Stat_t
		want string
	}{
		{"the caller's, 0600", syscall.Stat_t{Uid: 1000, Mode: syscall.S_IFREG | 0o600, Nlink: 1}, ""},
		{"the caller's, 0644", syscall.Stat_t{Uid: 1000, Mode: syscall.S_IFREG | 0o644, Nlink: 1}, ""},
		{"another user's", syscall.Stat_t{Uid: 1001, Mode: syscall.S_IFREG | 0o600, Nlink: 1}, "belongs to uid 1001"},
		{"world-writable", syscall.Stat_t{Uid: 1000, Mode: syscall.S_IFREG | 0o666, Nlink: 1}, "lets others write"},
		{"group-writable", syscall.Stat_t{Uid: 1000, Mode: syscall.S_IFREG | 0o620, Nlink: 1}, "lets others write"},
		{"two names", syscall.Stat_t{Uid: 1000, Mode: syscall.S_IFREG | 0o600, Nlink: 2}, "hard links"},
	} {
		if got := auditFileProblem(tc.st, 1000); tc.want == "" && got != "" || !strings.Contains(got, tc.want) {
			t.Errorf("%s: %q, want %q", tc.name, got, tc.want)
		}
	}
}
