package integration

import (
	"strings"
	"testing"
)

// TestExecAndRunAgreeOnMemory: a child killed for memory whose parent
// then exits 1 is a memory verdict (125), whether the program runs with
// `ward run` or with `ward exec` in a sandbox started with the same limit.
func TestExecAndRunAgreeOnMemory(t *testing.T) {
	prog := []string{"sh", "-c", "python3 -c 'b = bytearray(200 << 20)'; exit 1"}
	if r := run(t, opts{}, append([]string{"run", "--memory-limit=64M", "--"}, prog...)...); r.code != 125 {
		t.Errorf("ward run: exit %d, want 125\n%s", r.code, r)
	}
	name := sandboxName()
	if r := run(t, opts{}, "start", "--name="+name, "--memory-limit=64M"); r.code != 0 || strings.TrimSpace(r.stdout) != name {
		t.Fatalf("start: %s", r)
	}
	t.Cleanup(func() { run(t, opts{}, "stop", name) })
	if r := run(t, opts{}, append([]string{"exec", name, "--"}, prog...)...); r.code != 125 {
		t.Errorf("ward exec: exit %d, want 125\n%s", r.code, r)
	}
	// A command that ends cleanly after an earlier one's OOM kill is its own.
	if r := run(t, opts{}, "exec", name, "--", "sh", "-c", "exit 1"); r.code != 1 {
		t.Errorf("ward exec after an OOM kill: exit %d, want 1\n%s", r.code, r)
	}
}
