package integration

import (
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"golang.org/x/sys/unix"
)

// TestOCIExecCapAndCgroup: exec --cap adds a capability the container's
// process lacks to the command's effective set, and exec --cgroup runs
// the command in an existing cgroup below the container's (on v1 in the
// named controller's hierarchy only).
func TestOCIExecCapAndCgroup(t *testing.T) {
	e := newOCIEnv(t)
	e.config("xc", "sleep", "1000")
	pid := e.create("xc", nil)
	e.must(nil, "start", "xc")
	t.Cleanup(func() {
		if r := e.run(nil, "delete", "--force", "xc"); r.code != 0 {
			t.Errorf("delete --force: %+v", r)
		}
	})
	const netAdmin = 12 // CAP_NET_ADMIN, not in runc spec's default set
	capEff := func(flags ...string) uint64 {
		t.Helper()
		code, out := e.execFlagsOut(flags, "xc", "grep", "CapEff", "/proc/self/status")
		var v uint64
		if _, err := fmt.Sscanf(strings.TrimSpace(strings.TrimPrefix(out, "CapEff:")), "%x", &v); code != 0 || err != nil {
			t.Fatalf("exec %v: exit %d, %q", flags, code, out)
		}
		return v
	}
	if v := capEff(); v&(1<<netAdmin) != 0 {
		t.Fatalf("the container's own effective set %#x has CAP_NET_ADMIN already", v)
	}
	if v := capEff("--cap", "CAP_NET_ADMIN"); v&(1<<netAdmin) == 0 {
		t.Errorf("exec --cap CAP_NET_ADMIN: effective set %#x, want CAP_NET_ADMIN in it", v)
	}

	// A cgroup below the container's: v2's tree, or v1's pids hierarchy.
	ctrls, flag := "", "sub"
	if !cgroupV2() {
		ctrls, flag = "pids", "pids:sub"
	}
	cg := procCgroups(t, fmt.Sprint(pid))
	sub := filepath.Join("/sys/fs/cgroup", cg[ctrls], "sub")
	if ctrls != "" {
		sub = filepath.Join(hierarchyDir(ctrls), cg[ctrls], "sub")
	}
	if err := os.Mkdir(sub, 0o755); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = os.Remove(sub) })
	code, out := e.execFlagsOut([]string{"--cgroup", flag}, "xc", "cat", "/proc/self/cgroup")
	if code != 0 {
		t.Fatalf("exec --cgroup %s: exit %d, %q", flag, code, out)
	}
	// Inside, the container's cgroup namespace shows its cgroup as "/".
	sawSub := false
	for _, line := range strings.Split(strings.TrimSpace(out), "\n") {
		f := strings.SplitN(line, ":", 3)
		if len(f) != 3 || (f[1] != ctrls && (ctrls == "" || f[1] == "")) {
			continue
		}
		want := "/"
		if f[1] == ctrls {
			want = "/sub"
			sawSub = true
		}
		if f[2] != want {
			t.Errorf("exec --cgroup %s: in %q the command is in %s, want %s\n%s", flag, f[1], f[2], want, out)
		}
	}
	if !sawSub {
		t.Errorf("exec --cgroup %s: no %q line in the command's /proc/self/cgroup:\n%s", flag, ctrls, out)
	}
	if r := e.run(nil, "exec", "--cgroup", "nosuch", "xc", "true"); r.code == 0 || !strings.Contains(r.stderr, "--cgroup nosuch") {
		t.Errorf("exec --cgroup nosuch: %+v, want an error naming it", r)
	}
}

// TestOCIExecFailureLeavesNoZombie: an exec whose command is not there
// fails naming it, and its process is reaped by ward-oci exec, not left a
// zombie in the container's PID namespace for the caller's subreaper: one
// left there holds the container's init, once killed, in the kernel's
// wait for the namespace to empty, and delete --force then fails ("still
// alive 10 s after SIGKILL") while the caller waits for the init.
func TestOCIExecFailureLeavesNoZombie(t *testing.T) {
	e := newOCIEnv(t)
	e.config("xz", "sleep", "1000")
	pid := e.create("xz", nil)
	e.must(nil, "start", "xz")
	if r := e.run(nil, "exec", "xz", "/nosuch"); r.code == 0 || !strings.Contains(r.stderr, "/nosuch") {
		t.Errorf("exec /nosuch: %+v, want an error naming it", r)
	}
	ns, err := os.Readlink(fmt.Sprintf("/proc/%d/ns/pid", pid))
	if err != nil {
		t.Fatal(err)
	}
	procs, _ := filepath.Glob("/proc/[0-9]*")
	for _, p := range procs {
		if other, _ := os.Readlink(p + "/ns/pid"); other == ns && p != fmt.Sprintf("/proc/%d", pid) {
			st, _ := os.ReadFile(p + "/stat")
			t.Errorf("a process of the failed exec is left in the container's PID namespace: %s", st)
			// Reaped here (the test is the subreaper), so that the
			// cleanup's wait for the init does not hang.
			if zpid, err := strconv.Atoi(filepath.Base(p)); err == nil {
				_, _ = unix.Wait4(zpid, nil, unix.WNOHANG, nil)
			}
		}
	}
	if r := e.run(nil, "delete", "--force", "xz"); r.code != 0 {
		t.Fatalf("delete --force: %+v", r)
	}
	if ws := reapPid(pid); !ws.Signaled() {
		t.Errorf("the container's process ended with %v, want killed", ws)
	}
	e.gone("xz", pid)
}
