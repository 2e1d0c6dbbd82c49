package integration

import (
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// needCgroupV2 skips on hosts whose /sys/fs/cgroup is not cgroup v2 unified
// (the v1/hybrid development host); the VM suite of every CI run has it.
func needCgroupV2(t *testing.T) {
	t.Helper()
	needRoot(t)
	var st syscall.Statfs_t
	if err := syscall.Statfs("/sys/fs/cgroup", &st); err != nil || st.Type != 0x63677270 { // CGROUP2_SUPER_MAGIC
		t.Skip("needs cgroup v2 unified at /sys/fs/cgroup (this host is v1/hybrid; the cgroup-v2 VM suite runs this)")
	}
}

// delegatedCgroup makes a cgroup of the test's own, as systemd makes a
// unit's with Delegate=yes, and removes it (and what ward made in it) after.
func delegatedCgroup(t *testing.T) string {
	t.Helper()
	dir := fmt.Sprintf("/sys/fs/cgroup/ward-delegation-test-%08x", rand.Uint32())
	if err := os.Mkdir(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		// Children first (ward-supervisor, any sandbox cgroup), then dir.
		entries, _ := os.ReadDir(dir)
		for _, e := range entries {
			if e.IsDir() {
				_ = syscall.Rmdir(filepath.Join(dir, e.Name()))
			}
		}
		for i := 0; i < 50; i++ {
			if err := syscall.Rmdir(dir); err == nil || os.IsNotExist(err) {
				return
			}
			time.Sleep(20 * time.Millisecond)
		}
		t.Errorf("could not remove %s", dir)
	})
	return dir
}

// TestCgroupV2WardAloneInDelegatedCgroupMovesToLeaf: under a systemd unit
// with Delegate=yes ward is in a cgroup that holds processes; alone there,
// it moves itself into ward-supervisor and runs the sandbox below.
func TestCgroupV2WardAloneInDelegatedCgroupMovesToLeaf(t *testing.T) {
	needCgroupV2(t)
	dir := delegatedCgroup(t)
	script := fmt.Sprintf(`echo $$ > %s/cgroup.procs && exec %s run --memory-limit=64M -- cat /proc/self/cgroup`, dir, wardBin)
	out, err := exec.Command("sh", "-c", script).CombinedOutput()
	if err != nil {
		t.Fatalf("ward in a delegated cgroup failed: %v\n%s", err, out)
	}
	if _, err := os.Stat(filepath.Join(dir, "ward-supervisor")); err != nil {
		t.Errorf("ward did not move itself into %s/ward-supervisor: %v", dir, err)
	}
	if strings.TrimSpace(string(out)) != "0::/" {
		t.Errorf("the program's cgroup namespace is not rooted at its cgroup:\n%s", out)
	}
	b, _ := os.ReadFile(filepath.Join(dir, "cgroup.subtree_control"))
	for _, c := range []string{"memory", "cpu", "pids"} {
		if !strings.Contains(string(b), c) {
			t.Errorf("%s not enabled in %s/cgroup.subtree_control: %q", c, dir, b)
		}
	}
}

// TestCgroupV2SharedCgroupFailsWithHint: ward never moves processes it did
// not start; sharing its cgroup with another, it stops with 71 and says what
// to do.
func TestCgroupV2SharedCgroupFailsWithHint(t *testing.T) {
	needCgroupV2(t)
	dir := delegatedCgroup(t)
	other := exec.Command("sleep", "60")
	if err := other.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = other.Process.Kill(); _ = other.Wait() })
	if err := os.WriteFile(filepath.Join(dir, "cgroup.procs"), []byte(fmt.Sprint(other.Process.Pid)), 0); err != nil {
		t.Fatal(err)
	}
	script := fmt.Sprintf(`echo $$ > %s/cgroup.procs && exec %s run -- true`, dir, wardBin)
	out, err := exec.Command("sh", "-c", script).CombinedOutput()
	code := -1
	if ee, ok := err.(*exec.ExitError); ok {
		code = ee.ExitCode()
	}
	if code != 71 || !strings.Contains(string(out), "Delegate=yes") || !strings.Contains(string(out), "other processes") {
		t.Errorf("exit %d, want 71 with a hint about Delegate=yes:\n%s", code, out)
	}
	// Move the sleeper back out so the cgroup can be removed.
	_ = os.WriteFile("/sys/fs/cgroup/cgroup.procs", []byte(fmt.Sprint(other.Process.Pid)), 0)
}
