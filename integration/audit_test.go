package integration

// The audit log (docs/audit.md): one JSON line per execution, validated
// against docs/audit.schema.json, never holding the program's streams or
// environment, appended whole by concurrent wards, and nothing runs when
// it cannot be opened.

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/santhosh-tekuri/jsonschema/v6"
)

var auditSchemaOnce = sync.OnceValues(func() (*jsonschema.Schema, error) {
	f, err := os.Open(filepath.Join("..", "docs", "audit.schema.json"))
	if err != nil {
		return nil, err
	}
	defer f.Close()
	doc, err := jsonschema.UnmarshalJSON(f)
	if err != nil {
		return nil, err
	}
	c := jsonschema.NewCompiler()
	c.AssertFormat()
	const url = "https://github.com/wardbox/ward/docs/audit.schema.json"
	if err := c.AddResource(url, doc); err != nil {
		return nil, err
	}
	return c.Compile(url)
})

// readAudit reads the audit log at path: every line must be whole JSON
// that validates against the schema.
func readAudit(t *testing.T, path string) []map[string]any {
	t.Helper()
	sch, err := auditSchemaOnce()
	if err != nil {
		t.Fatalf("docs/audit.schema.json: %v", err)
	}
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("audit log: %v", err)
	}
	if len(b) > 0 && b[len(b)-1] != '\n' {
		t.Errorf("the audit log does not end with a whole line:\n%s", b)
	}
	var lines []map[string]any
	sc := bufio.NewScanner(bytes.NewReader(b)) // its default 64K line is the audit log's bound
	for sc.Scan() {
		v, err := jsonschema.UnmarshalJSON(bytes.NewReader(sc.Bytes()))
		if err != nil {
			t.Fatalf("audit line %d is not JSON: %v\n%s", len(lines)+1, err, sc.Bytes())
		}
		if err := sch.Validate(v); err != nil {
			t.Errorf("audit line %d does not validate: %v\n%s", len(lines)+1, err, sc.Bytes())
		}
		var m map[string]any
		_ = json.Unmarshal(sc.Bytes(), &m)
		lines = append(lines, m)
	}
	if err := sc.Err(); err != nil {
		t.Fatalf("audit log: %v", err)
	}
	return lines
}

func argvOf(line map[string]any) []string {
	var out []string
	xs, _ := line["argv"].([]any)
	for _, x := range xs {
		s, _ := x.(string)
		out = append(out, s)
	}
	return out
}

// secretProgram prints what it gets on stdin and in $SECRET and
// $CALLER_SECRET, on stdout and stderr.
const secretProgram = `read line; echo "$line"; echo "$SECRET $CALLER_SECRET"; echo "$SECRET $line" >&2`

// checkNoSecrets fails if the audit log holds any of the secrets.
func checkNoSecrets(t *testing.T, path string, secrets ...string) {
	t.Helper()
	b, _ := os.ReadFile(path)
	for _, s := range secrets {
		if bytes.Contains(b, []byte(s)) {
			t.Errorf("the audit log holds the secret %q:\n%s", s, b)
		}
	}
	for _, k := range []string{"SECRET", "CALLER_SECRET"} {
		if bytes.Contains(b, []byte(`"`+k)) {
			t.Errorf("the audit log names the environment variable %s:\n%s", k, b)
		}
	}
}

// TestAuditLogRecordsRunsWithoutTheirSecrets: a program that gets secrets
// through --env, the caller's environment and stdin, and prints them on
// stdout and stderr, leaves a line that holds none of them; the log is
// created 0600, and each run appends its own line.
func TestAuditLogRecordsRunsWithoutTheirSecrets(t *testing.T) {
	needRoot(t)
	old := syscall.Umask(0o022) // what the file gets is ward's doing, not the umask's
	defer syscall.Umask(old)
	log := filepath.Join(t.TempDir(), "audit.log")
	secEnv, secCaller, secStdin := "env-"+uniqueArg(), "caller-"+uniqueArg(), "stdin-"+uniqueArg()
	o := opts{stdin: secStdin + "\n", env: []string{"CALLER_SECRET=" + secCaller}}
	r := run(t, o, "run", "--audit-log="+log, "--env=SECRET="+secEnv, "--env=CALLER_SECRET", "--", "sh", "-c", secretProgram)
	if r.code != 0 || !strings.Contains(r.stdout, secStdin) || !strings.Contains(r.stdout, secEnv+" "+secCaller) || !strings.Contains(r.stderr, secEnv) {
		t.Fatalf("the program did not get its secrets\n%s", r)
	}
	r = run(t, o, "run", "--audit-log="+log, "--json", "--env=SECRET="+secEnv, "--time-limit=5s", "--", "sh", "-c", secretProgram+"; exit 3")
	if r.code != 3 || !strings.Contains(r.stdout, secStdin) {
		t.Fatalf("--json: want exit 3 and the captured secret\n%s", r)
	}
	r = run(t, opts{}, "run", "--audit-log="+log, "--time-limit=200ms", "--", "sleep", "10")
	if r.code != 124 {
		t.Fatalf("time limit: %s", r)
	}
	checkNoSecrets(t, log, secEnv, secCaller, secStdin)
	fi, err := os.Stat(log)
	if err != nil || fi.Mode().Perm() != 0o600 {
		t.Errorf("audit log mode: %v %v, want 0600", fi.Mode(), err)
	}
	lines := readAudit(t, log)
	if len(lines) != 3 {
		t.Fatalf("%d lines, want 3", len(lines))
	}
	want := []struct {
		status   string
		ward     float64
		limitSet bool
	}{{"exited", 0, false}, {"exited", 3, true}, {"timeout", 124, true}}
	for i, l := range lines {
		limits, _ := l["limits"].(map[string]any)
		if l["kind"] != "run" || l["status"] != want[i].status || l["ward_exit_code"] != want[i].ward || (limits["time_limit_ms"] != nil) != want[i].limitSet ||
			l["caller_uid"] != float64(0) || l["workdir"] != "/home/sandbox" || l["profile"] != "default" {
			t.Errorf("line %d: %v", i+1, l)
		}
	}
	if a := argvOf(lines[0]); len(a) != 3 || a[0] != "sh" || a[2] != secretProgram {
		t.Errorf("argv: %q", a)
	}
	if lines[0]["sandbox"] == lines[1]["sandbox"] {
		t.Errorf("two runs share the sandbox id %v", lines[0]["sandbox"])
	}
}

// TestAuditLogConcurrentRunsLeaveWholeLines: 20 wards appending to one log
// at once leave exactly 20 whole lines, each valid, one per run.
func TestAuditLogConcurrentRunsLeaveWholeLines(t *testing.T) {
	needRoot(t)
	log := filepath.Join(t.TempDir(), "audit.log")
	const n = 20
	var wg sync.WaitGroup
	results := make([]result, n)
	for i := 0; i < n; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			// Lines of some 12K each (12 arguments of 1000 bytes, under
			// the 1K cap of one): pages written at once.
			args := []string{"run", "--audit-log=" + log, "--", "true", fmt.Sprintf("run-%02d", i)}
			for k := 0; k < 12; k++ {
				args = append(args, strings.Repeat(string(rune('a'+i)), 1000))
			}
			results[i] = run(t, opts{}, args...)
		}()
	}
	wg.Wait()
	for i, r := range results {
		if r.code != 0 {
			t.Errorf("run %d: %s", i, r)
		}
	}
	lines := readAudit(t, log)
	if len(lines) != n {
		t.Fatalf("%d lines, want %d", len(lines), n)
	}
	seen := map[string]bool{}
	for _, l := range lines {
		a := argvOf(l)
		var i int
		whole := len(a) == 14 && l["argv_truncated"] == false
		if _, err := fmt.Sscanf(a[min(1, len(a)-1)], "run-%02d", &i); err != nil {
			whole = false
		}
		for k := 2; whole && k < 14; k++ {
			whole = a[k] == strings.Repeat(string(rune('a'+i)), 1000)
		}
		if !whole {
			t.Errorf("a line's argv is not one run's: %.120q", a)
			continue
		}
		seen[a[1]] = true
	}
	if len(seen) != n {
		t.Errorf("%d distinct runs in the log, want %d", len(seen), n)
	}
}

// TestAuditLogUnopenableRunsNothing: a log that cannot be opened (a
// directory, a file in a missing directory, a symbolic link) stops ward
// with 71 naming it, before anything runs: for run, start and
// --stdio-json alike.
func TestAuditLogUnopenableRunsNothing(t *testing.T) {
	needRoot(t)
	dir := t.TempDir()
	out := filepath.Join(dir, "out")
	if err := os.Mkdir(out, 0o777); err != nil {
		t.Fatal(err)
	}
	target := filepath.Join(dir, "target")
	if err := os.WriteFile(target, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	link := filepath.Join(dir, "link")
	if err := os.Symlink(target, link); err != nil {
		t.Fatal(err)
	}
	marker := filepath.Join(out, "ran")
	for _, tc := range []struct{ name, path, why string }{
		{"a directory", dir, "is a directory"},
		{"a missing directory", filepath.Join(dir, "missing", "audit.log"), "no such file or directory"},
		{"a symbolic link", link, "symbolic link"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			check := func(what string, r result) {
				t.Helper()
				if r.code != 71 || !strings.Contains(r.stderr, "ward: audit-log: ") || !strings.Contains(r.stderr, tc.path) || !strings.Contains(r.stderr, tc.why) {
					t.Errorf("%s: want 71 and ward: audit-log: naming %s (%s)\n%s", what, tc.path, tc.why, r)
				}
				if _, err := os.Stat(marker); err == nil {
					t.Errorf("%s: the program ran", what)
					os.Remove(marker)
				}
			}
			check("run", run(t, opts{}, "run", "--audit-log="+tc.path, "--allow-write="+out, "--", "touch", marker))
			r := run(t, opts{stdin: `{"args":["touch","` + marker + `"]}` + "\n"}, "run", "--stdio-json", "--audit-log="+tc.path, "--allow-write="+out)
			check("--stdio-json", r)
			if r.stdout != "" {
				t.Errorf("--stdio-json answered a request: %q", r.stdout)
			}
			name := sandboxName()
			r = run(t, opts{}, "start", "--name="+name, "--audit-log="+tc.path)
			if r.code == 0 {
				run(t, opts{}, "stop", name)
			}
			check("start", r)
			if _, err := os.Stat("/run/ward/" + name); err == nil {
				t.Errorf("start left the state of %s", name)
			}
			if b, _ := os.ReadFile(target); len(b) != 0 {
				t.Errorf("written through the link: %q", b)
			}
		})
	}
}

// TestAuditLogExecInLongLivedSandbox: every exec in a sandbox started with
// --audit-log gets a line naming the sandbox, the command's number, the
// `ward exec` process that asked, and the network attempts made while it
// ran.
func TestAuditLogExecInLongLivedSandbox(t *testing.T) {
	needRoot(t)
	log := filepath.Join(t.TempDir(), "audit.log")
	name := sandboxName()
	if r := run(t, opts{}, "start", "--name="+name, "--audit-log="+log, "--allow-network=allowed.test", "--add-host=blocked.test:127.0.0.1"); r.code != 0 {
		t.Fatalf("start: %s", r)
	}
	t.Cleanup(func() { run(t, opts{}, "stop", name) })
	secret := "stdin-" + uniqueArg()
	var pids []int
	for _, tc := range []struct {
		stdin string
		code  int
		args  []string
	}{
		{secret + "\n", 0, []string{"sh", "-c", "read x; echo $x"}},
		{"", 5, []string{"sh", "-c", "exit 5"}},
		{"", 0, []string{"sh", "-c", "curl -s -o /dev/null -m 10 -w '%{http_code}' http://blocked.test:9/"}},
	} {
		args := append([]string{"exec", name, "--"}, tc.args...)
		ctx, cancel := context.WithTimeout(context.Background(), safetyTimeout)
		cmd := wardCmd(ctx, opts{stdin: tc.stdin}, args)
		r := runCmd(t, ctx, cmd, args)
		cancel()
		if r.code != tc.code {
			t.Errorf("exec %q: want exit %d\n%s", tc.args, tc.code, r)
		}
		pids = append(pids, cmd.Process.Pid)
	}
	checkNoSecrets(t, log, secret)
	lines := readAudit(t, log)
	if len(lines) != 3 {
		t.Fatalf("%d lines, want 3", len(lines))
	}
	for i, l := range lines {
		if l["kind"] != "exec" || l["sandbox"] != name || l["exec_id"] != float64(i+1) || l["caller_pid"] != float64(pids[i]) || l["caller_uid"] != float64(0) {
			t.Errorf("line %d: want exec %d of %s asked by pid %d: %v", i+1, i+1, name, pids[i], l)
		}
		net, _ := l["network"].(map[string]any)
		if net["mode"] != "proxy" || fmt.Sprint(net["allow"]) != "[allowed.test]" {
			t.Errorf("line %d: network %v", i+1, net)
		}
	}
	if lines[1]["exit_code"] != float64(5) {
		t.Errorf("exit code: %v", lines[1])
	}
	attempts, _ := lines[2]["network_attempts"].([]any)
	if len(attempts) != 1 {
		t.Fatalf("network attempts of the curl: %v", lines[2]["network_attempts"])
	}
	if a, _ := attempts[0].(map[string]any); a["host"] != "blocked.test" || a["action"] != "blocked" {
		t.Errorf("attempt: %v", a)
	}
	if first, _ := lines[0]["network_attempts"].([]any); len(first) != 0 {
		t.Errorf("an exec that made none lists attempts: %v", first)
	}
}

// TestAuditLogRunListsNetworkAttempts: a run's line lists the attempts
// its proxy saw, with their verdicts.
func TestAuditLogRunListsNetworkAttempts(t *testing.T) {
	needRoot(t)
	log := filepath.Join(t.TempDir(), "audit.log")
	r := run(t, opts{}, "run", "--audit-log="+log, "--allow-network=allowed.test", "--deny-network=*.bad", "--add-host=blocked.test:127.0.0.1",
		"--", "curl", "-s", "-o", "/dev/null", "-m", "10", "-w", "%{http_code}", "http://blocked.test:9/")
	if strings.TrimSpace(r.stdout) != "403" {
		t.Fatalf("want 403 from the proxy\n%s", r)
	}
	lines := readAudit(t, log)
	if len(lines) != 1 {
		t.Fatalf("%d lines, want 1", len(lines))
	}
	attempts, _ := lines[0]["network_attempts"].([]any)
	a := map[string]any{}
	if len(attempts) == 1 {
		a, _ = attempts[0].(map[string]any)
	}
	if a["host"] != "blocked.test" || a["port"] != float64(9) || a["action"] != "blocked" || a["reason"] != "not in allow list" {
		t.Errorf("attempts: %v", lines[0]["network_attempts"])
	}
	if net, _ := lines[0]["network"].(map[string]any); fmt.Sprint(net["allow"], net["deny"]) != "[allowed.test] [*.bad]" {
		t.Errorf("network: %v", net)
	}
}

// TestAuditLogSetupFailureGetsALine: a ward whose sandbox cannot be built
// (here one inside another sandbox, whose policy refuses it a user
// namespace) still writes a line, setup_error with the failed step.
func TestAuditLogSetupFailureGetsALine(t *testing.T) {
	needRoot(t)
	dir := t.TempDir()
	if err := os.Chmod(dir, 0o777); err != nil {
		t.Fatal(err)
	}
	log := filepath.Join(dir, "audit.log")
	r := run(t, opts{}, "run", "--allow-write="+dir, "--mount="+wardBin+":/opt/ward:ro", "--",
		"/opt/ward", "run", "--audit-log="+log, "--", "true")
	if r.code != 71 {
		t.Fatalf("the inner ward: want 71\n%s", r)
	}
	lines := readAudit(t, log)
	if len(lines) != 1 {
		t.Fatalf("%d lines, want 1", len(lines))
	}
	l := lines[0]
	if l["status"] != "setup_error" || l["ward_exit_code"] != float64(71) || l["setup_step"] == nil || l["error"] == nil || fmt.Sprint(argvOf(l)) != "[true]" {
		t.Errorf("line: %v", l)
	}
	t.Logf("failed step: %v (%v)", l["setup_step"], l["error"])
}

// TestAuditLogStdioJSONRequests: each --stdio-json request that runs gets
// a line with its argv; a malformed one runs nothing and gets none; the
// requests' stdin and env are not in the log.
func TestAuditLogStdioJSONRequests(t *testing.T) {
	needRoot(t)
	log := filepath.Join(t.TempDir(), "audit.log")
	secStdin, secEnv := "stdin-"+uniqueArg(), "env-"+uniqueArg()
	in := strings.Join([]string{
		`{"args":["sh","-c","cat; echo $SECRET"],"stdin":"` + secStdin + `","env":{"SECRET":"` + secEnv + `"}}`,
		`not json`,
		`{"args":["sh","-c","exit 4"]}`,
	}, "\n") + "\n"
	r := run(t, opts{stdin: in}, "run", "--stdio-json", "--audit-log="+log)
	if r.code != 0 || !strings.Contains(r.stdout, secStdin) || !strings.Contains(r.stdout, secEnv) {
		t.Fatalf("exit %d\n%s", r.code, r)
	}
	checkNoSecrets(t, log, secStdin, secEnv)
	lines := readAudit(t, log)
	if len(lines) != 2 {
		t.Fatalf("%d lines, want 2", len(lines))
	}
	if a := argvOf(lines[0]); fmt.Sprint(a) != "[sh -c cat; echo $SECRET]" || lines[0]["exit_code"] != float64(0) {
		t.Errorf("line 1: %v", lines[0])
	}
	if a := argvOf(lines[1]); fmt.Sprint(a) != "[sh -c exit 4]" || lines[1]["exit_code"] != float64(4) {
		t.Errorf("line 2: %v", lines[1])
	}
}

// TestRootlessAuditLog: an ordinary user's runs, execs and setup failures
// are logged the same way, in a file of the user's own, created 0600.
func TestRootlessAuditLog(t *testing.T) { forBothMappings(t, testRootlessAuditLog) }

func testRootlessAuditLog(t *testing.T, u testUser) {
	t.Helper()
	log := filepath.Join(u.dir, "audit.log")
	secEnv, secCaller, secStdin := "env-"+uniqueArg(), "caller-"+uniqueArg(), "stdin-"+uniqueArg()
	r := u.run(t, opts{stdin: secStdin + "\n", env: []string{"CALLER_SECRET=" + secCaller}},
		"run", "--audit-log=audit.log", "--env=SECRET="+secEnv, "--env=CALLER_SECRET", "--", "sh", "-c", secretProgram)
	if r.code != 0 || !strings.Contains(r.stdout, secEnv+" "+secCaller) {
		t.Fatalf("run: %s", r)
	}
	// Without a cgroup, a memory limit cannot be held: a setup failure,
	// for run and start alike.
	if r := u.run(t, opts{}, "run", "--audit-log=audit.log", "--memory-limit=64M", "--", "true"); r.code != 71 {
		t.Errorf("--memory-limit without a cgroup: want 71\n%s", r)
	}
	failed, name := sandboxName(), sandboxName()
	if r := u.run(t, opts{}, "start", "--name="+failed, "--audit-log=audit.log", "--memory-limit=64M"); r.code != 71 {
		t.Errorf("start --memory-limit without a cgroup: want 71\n%s", r)
		u.run(t, opts{}, "stop", failed)
	}
	if r := u.run(t, opts{}, "start", "--name="+name, "--audit-log=audit.log"); r.code != 0 {
		t.Fatalf("start: %s", r)
	}
	state := filepath.Join(os.TempDir(), "ward-"+strconv.Itoa(u.uid), name)
	b, _ := os.ReadFile(filepath.Join(state, "pid"))
	supervisor, _ := strconv.Atoi(strings.TrimSpace(string(b)))
	if r := u.run(t, opts{}, "exec", name, "--", "sh", "-c", "exit 6"); r.code != 6 {
		t.Errorf("exec: %s", r)
	}
	if r := u.run(t, opts{}, "stop", name); r.code != 0 {
		t.Errorf("stop: %s", r)
	}
	// The user goes with the test: first its supervisor, which exits
	// after it has removed the sandbox's state.
	for i := 0; i < 500 && supervisor > 0; i++ {
		if _, err := os.Stat(fmt.Sprintf("/proc/%d", supervisor)); err != nil {
			break
		}
		time.Sleep(10 * time.Millisecond)
	}
	if r := u.run(t, opts{}, "run", "--audit-log="+u.dir, "--", "true"); r.code != 71 || !strings.Contains(r.stderr, "ward: audit-log: ") {
		t.Errorf("a directory as the log: want 71\n%s", r)
	}
	checkNoSecrets(t, log, secEnv, secCaller, secStdin)
	var st syscall.Stat_t
	if err := syscall.Stat(log, &st); err != nil || st.Mode&0o777 != 0o600 || int(st.Uid) != u.uid {
		t.Errorf("audit log: mode %o owner %d (%v), want 0600 and the user's", st.Mode&0o777, st.Uid, err)
	}
	lines := readAudit(t, log)
	want := []struct{ kind, status, step string }{{"run", "exited", ""}, {"run", "setup_error", "create-cgroup"}, {"start", "setup_error", "create-cgroup"}, {"exec", "exited", ""}}
	if len(lines) != len(want) {
		t.Fatalf("%d lines, want %d", len(lines), len(want))
	}
	for i, w := range want {
		l := lines[i]
		step, _ := l["setup_step"].(string)
		if l["kind"] != w.kind || l["status"] != w.status || step != w.step || l["caller_uid"] != float64(u.uid) {
			t.Errorf("line %d: want %s %s %q by uid %d: %v", i+1, w.kind, w.status, w.step, u.uid, l)
		}
	}
	if lines[3]["sandbox"] != name || lines[3]["exit_code"] != float64(6) {
		t.Errorf("the exec's line: %v", lines[3])
	}
}

// TestAuditLogWriteFailureIs71: a line that cannot be written after the
// program ran (here the file is past ward's RLIMIT_FSIZE: EFBIG, as on a
// full disk) leaves the result and output in place and exits 71 naming
// the file; --stdio-json answers that request with the error and runs no
// more.
func TestAuditLogWriteFailureIs71(t *testing.T) {
	needRoot(t)
	prlimit, err := exec.LookPath("prlimit")
	if err != nil {
		t.Skipf("no prlimit (util-linux) on this host: %v", err)
	}
	log := filepath.Join(t.TempDir(), "audit.log")
	full := strings.Repeat("x", 2000) + "\n"
	if err := os.WriteFile(log, []byte(full), 0o600); err != nil {
		t.Fatal(err)
	}
	runLimited := func(o opts, args ...string) result {
		t.Helper()
		ctx, cancel := context.WithTimeout(context.Background(), safetyTimeout)
		defer cancel()
		cmd := exec.CommandContext(ctx, prlimit, append([]string{"--fsize=1000", "--", wardBin}, args...)...)
		cmd.Env = os.Environ()
		if o.stdin != "" {
			cmd.Stdin = strings.NewReader(o.stdin)
		}
		return runCmd(t, ctx, cmd, args)
	}
	r := runLimited(opts{}, "run", "--audit-log="+log, "--json", "--", "echo", "hi")
	if r.code != 71 || !strings.Contains(r.stderr, "ward: audit-log: write "+log+": file too large") || !strings.Contains(r.stdout, `"stdout": "hi\n"`) {
		t.Errorf("want 71 naming the file, after the result\n%s", r)
	}
	r = runLimited(opts{stdin: `{"args":["echo","first"]}` + "\n" + `{"args":["echo","second"]}` + "\n"}, "run", "--stdio-json", "--audit-log="+log)
	if r.code != 71 || strings.Contains(r.stdout, "second") || !strings.Contains(r.stdout, `"error":"audit-log: write `+log) || strings.Count(r.stdout, "\n") != 1 {
		t.Errorf("--stdio-json: want one error answer, then 71\n%s", r)
	}
	if b, _ := os.ReadFile(log); string(b) != full {
		t.Errorf("the log changed: %d bytes", len(b))
	}
}
