package integration

import (
	"fmt"
	"os"
	"path"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	"golang.org/x/sys/unix"
)

// procCgroups is /proc/PID/cgroup (pid "self" for this process) by its
// controllers field ("" for the v2 line).
func procCgroups(t *testing.T, pid string) map[string]string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("/proc", pid, "cgroup"))
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]string{}
	for _, line := range strings.Split(strings.TrimSpace(string(b)), "\n") {
		if f := strings.SplitN(line, ":", 3); len(f) == 3 {
			out[f[1]] = f[2]
		}
	}
	return out
}

// hierarchyDir is the directory under /sys/fs/cgroup of a v1 hierarchy
// named by /proc/PID/cgroup's controllers field ("name=systemd" is
// "systemd"; "cpu,cpuacct" may be mounted as it is named).
func hierarchyDir(ctrls string) string {
	return filepath.Join("/sys/fs/cgroup", strings.TrimPrefix(ctrls, "name="))
}

// TestOCIRelativeCgroupsPath: a relative cgroupsPath is below ward-oci's
// own cgroup in each hierarchy, as runc puts it: on cgroup v1, where the
// caller's cgroups differ between hierarchies (this host's memory cgroup
// is not its pids one), the container's cgroup in each hierarchy is below
// the caller's in that hierarchy, never at the hierarchy's root; delete
// removes it from each.
func TestOCIRelativeCgroupsPath(t *testing.T) {
	e := newOCIEnv(t)
	e.config("rel", "sleep", "1000") // a relative cgroupsPath (cgroupOf)
	rel := e.cgroupOf("rel")
	if strings.HasPrefix(rel, "/") {
		t.Fatalf("cgroupsPath %s: want a relative one", rel)
	}
	own := procCgroups(t, "self")
	v2 := cgroupV2()
	pid := e.create("rel", nil)
	got := procCgroups(t, fmt.Sprint(pid))
	var checked []string
	for ctrls, p := range own {
		if (ctrls == "") != v2 {
			continue // on v1 ward leaves the hybrid layout's v2 tree alone
		}
		if ctrls != "" {
			if _, err := os.Stat(hierarchyDir(ctrls)); err != nil {
				continue // a hierarchy not mounted where ward-oci looks
			}
		}
		want := path.Join(p, rel)
		if got[ctrls] != want {
			t.Errorf("the container's cgroup in %q is %s, want %s (below the caller's %s there)", ctrls, got[ctrls], want, p)
		}
		checked = append(checked, ctrls+"="+p)
	}
	sort.Strings(checked)
	t.Logf("checked below the caller's own cgroups: %v", checked)
	if len(checked) == 0 {
		t.Fatal("no hierarchy checked")
	}
	e.must(nil, "delete", "--force", "rel")
	reapPid(pid)
	for ctrls := range got {
		if (ctrls == "") != v2 {
			continue
		}
		dir := filepath.Join("/sys/fs/cgroup", got[ctrls])
		if ctrls != "" {
			dir = filepath.Join(hierarchyDir(ctrls), got[ctrls])
		}
		if _, err := os.Stat(dir); err == nil {
			t.Errorf("after delete the cgroup %s is still there", dir)
		}
	}
	if err := unix.Kill(pid, 0); err == nil {
		t.Errorf("the container's process %d is still there", pid)
	}
}
