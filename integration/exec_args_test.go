package integration

import (
	"strings"
	"testing"
)

// TestExecTakesALongCommand: a command of 240 KB of arguments (an agent's
// bash -c script; one argument may not pass 128 KB) reaches a long-lived
// sandbox whole, as with ward run.
func TestExecTakesALongCommand(t *testing.T) {
	name := sandboxName()
	if r := run(t, opts{}, "start", "--name="+name); r.code != 0 {
		t.Fatalf("start: %s", r)
	}
	t.Cleanup(func() { run(t, opts{}, "stop", name) })
	big := strings.Repeat("x", 120<<10)
	r := run(t, opts{}, "exec", name, "--", "sh", "-c", `echo $((${#1} + ${#2}))`, "sh", big, big)
	if r.code != 0 || strings.TrimSpace(r.stdout) != "245760" {
		t.Errorf("exit %d, stdout %q; want 204800\n%s", r.code, r.stdout, r.stderr)
	}
}
