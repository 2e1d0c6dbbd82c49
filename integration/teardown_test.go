package integration

import (
	"strings"
	"syscall"
	"testing"
	"time"
)

func TestTeardownWardSIGKILLedKillsWholeSandbox(t *testing.T) {
	needRoot(t)
	before, err := readMountinfo()
	if err != nil {
		t.Fatal(err)
	}
	u := uniqueArg()
	killSurvivors(t, u)
	// A SIGKILLed ward cannot remove its cgroup; ward clean does (tested in
	// TestCleanRemovesStaleCgroupAfterSIGKILL).
	t.Cleanup(func() { run(t, opts{}, "clean") })
	p := startWard(t, opts{}, "run", "sleep", u)
	if !waitForProc(u, "sleep", 10*time.Second) {
		_ = p.cmd.Process.Kill()
		t.Fatalf("sandboxed sleep %s never appeared\n%s", u, p.wait())
	}
	if err := p.cmd.Process.Kill(); err != nil { // SIGKILL ward, by pid
		t.Fatal(err)
	}
	r := p.wait()
	if r.code != 128+int(syscall.SIGKILL) {
		t.Errorf("ward exit %d after SIGKILL, want 137\n%s", r.code, r)
	}
	if pids := waitGone(u, 3*time.Second); len(pids) > 0 {
		t.Errorf("3s after ward was SIGKILLed these sandbox processes survive:\n%s", describePids(pids))
	}
	assertNoWardMounts(t, before)
}

func TestTeardownOrphansKilledWhenProgramExits(t *testing.T) {
	// The orphan detaches with setsid and drops its stdio, so only ward's
	// teardown (not a closed pipe or a session hangup) can end it. The loop
	// makes sure it has really exec'd sleep before the program exits.
	const wait = `pid=$!; i=0
while [ "$(cat /proc/$pid/comm 2>/dev/null)" != sleep ] && [ $i -lt 500 ]; do i=$((i+1)); sleep 0.01; done
echo "started comm=$(cat /proc/$pid/comm)"`
	cases := []struct {
		name   string
		script string // %U is replaced with the unique argument
	}{
		{"setsid sleep", `setsid sleep %U </dev/null >/dev/null 2>&1 & ` + wait},
		{"setsid sleep ignoring TERM and HUP", `trap "" TERM HUP; setsid sleep %U </dev/null >/dev/null 2>&1 & ` + wait},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			needRoot(t)
			u := uniqueArg()
			killSurvivors(t, u)
			r := run(t, opts{}, "run", "sh", "-c", strings.ReplaceAll(c.script, "%U", u))
			if r.code != 0 || !strings.Contains(r.stdout, "started comm=sleep") {
				t.Fatalf("the orphan did not start inside the sandbox\n%s", r)
			}
			// A killed process may need a moment to be reaped; allow 1s.
			if pids := waitGone(u, time.Second); len(pids) > 0 {
				t.Errorf("orphan survives after ward returned:\n%s", describePids(pids))
			}
		})
	}
}

func TestTeardownNoHostMountsLeftAfterRuns(t *testing.T) {
	needRoot(t)
	before, err := readMountinfo()
	if err != nil {
		t.Fatal(err)
	}
	for _, args := range [][]string{
		{"run", "true"},
		{"run", "sh", "-c", "exit 3"},
		{"run", "sh", "-c", "kill -9 $$"},
		{"run", "--time-limit=200ms", "sleep", "30"},
		{"run", "ward-no-such-command-8c1f"},
	} {
		run(t, opts{}, args...)
		assertNoWardMounts(t, before)
	}
}

func TestTeardownSIGTERMToWardForwardedToProgram(t *testing.T) {
	needRoot(t)
	u := uniqueArg()
	killSurvivors(t, u)
	p := startWard(t, opts{}, "run", "sh", "-c", `trap "echo got-term; exit 3" TERM; sleep `+u+` & wait`)
	// The trap is set before sleep starts, so once sleep is visible the
	// program is ready for the signal.
	if !waitForProc(u, "sleep", 10*time.Second) {
		_ = p.cmd.Process.Kill()
		t.Fatalf("sandboxed program never started\n%s", p.wait())
	}
	if err := p.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(10 * time.Second)
	for !p.exited() && time.Now().Before(deadline) {
		time.Sleep(20 * time.Millisecond)
	}
	if !p.exited() {
		_ = p.cmd.Process.Kill()
		t.Fatalf("ward still running 10s after SIGTERM\n%s", p.wait())
	}
	r := p.wait()
	if r.code != 3 || !strings.Contains(r.stdout, "got-term") {
		t.Errorf("want exit 3 and got-term on stdout (SIGTERM forwarded to the program)\n%s", r)
	}
	if pids := waitGone(u, time.Second); len(pids) > 0 {
		t.Errorf("sandbox processes survive after ward returned:\n%s", describePids(pids))
	}
}
