package integration

import (
	"fmt"
	"testing"
)

// TestOCIStartFastProgram: start succeeds for a program that ends at once
// while the subreaper reaps it at once, as containerd's shim does (`ctr
// run ... /bin/true`): start checks the container's process before it
// releases it, not after.
func TestOCIStartFastProgram(t *testing.T) {
	e := newOCIEnv(t)
	for i := 0; i < 5; i++ {
		id := fmt.Sprintf("f%d", i)
		e.config(id, "true")
		pid := e.create(id, nil)
		reaped := make(chan bool, 1)
		go func() { ws := reapPid(pid); reaped <- ws.Exited() && ws.ExitStatus() == 0 }()
		if r := e.run(nil, "start", id); r.code != 0 {
			t.Errorf("start %s: exit %d: %s", id, r.code, r.stderr)
		}
		if !<-reaped {
			t.Errorf("%s: the program did not exit 0", id)
		}
		e.must(nil, "delete", id)
		e.gone(id, pid)
	}
}
