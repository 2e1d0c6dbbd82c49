package integration

import (
	"bufio"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// ward-oci's cgroup commands: update, events, ps's table, and the device
// rules (v1's device controller, v2's eBPF program), on the host's layout.

// applets links more of busybox's applets into the rootfs.
func (e *ociEnv) applets(names ...string) {
	e.t.Helper()
	for _, n := range names {
		p := filepath.Join(e.bundle, "rootfs", "bin", n)
		if err := os.Symlink("busybox", p); err != nil && !os.IsExist(err) {
			e.t.Fatal(err)
		}
	}
}

// cgroupFile reads one of the container's cgroup files (v1: in ctrl's
// hierarchy).
func (e *ociEnv) cgroupFile(id, ctrl, v1, v2 string) string {
	e.t.Helper()
	p := filepath.Join(e.cgroupDir(id, ctrl), v2)
	if !cgroupV2() {
		p = filepath.Join(e.cgroupDir(id, ctrl), v1)
	}
	b, err := os.ReadFile(p)
	if err != nil {
		e.t.Fatal(err)
	}
	return strings.TrimSpace(string(b))
}

func cgroupV2() bool {
	_, err := os.Stat("/sys/fs/cgroup/cgroup.controllers")
	return err == nil
}

// execOut runs a command in the container and returns its exit status and
// output.
func (e *ociEnv) execOut(id string, args ...string) (int, string) {
	e.t.Helper()
	return e.execFlagsOut(nil, id, args...)
}

// execFlagsOut is execOut with exec's own flags (before the id).
func (e *ociEnv) execFlagsOut(flags []string, id string, args ...string) (int, string) {
	e.t.Helper()
	out, err := os.Create(filepath.Join(e.t.TempDir(), "out"))
	if err != nil {
		e.t.Fatal(err)
	}
	defer out.Close()
	r := e.run(out, append(append(append([]string{"exec"}, flags...), id), args...)...)
	b, _ := os.ReadFile(out.Name())
	return r.code, string(b)
}

// TestOCIUpdateLowersLimits: update lowers pids.max (runc's flags) and the
// memory limit (--resources FILE) of a running container, the container's
// processes meet them, the state records them, and --resources - reads
// them from stdin.
func TestOCIUpdateLowersLimits(t *testing.T) {
	e := newOCIEnv(t)
	e.applets("head", "tr")
	e.config("u1", "sleep", "1000")
	pid := e.create("u1", nil)
	e.must(nil, "start", "u1")
	forks := "sleep 100 & sleep 100 & sleep 100 & sleep 100 & echo forked"
	if code, out := e.execOut("u1", "sh", "-c", forks+"; kill $(jobs -p)"); code != 0 || !strings.Contains(out, "forked") {
		t.Fatalf("before update: exit %d, %q; want the forks to work", code, out)
	}
	e.must(nil, "update", "--pids-limit", "3", "u1")
	if got := e.cgroupFile("u1", "pids", "pids.max", "pids.max"); got != "3" {
		t.Errorf("pids.max after update: %s, want 3", got)
	}
	if code, out := e.execOut("u1", "sh", "-c", forks); code == 0 || strings.Contains(out, "forked") || !strings.Contains(out, "fork") {
		t.Errorf("with pids.max 3: exit %d, %q; want fork to fail", code, out)
	}
	res := filepath.Join(t.TempDir(), "resources.json")
	lim := 32 << 20
	if err := os.WriteFile(res, []byte(fmt.Sprintf(`{"memory":{"limit":%d,"swap":%d},"pids":{"limit":100}}`, lim, lim)), 0o644); err != nil {
		t.Fatal(err)
	}
	e.must(nil, "update", "--resources", res, "u1")
	if got := e.cgroupFile("u1", "memory", "memory.limit_in_bytes", "memory.max"); got != strconv.Itoa(lim) {
		t.Errorf("the memory limit after update: %s, want %d", got, lim)
	}
	// 100 MB in a shell variable: more than the limit.
	code, out := e.execOut("u1", "sh", "-c", "x=$(head -c 100000000 /dev/zero | tr '\\0' a); echo survived ${#x}")
	if code != 128+int(unix.SIGKILL) || strings.Contains(out, "survived") {
		t.Errorf("100 MB under a 32 MB limit: exit %d, %q; want killed (137) by the OOM killer", code, out)
	}
	var st struct {
		Config struct {
			Linux struct {
				Resources struct {
					Memory struct{ Limit int64 } `json:"memory"`
					Pids   struct{ Limit int64 } `json:"pids"`
				} `json:"resources"`
			} `json:"linux"`
		} `json:"config"`
	}
	b, err := os.ReadFile(filepath.Join(e.root, "u1", "state.json"))
	if err == nil {
		err = json.Unmarshal(b, &st)
	}
	if r := st.Config.Linux.Resources; err != nil || r.Memory.Limit != int64(lim) || r.Pids.Limit != 100 {
		t.Errorf("the state records %+v (%v), want memory %d, pids 100", r, err, lim)
	}
	// As containerd's shim passes them: on stdin.
	cmd := exec.Command(e.bin, "--root", e.root, "update", "-r", "-", "u1")
	cmd.Stdin = strings.NewReader(`{"pids":{"limit":50}}`)
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Errorf("update -r - (stdin): %v: %s", err, out)
	}
	if got := e.cgroupFile("u1", "pids", "pids.max", "pids.max"); got != "50" {
		t.Errorf("pids.max after update -r -: %s, want 50", got)
	}
	if r := e.run(nil, "update", "--memory", "lots", "u1"); r.code != 1 || !strings.Contains(r.stderr, "--memory") {
		t.Errorf("update --memory lots: %+v, want refused naming the flag", r)
	}
	e.must(nil, "delete", "--force", "u1")
	reapPid(pid)
	e.gone("u1", pid)
}

// TestOCIEventsStats: events --stats prints one stats event as JSON with
// the container's memory use and tasks.
func TestOCIEventsStats(t *testing.T) {
	e := newOCIEnv(t)
	e.config("ev1", "sleep", "1000")
	pid := e.create("ev1", nil)
	e.must(nil, "start", "ev1")
	out := e.must(nil, "events", "--stats", "ev1")
	var ev struct {
		Type string `json:"type"`
		ID   string `json:"id"`
		Data struct {
			Memory struct {
				Usage struct {
					Usage uint64 `json:"usage"`
					Limit uint64 `json:"limit"`
				} `json:"usage"`
				Raw map[string]uint64 `json:"raw"`
			} `json:"memory"`
			Pids struct {
				Current uint64 `json:"current"`
			} `json:"pids"`
			CPU struct {
				Usage struct {
					Total uint64 `json:"total"`
				} `json:"usage"`
			} `json:"cpu"`
		} `json:"data"`
	}
	if strings.Count(out, "\n") != 1 {
		t.Errorf("events --stats printed %q, want one line", out)
	}
	if err := json.Unmarshal([]byte(out), &ev); err != nil {
		t.Fatalf("events --stats: %v: %q", err, out)
	}
	if ev.Type != "stats" || ev.ID != "ev1" || ev.Data.Memory.Usage.Usage == 0 || ev.Data.Memory.Usage.Limit == 0 ||
		len(ev.Data.Memory.Raw) == 0 || ev.Data.Pids.Current != 1 || ev.Data.CPU.Usage.Total == 0 {
		t.Errorf("events --stats: %+v from %s; want type stats, id ev1, memory in use, 1 task, CPU time", ev, out)
	}
	e.must(nil, "delete", "--force", "ev1")
	reapPid(pid)
	if r := e.run(nil, "events", "--stats", "ev1"); r.code == 0 || !strings.Contains(r.stderr, "does not exist") {
		t.Errorf("events of a deleted container: %+v", r)
	}
}

// TestOCIPsTable: ps without --format is ps -ef's header and the
// container's lines only; ps options after the id are ps's.
func TestOCIPsTable(t *testing.T) {
	e := newOCIEnv(t)
	e.config("ps1", "sleep", "1001")
	pid := e.create("ps1", nil)
	e.must(nil, "start", "ps1")
	out := e.must(nil, "ps", "ps1")
	lines := strings.Split(strings.TrimSuffix(out, "\n"), "\n")
	if len(lines) != 2 || !strings.Contains(lines[0], "PID") || !strings.Contains(lines[0], "CMD") ||
		!strings.Contains(lines[1], " "+strconv.Itoa(pid)+" ") || !strings.HasSuffix(lines[1], "sleep 1001") {
		t.Errorf("ps: %q, want the header and the line of %d (sleep 1001)", out, pid)
	}
	out = e.must(nil, "ps", "ps1", "-e", "-o", "pid,comm")
	if want := fmt.Sprintf("%d sleep", pid); !strings.Contains(out, want) || strings.Count(out, "\n") != 2 {
		t.Errorf("ps -e -o pid,comm: %q, want a header and %q", out, want)
	}
	e.must(nil, "delete", "--force", "ps1")
	reapPid(pid)
}

// TestOCIRunDetach: run --detach returns once the program runs; the
// process re-parents to the caller's subreaper.
func TestOCIRunDetach(t *testing.T) {
	e := newOCIEnv(t)
	e.config("rd1", "sleep", "1000")
	pidFile := filepath.Join(t.TempDir(), "pid")
	e.must(nil, "run", "--detach", "--bundle", e.bundle, "--pid-file", pidFile, "rd1")
	pid := readPid(t, pidFile)
	t.Cleanup(func() { _ = unix.Kill(pid, unix.SIGKILL); reapPid(pid) })
	if st, spid := e.status("rd1"); st != "running" || spid != pid {
		t.Errorf("after run --detach: %s, pid %d; want running, %d", st, spid, pid)
	}
	if ppid := parentOf(pid); ppid != os.Getpid() {
		t.Errorf("the process %d has parent %d, want the subreaper (%d)", pid, ppid, os.Getpid())
	}
	e.must(nil, "delete", "--force", "rd1")
	reapPid(pid)
	e.gone("rd1", pid)
}

// devDir is a temp dir on a file system that allows device nodes: the
// test's temp dir, or (where that is nodev, as the VM's /tmp) one in /.
func devDir(t *testing.T) string {
	t.Helper()
	for _, parent := range []string{"", "/"} {
		var dir string
		if parent == "" {
			dir = t.TempDir()
		} else {
			d, err := os.MkdirTemp(parent, ".ward-devtest-")
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { os.RemoveAll(d) })
			dir = d
		}
		var st unix.Statfs_t
		if err := unix.Statfs(dir, &st); err == nil && st.Flags&unix.ST_NODEV == 0 {
			return dir
		}
	}
	t.Skip("no file system here allows device nodes (the temp dir and / are nodev)")
	return ""
}

// TestOCIDeviceRules: a device node bound into the container opens only
// when linux.resources.devices allows it: v1's device controller, or on
// cgroup v2 ward's eBPF program. The node is the tun device's numbers
// (10:200), which no default rule allows and whose open needs no
// privilege.
func TestOCIDeviceRules(t *testing.T) {
	e := newOCIEnv(t)
	node := filepath.Join(devDir(t), "node")
	if err := unix.Mknod(node, unix.S_IFCHR|0o666, int(unix.Mkdev(10, 200))); err != nil {
		t.Fatalf("mknod %s: %v", node, err)
	}
	if err := os.Chmod(node, 0o666); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name  string
		allow bool
	}{{"denied", false}, {"allowed", true}} {
		t.Run(tc.name, func(t *testing.T) {
			id := "dev-" + tc.name
			e.config(id, "sh", "-c", "(exec 3</dev/wardtest) && echo opened; (exec 4</dev/null) && echo null")
			e.edit(func(c map[string]any) {
				c["mounts"] = append(c["mounts"].([]any), map[string]any{"destination": "/dev/wardtest", "type": "bind", "source": node, "options": []string{"bind"}})
				res := c["linux"].(map[string]any)["resources"].(map[string]any)
				rules := []any{map[string]any{"allow": false, "access": "rwm"}}
				if tc.allow {
					rules = append(rules, map[string]any{"allow": true, "type": "c", "major": 10, "minor": 200, "access": "r"})
				}
				res["devices"] = rules
			})
			out, err := os.Create(filepath.Join(t.TempDir(), "out"))
			if err != nil {
				t.Fatal(err)
			}
			defer out.Close()
			e.run(out, "run", "--bundle", e.bundle, id)
			b, _ := os.ReadFile(out.Name())
			t.Logf("in the container: %q", b)
			// Allowed, it opens, or fails in the driver (no tun module).
			denied := strings.Contains(string(b), "Operation not permitted")
			if opened := strings.Contains(string(b), "opened"); denied == tc.allow || opened && !tc.allow {
				t.Errorf("open of c 10:200 with allow=%v: %q", tc.allow, b)
			}
			if !strings.Contains(string(b), "null\n") {
				t.Errorf("/dev/null (a default device) did not open: %q", b)
			}
		})
	}
}

// TestOCIEventsOOM: events prints an "oom" event when a process of the
// container's is killed at its memory limit.
func TestOCIEventsOOM(t *testing.T) {
	e := newOCIEnv(t)
	e.applets("head", "tr")
	e.config("oom1", "sleep", "1000")
	e.edit(func(c map[string]any) {
		c["linux"].(map[string]any)["resources"].(map[string]any)["memory"] = map[string]any{"limit": 32 << 20, "swap": 32 << 20}
	})
	pid := e.create("oom1", nil)
	e.must(nil, "start", "oom1")
	cmd := exec.Command(e.bin, "--root", e.root, "events", "--interval", "1h", "oom1")
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
	lines := make(chan string)
	go func() {
		sc := bufio.NewScanner(stdout)
		for sc.Scan() {
			lines <- sc.Text()
		}
		close(lines)
	}()
	// events watches once it has started: the hog runs again (killed at
	// the limit each time) until an event comes.
	var got string
	for try := 0; try < 10 && got == ""; try++ {
		code, out := e.execOut("oom1", "sh", "-c", "x=$(head -c 100000000 /dev/zero | tr '\\0' a); echo survived")
		if code != 137 {
			t.Fatalf("the hog: exit %d, %q; want killed at the limit", code, out)
		}
		select {
		case got = <-lines:
		case <-time.After(5 * time.Second):
		}
	}
	var ev struct{ Type, ID string }
	if err := json.Unmarshal([]byte(got), &ev); err != nil || ev.Type != "oom" || ev.ID != "oom1" {
		t.Errorf("events printed %q, want {\"type\":\"oom\",\"id\":\"oom1\"}", got)
	}
	e.must(nil, "delete", "--force", "oom1")
	reapPid(pid)
}

// TestOCISystemdCgroup: with --systemd-cgroup the container's cgroup is a
// transient scope the system manager makes (the default cgroupsPath
// :ward:ID, system.slice/ward-ID.scope). Where systemd is not PID 1 (this
// host, the test VM) create fails saying so and leaves nothing.
func TestOCISystemdCgroup(t *testing.T) {
	e := newOCIEnv(t)
	e.config("sd1", "sleep", "1000")
	e.edit(func(c map[string]any) { delete(c["linux"].(map[string]any), "cgroupsPath") })
	pidFile := filepath.Join(t.TempDir(), "pid")
	r := e.run(nil, "--systemd-cgroup", "create", "--bundle", e.bundle, "--pid-file", pidFile, "sd1")
	if fi, err := os.Stat("/run/systemd/private"); err != nil || fi.Mode()&os.ModeSocket == 0 {
		t.Logf("no systemd system manager here (%v): create must fail saying so", err)
		if r.code != 1 || !strings.Contains(r.stderr, "--systemd-cgroup") || !strings.Contains(r.stderr, "no systemd system manager") {
			t.Errorf("create --systemd-cgroup without a manager: %+v, want an error saying there is none", r)
		}
		if r := e.run(nil, "state", "sd1"); !strings.Contains(r.stderr, "does not exist") {
			t.Errorf("the failed create left a container: %+v", r)
		}
		return
	}
	if r.code != 0 {
		t.Fatalf("create --systemd-cgroup: %+v", r)
	}
	b, _ := os.ReadFile(pidFile)
	pid, _ := strconv.Atoi(string(b))
	t.Cleanup(func() { _ = unix.Kill(pid, unix.SIGKILL); reapPid(pid) })
	cg, _ := os.ReadFile(fmt.Sprintf("/proc/%d/cgroup", pid))
	if !strings.Contains(string(cg), "/system.slice/ward-sd1.scope\n") {
		t.Errorf("the container's cgroups:\n%s\nwant /system.slice/ward-sd1.scope", cg)
	}
	e.must(nil, "delete", "--force", "sd1")
	reapPid(pid)
}
