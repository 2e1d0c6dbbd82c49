package integration

import (
	"strings"
	"testing"
)

// TestExecTakesALongCommand: a command of 160 KB of arguments (an agent's
// bash -c script), more than one read of the supervisor's socket takes,
// reaches a long-lived sandbox whole, as with ward run.
func TestExecTakesALongCommand(t *testing.T) {
	name := sandboxName()
	if r := run(t, opts{}, "start", "--name="+name); r.code != 0 {
		t.Fatalf("start: %s", r)
	}
	t.Cleanup(func() { run(t, opts{}, "stop", name) })
	big := strings.Repeat("x", 80<<10)
	r := run(t, opts{}, "exec", name, "--", "sh", "-c", `echo $((${#1} + ${#2}))`, "sh", big, big)
	if r.code != 0 || strings.TrimSpace(r.stdout) != "163840" {
		t.Errorf("exit %d, stdout %q; want 163840\n%s", r.code, r.stdout, r.stderr)
	}
}
