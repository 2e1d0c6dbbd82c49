package integration

import (
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"os"
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

func TestStdioJSONProtocol(t *testing.T) {
	in := strings.Join([]string{
		`{"args":["sh","-c","echo $FOO > /tmp/f; echo wrote"],"env":{"FOO":"bar"}}`,
		`this is not json`,
		`{"args":["cat","/tmp/f"]}`,
		`{"args":["cat"],"stdin":"from-request"}`,
		`{"args":["sleep","10"],"time_limit":"200ms"}`,
		`{"args":[],"stdin":"x"}`,
	}, "\n") + "\n"
	r := run(t, opts{stdin: in}, "run", "--stdio-json")
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
