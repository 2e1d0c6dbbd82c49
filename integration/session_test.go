package integration

import (
	"context"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

func sandboxName() string { return fmt.Sprintf("itest-%06d", rand.IntN(1000000)) }

func TestStartExecPsStop(t *testing.T) {
	name := sandboxName()
	r := run(t, opts{}, "start", "--name="+name, "--memory-limit=128M")
	if r.code != 0 || strings.TrimSpace(r.stdout) != name {
		t.Fatalf("start: %s", r)
	}
	t.Cleanup(func() { run(t, opts{}, "stop", name) })
	if r := run(t, opts{}, "exec", name, "--", "sh", "-c", "echo kept > /tmp/f; id -un"); r.code != 0 || strings.TrimSpace(r.stdout) != "sandbox" {
		t.Errorf("exec: %s", r)
	}
	if r := run(t, opts{stdin: "from-caller"}, "exec", name, "--", "sh", "-c", "cat /tmp/f; cat"); r.stdout != "kept\nfrom-caller" {
		t.Errorf("state or stdin not kept: %s", r)
	}
	if r := run(t, opts{}, "exec", name, "--", "sh", "-c", "exit 9"); r.code != 9 {
		t.Errorf("exit code not passed: %s", r)
	}
	if r := run(t, opts{}, "exec", name, "--time-limit=300ms", "--", "sleep", "10"); r.code != 124 {
		t.Errorf("per-command time limit: %s", r)
	}
	if r := run(t, opts{}, "exec", name, "--", "echo", "still-up"); strings.TrimSpace(r.stdout) != "still-up" {
		t.Errorf("the sandbox did not survive a command's timeout: %s", r)
	}
	r = run(t, opts{}, "ps", "--json")
	var infos []map[string]any
	if err := json.Unmarshal([]byte(r.stdout), &infos); err != nil {
		t.Fatalf("ps --json: %v\n%s", err, r)
	}
	found := false
	for _, i := range infos {
		found = found || i["name"] == name
	}
	if !found {
		t.Errorf("ps does not list %s\n%s", name, r)
	}
	if r := run(t, opts{}, "start", "--name="+name); r.code != 2 {
		t.Errorf("a duplicate name must be refused with 2: %s", r)
	}
	if r := run(t, opts{}, "stop", name); r.code != 0 {
		t.Errorf("stop: %s", r)
	}
	if _, err := os.Stat("/run/ward/" + name); err == nil {
		t.Errorf("state of %s left after stop", name)
	}
	if r := run(t, opts{}, "exec", name, "--", "true"); r.code != 2 {
		t.Errorf("exec on a stopped sandbox: %s", r)
	}
}

func TestSessionNamesAreValidated(t *testing.T) {
	for _, bad := range []string{"Upper", "-x", "a/b", strings.Repeat("a", 64), ""} {
		if r := run(t, opts{}, "start", "--name="+bad); r.code != 2 {
			t.Errorf("--name=%q: exit %d, want 2\n%s", bad, r.code, r)
		}
	}
}

// TestCleanRemovesAKilledSupervisorsState: a supervisor killed by SIGKILL
// leaves /run/ward/NAME and its cgroup; ward clean removes both.
func TestCleanRemovesAKilledSupervisorsState(t *testing.T) {
	name := sandboxName()
	if r := run(t, opts{}, "start", "--name="+name); r.code != 0 {
		t.Fatalf("start: %s", r)
	}
	b, err := os.ReadFile("/run/ward/" + name + "/pid")
	if err != nil {
		t.Fatal(err)
	}
	pid, _ := strconv.Atoi(strings.TrimSpace(string(b)))
	if pid <= 0 || syscall.Kill(pid, syscall.SIGKILL) != nil {
		t.Fatalf("could not kill the supervisor %d", pid)
	}
	for i := 0; i < 100 && syscall.Kill(pid, 0) == nil; i++ {
		time.Sleep(20 * time.Millisecond)
	}
	r := run(t, opts{}, "clean")
	if !strings.Contains(r.stdout, "removed state /run/ward/"+name) || !strings.Contains(r.stdout, "removed cgroup") {
		t.Errorf("ward clean did not say it removed the state and cgroup\n%s", r)
	}
	if _, err := os.Stat("/run/ward/" + name); err == nil {
		t.Errorf("/run/ward/%s still there", name)
	}
	if left := wardCgroups("ward-" + strconv.Itoa(pid) + "-"); len(left) > 0 {
		t.Errorf("cgroups left: %v", left)
	}
}

// TestStdioJSONProtocol: with --session every request runs in one shared
// sandbox (request 3 reads what request 1 wrote); a bad line gets an error
// object and the next one is read.
func TestStdioJSONProtocol(t *testing.T) {
	in := strings.Join([]string{
		`{"args":["sh","-c","echo $FOO > /tmp/f; echo wrote"],"env":{"FOO":"bar"}}`,
		`this is not json`,
		`{"args":["cat","/tmp/f"]}`,
		`{"args":["cat"],"stdin":"from-request"}`,
		`{"args":["sleep","10"],"time_limit":"200ms"}`,
		`{"args":[],"stdin":"x"}`,
	}, "\n") + "\n"
	r := run(t, opts{stdin: in}, "run", "--stdio-json", "--session")
	if r.code != 0 {
		t.Fatalf("exit %d\n%s", r.code, r)
	}
	lines := strings.Split(strings.TrimSpace(r.stdout), "\n")
	if len(lines) != 6 {
		t.Fatalf("want 6 result lines, got %d\n%s", len(lines), r)
	}
	var got []map[string]any
	for _, l := range lines {
		var m map[string]any
		if err := json.Unmarshal([]byte(l), &m); err != nil {
			t.Fatalf("line %q is not JSON: %v", l, err)
		}
		got = append(got, m)
	}
	if got[0]["stdout"] != "wrote\n" || got[2]["stdout"] != "bar\n" || got[3]["stdout"] != "from-request" {
		t.Errorf("outputs: %v / %v / %v", got[0]["stdout"], got[2]["stdout"], got[3]["stdout"])
	}
	if e, _ := got[1]["error"].(string); !strings.Contains(e, "malformed") {
		t.Errorf("a malformed line must get an error object: %v", got[1])
	}
	if got[4]["status"] != "timeout" {
		t.Errorf("per-request time limit: %v", got[4])
	}
	if e, _ := got[5]["error"].(string); !strings.Contains(e, "no args") {
		t.Errorf("empty args: %v", got[5])
	}
}

// TestStartSharesOneSupervisorAndTakesTheCallersView: the CLI's long-lived
// sandboxes share one supervisor, which goes with the last of them; each
// sandbox still resolves relative paths in, and takes the environment of,
// the `ward start` that made it (not the supervisor's: its cwd is /).
func TestStartSharesOneSupervisorAndTakesTheCallersView(t *testing.T) {
	needRoot(t)
	dir := t.TempDir()
	for _, d := range []string{dir, filepath.Dir(dir)} {
		if err := os.Chmod(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.MkdirAll(filepath.Join(dir, "data"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "data", "msg"), []byte("hello\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	n1, n2 := sandboxName(), sandboxName()
	ctx, cancel := context.WithTimeout(context.Background(), safetyTimeout)
	defer cancel()
	args := []string{"start", "--name=" + n1, "--allow-read=./data"}
	cmd := wardCmd(ctx, opts{env: []string{"WARD_MARK=from-caller"}}, args)
	cmd.Dir = dir
	if r := runCmd(t, ctx, cmd, args); r.code != 0 {
		t.Fatalf("start %s: %s", n1, r)
	}
	t.Cleanup(func() { run(t, opts{}, "stop", n1) })
	if r := run(t, opts{}, "start", "--name="+n2); r.code != 0 {
		t.Fatalf("start %s: %s", n2, r)
	}
	t.Cleanup(func() { run(t, opts{}, "stop", n2) })

	pid1, pid2 := supervisorPid(t, n1), supervisorPid(t, n2)
	if pid1 != pid2 {
		t.Errorf("two supervisors (%d, %d), want one for both sandboxes", pid1, pid2)
	}
	if r := run(t, opts{}, "exec", n1, "--", "cat", filepath.Join(dir, "data", "msg")); strings.TrimSpace(r.stdout) != "hello" {
		state, _ := os.ReadDir("/run/ward/" + n1)
		comm, _ := os.ReadFile(fmt.Sprintf("/proc/%d/comm", pid1))
		t.Errorf("--allow-read=./data not resolved in the caller's directory: %s\nstate %v, supervisor %d comm %q running %v",
			r, state, pid1, comm, running(pid1))
	}
	if r := run(t, opts{}, "exec", n1, "--", "sh", "-c", "echo $WARD_MARK"); strings.TrimSpace(r.stdout) != "from-caller" {
		t.Errorf("WARD_* not taken from the caller's environment: %s", r)
	}
	if r := run(t, opts{}, "stop", n1); r.code != 0 {
		t.Fatalf("stop %s: %s", n1, r)
	}
	if r := run(t, opts{}, "exec", n2, "--", "true"); r.code != 0 {
		t.Errorf("stopping one sandbox ended the other: %s", r)
	}
	if r := run(t, opts{}, "stop", n2); r.code != 0 {
		t.Fatalf("stop %s: %s", n2, r)
	}
	for i := 0; i < 100 && running(pid1); i++ {
		time.Sleep(20 * time.Millisecond)
	}
	if running(pid1) {
		t.Errorf("the supervisor %d outlived its last sandbox", pid1)
	}
}

func supervisorPid(t *testing.T, name string) int {
	t.Helper()
	b, err := os.ReadFile("/run/ward/" + name + "/pid")
	if err != nil {
		t.Fatal(err)
	}
	pid, _ := strconv.Atoi(strings.TrimSpace(string(b)))
	return pid
}

// running: the process exists and is not a zombie.
func running(pid int) bool {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return false
	}
	s := string(b)
	if i := strings.LastIndexByte(s, ')'); i >= 0 && i+2 < len(s) {
		return s[i+2] != 'Z'
	}
	return true
}
