package integration

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// crashHelperPy starts long-lived sandboxes (`ward start`) as a child
// subreaper that never reaps: the supervisor those starts leave behind is
// its child, and once killed stays a zombie, dead but answering kill(pid,
// 0), for as long as the helper lives (until its stdin closes). With
// --tmpfs DIR it first mounts a tmpfs on DIR: run under `unshare --mount`,
// that gives root's sandboxes a /run/ward of their own.
const crashHelperPy = `
import ctypes, subprocess, sys
args = sys.argv[1:]
if args[0] == "--tmpfs":
    subprocess.run(["mount", "-t", "tmpfs", "-o", "mode=0700,size=16m", "itest", args[1]], check=True)
    args = args[2:]
if ctypes.CDLL(None, use_errno=True).prctl(36, 1, 0, 0, 0) != 0:  # PR_SET_CHILD_SUBREAPER
    print("error prctl: errno", ctypes.get_errno(), flush=True)
    sys.exit(1)
for name in args[1:]:
    r = subprocess.run([args[0], "start", "--name=" + name], stdout=subprocess.DEVNULL)
    if r.returncode != 0:
        print("error ward start", name, "exit", r.returncode, flush=True)
        sys.exit(1)
print("ready", flush=True)
sys.stdin.read()
`

// TestCleanRightAfterASupervisorCrash: SIGKILL the supervisor of two
// long-lived sandboxes and, while it is a zombie nobody has reaped yet,
// `ward ps` lists neither and `ward clean` removes the state and cgroups of
// both. Root's /run/ward is shared by every root ward on the machine: the
// test's sandboxes get one of their own (a tmpfs in a mount namespace of
// the test's), so the supervisor it kills holds only them.
func TestCleanRightAfterASupervisorCrash(t *testing.T) {
	needRoot(t)
	if err := os.MkdirAll("/run/ward", 0o700); err != nil { // ward's own, made as ward makes it
		t.Fatal(err)
	}
	helper := exec.Command("unshare", "--mount", "--propagation", "private", "--",
		"/usr/bin/python3", "-c", crashHelperPy, "--tmpfs", "/run/ward", wardBin)
	var helperPid int
	inNS := func(ctx context.Context, env []string, args ...string) *exec.Cmd {
		cmd := exec.CommandContext(ctx, "nsenter", append([]string{"--target", strconv.Itoa(helperPid), "--mount", "--", wardBin}, args...)...)
		cmd.Env = append(os.Environ(), env...)
		return cmd
	}
	testCleanAfterCrash(t, helper, &helperPid, "/run/ward", func(dir string) string {
		return fmt.Sprintf("/proc/%d/root%s", helperPid, dir) // the helper's mount namespace
	}, inNS)
}

// TestRootlessCleanRightAfterASupervisorCrash: the same for an ordinary
// user's sandboxes (their own state directory and supervisor).
func TestRootlessCleanRightAfterASupervisorCrash(t *testing.T) {
	u := newTestUser(t)
	helper := u.command(context.Background(), nil)
	helper.Path, helper.Args = "/usr/bin/python3", []string{"python3", "-c", crashHelperPy, u.ward}
	var helperPid int
	testCleanAfterCrash(t, helper, &helperPid, filepath.Join("/tmp", "ward-"+strconv.Itoa(u.uid)), func(dir string) string { return dir }, u.command)
}

// testCleanAfterCrash runs the crash helper (started here; its pid goes
// to *helperPid) for two sandboxes whose state ward keeps in stateDir
// (seen by the test through view), and then mk's `ward ps` and `ward clean`.
func testCleanAfterCrash(t *testing.T, helper *exec.Cmd, helperPid *int, stateDir string, view func(string) string, mk wardCommand) {
	names := []string{sandboxName(), sandboxName()}
	helper.Args = append(helper.Args, names...)
	stdin, err := helper.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	stdout, err := helper.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	var stderr strings.Builder
	helper.Stderr = &stderr
	if err := helper.Start(); err != nil {
		t.Fatalf("start the helper: %v", err)
	}
	*helperPid = helper.Process.Pid
	var supervisor int
	t.Cleanup(func() {
		// The helper's end lets the zombies go (to init, which reaps).
		stdin.Close()
		done := make(chan struct{})
		go func() { _ = helper.Wait(); close(done) }()
		select {
		case <-done:
		case <-time.After(safetyTimeout):
			_ = helper.Process.Kill() // its pid only
			<-done
		}
		if supervisor > 0 && !running(supervisor) {
			return
		}
		// A failure before the kill: end the sandboxes as ward stop would.
		if supervisor > 0 {
			_ = syscall.Kill(supervisor, syscall.SIGTERM)
		}
	})
	ready := make(chan string, 1)
	go func() {
		line, _ := bufio.NewReader(stdout).ReadString('\n')
		ready <- strings.TrimSpace(line)
	}()
	select {
	case line := <-ready:
		if line != "ready" {
			t.Fatalf("the helper: %q\n%s", line, stderr.String())
		}
	case <-time.After(safetyTimeout):
		t.Fatalf("the helper is not ready after %v\n%s", safetyTimeout, stderr.String())
	}

	for _, n := range names {
		b, err := os.ReadFile(view(filepath.Join(stateDir, n, "pid")))
		if err != nil {
			t.Fatalf("state of %s: %v", n, err)
		}
		pid, _ := strconv.Atoi(strings.TrimSpace(string(b)))
		if supervisor != 0 && pid != supervisor {
			t.Fatalf("two supervisors (%d, %d), want one for both sandboxes", supervisor, pid)
		}
		supervisor = pid
	}
	if ppid := parentOf(supervisor); ppid != *helperPid {
		t.Fatalf("the supervisor %d is a child of %d, not of the helper %d: the test could not make it a zombie", supervisor, ppid, *helperPid)
	}
	if listed := psNames(t, mk); !listed[names[0]] || !listed[names[1]] {
		t.Fatalf("ward ps does not list both sandboxes before the crash: %v", listed)
	}

	if err := syscall.Kill(supervisor, syscall.SIGKILL); err != nil {
		t.Fatalf("kill -9 %d: %v", supervisor, err)
	}
	for deadline := time.Now().Add(10 * time.Second); !isZombie(supervisor) && time.Now().Before(deadline); {
		time.Sleep(10 * time.Millisecond)
	}
	if !isZombie(supervisor) || syscall.Kill(supervisor, 0) != nil {
		t.Fatalf("the killed supervisor %d is not a zombie that answers kill(pid, 0): the test shows nothing", supervisor)
	}

	if listed := psNames(t, mk); listed[names[0]] || listed[names[1]] {
		t.Errorf("ward ps lists the sandboxes of a dead (zombie) supervisor: %v", listed)
	}
	r := runWith(t, mk, "clean")
	for _, n := range names {
		if !strings.Contains(r.stdout, "removed state "+filepath.Join(stateDir, n)+"\n") {
			t.Errorf("ward clean did not say it removed %s's state\n%s", n, r)
		}
		if _, err := os.Stat(view(filepath.Join(stateDir, n))); !os.IsNotExist(err) {
			t.Errorf("%s still there after ward clean (%v)", filepath.Join(stateDir, n), err)
		}
	}
	if left := wardCgroups("ward-" + strconv.Itoa(supervisor) + "-"); len(left) > 0 {
		t.Errorf("cgroups of the dead supervisor left after ward clean: %v\n%s", left, r)
	}
}

// runWith runs one ward command made by mk and waits for it.
func runWith(t *testing.T, mk wardCommand, args ...string) result {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), safetyTimeout)
	defer cancel()
	return runCmd(t, ctx, mk(ctx, nil, args...), args)
}

// psNames is the set of names `ward ps --json` lists.
func psNames(t *testing.T, mk wardCommand) map[string]bool {
	t.Helper()
	r := runWith(t, mk, "ps", "--json")
	var infos []struct {
		Name string `json:"name"`
	}
	if err := json.Unmarshal([]byte(r.stdout), &infos); err != nil {
		t.Fatalf("ps --json: %v\n%s", err, r)
	}
	names := map[string]bool{}
	for _, i := range infos {
		names[i.Name] = true
	}
	return names
}

// statFields are the fields of /proc/PID/stat after the command name
// (field 3, the state, first); nil if there is no such process.
func statFields(pid int) []string {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return nil
	}
	s := string(b)
	return strings.Fields(s[strings.LastIndexByte(s, ')')+1:])
}

func isZombie(pid int) bool {
	f := statFields(pid)
	return len(f) > 0 && f[0] == "Z"
}

func parentOf(pid int) int {
	f := statFields(pid)
	if len(f) < 2 {
		return 0
	}
	ppid, _ := strconv.Atoi(f[1])
	return ppid
}
