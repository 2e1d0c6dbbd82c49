package integration

import (
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"

	"golang.org/x/sys/unix"
)

// The OCI lifecycle, driven as containerd's shim drives runc: the test
// process is a child subreaper, so the container's process (the pid in the
// pid file) re-parents to it once create has exited, and the test reaps it
// and sees its exit status.

// ociEnv is one test's ward-oci: its state root, its bundle and the cgroup
// parent its containers go below.
type ociEnv struct {
	t      *testing.T
	bin    string
	root   string
	bundle string
	// cgroup is ward-oci-test-N, the parent of the containers' cgroups:
	// their cgroupsPath is relative (cgroupOf), so that ward-oci puts them
	// below this process's own cgroup in each hierarchy, where the host
	// accounts for the test's processes (on v1 its memory cgroup need not
	// be its pids one).
	cgroup string
	own    map[string]string // this process's cgroups (procCgroups)
}

// newOCIEnv makes a busybox-static rootfs and a state root in temp dirs,
// and makes the test process a child subreaper until the test ends.
func newOCIEnv(t *testing.T) *ociEnv {
	t.Helper()
	if _, err := os.Stat("/bin/busybox"); err != nil {
		t.Skip("busybox-static is not installed (/bin/busybox): it makes the container's rootfs")
	}
	if _, err := exec.LookPath("runc"); err != nil {
		t.Skip("runc is not installed: its `runc spec` makes the config.json")
	}
	bin := filepath.Join(filepath.Dir(wardBin), "ward-oci")
	if _, err := os.Stat(bin); err != nil {
		t.Fatalf("bin/ward-oci missing: run make build (%v)", err)
	}
	e := &ociEnv{t: t, bin: bin, root: t.TempDir(), bundle: t.TempDir(),
		cgroup: fmt.Sprintf("ward-oci-test-%d-%d", os.Getpid(), rand.IntN(1<<30)), own: procCgroups(t, "self")}
	rootfs := filepath.Join(e.bundle, "rootfs")
	for _, d := range []string{"bin", "proc", "dev", "sys", "tmp", "etc"} {
		if err := os.MkdirAll(filepath.Join(rootfs, d), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	b, err := os.ReadFile("/bin/busybox")
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(rootfs, "bin", "busybox"), b, 0o755); err != nil {
		t.Fatal(err)
	}
	for _, c := range []string{"sh", "echo", "sleep", "cat", "id", "hostname", "true", "grep"} {
		if err := os.Symlink("busybox", filepath.Join(rootfs, "bin", c)); err != nil {
			t.Fatal(err)
		}
	}
	if out, err := exec.Command("runc", "spec", "--bundle", e.bundle).CombinedOutput(); err != nil {
		t.Fatalf("runc spec: %v: %s", err, out)
	}
	if err := unix.Prctl(unix.PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0); err != nil {
		t.Fatalf("PR_SET_CHILD_SUBREAPER: %v", err)
	}
	t.Cleanup(func() {
		_ = unix.Prctl(unix.PR_SET_CHILD_SUBREAPER, 0, 0, 0, 0)
		for _, dir := range e.cgroupDirs("") {
			kids, _ := os.ReadDir(dir)
			for _, k := range kids {
				if k.IsDir() {
					_ = os.Remove(filepath.Join(dir, k.Name()))
				}
			}
			_ = os.Remove(dir)
		}
	})
	return e
}

// config writes config.json: runc spec's (its capabilities too), without
// a terminal or the cgroup mount ward does not make, with args and the
// container's cgroup below the test's parent.
func (e *ociEnv) config(id string, args ...string) {
	e.t.Helper()
	path := filepath.Join(e.bundle, "config.json")
	b, err := os.ReadFile(path)
	if err != nil {
		e.t.Fatal(err)
	}
	var c map[string]any
	if err := json.Unmarshal(b, &c); err != nil {
		e.t.Fatal(err)
	}
	p := c["process"].(map[string]any)
	p["terminal"] = false
	p["args"] = args
	var mounts []any
	for _, m := range c["mounts"].([]any) {
		if m.(map[string]any)["type"] != "cgroup" {
			mounts = append(mounts, m)
		}
	}
	c["mounts"] = mounts
	c["linux"].(map[string]any)["cgroupsPath"] = e.cgroupOf(id)
	if b, err = json.Marshal(c); err != nil {
		e.t.Fatal(err)
	}
	if err := os.WriteFile(path, b, 0o644); err != nil {
		e.t.Fatal(err)
	}
}

// cgroupOf is container id's cgroupsPath: relative, below ward-oci's own
// cgroup (the test's) in each hierarchy.
func (e *ociEnv) cgroupOf(id string) string { return e.cgroup + "/" + id }

// cgroupDirs are container id's cgroup directories on the host (id ""
// the test's parent's): in the v2 tree, or in each v1 hierarchy below
// this process's own cgroup there.
func (e *ociEnv) cgroupDirs(id string) []string {
	var out []string
	for ctrls, own := range e.own {
		if (ctrls == "") != cgroupV2() {
			continue // on v1 ward-oci leaves the hybrid layout's v2 tree alone
		}
		root := "/sys/fs/cgroup"
		if ctrls != "" {
			root = hierarchyDir(ctrls)
		}
		if _, err := os.Stat(root); err == nil {
			out = append(out, filepath.Join(root, own, e.cgroup, id))
		}
	}
	return out
}

// cgroupDir is container id's cgroup directory in controller ctrl's v1
// hierarchy, or in the v2 tree.
func (e *ociEnv) cgroupDir(id, ctrl string) string {
	e.t.Helper()
	if cgroupV2() {
		return filepath.Join("/sys/fs/cgroup", e.own[""], e.cgroupOf(id))
	}
	for ctrls, own := range e.own {
		if slices.Contains(strings.Split(ctrls, ","), ctrl) || ctrls == "name="+ctrl {
			return filepath.Join(hierarchyDir(ctrls), own, e.cgroupOf(id))
		}
	}
	e.t.Fatalf("no cgroup v1 hierarchy of %s in /proc/self/cgroup", ctrl)
	return ""
}

// procCgroup is container id's cgroup as /proc/PID/cgroup names it in
// the pids hierarchy (v1) or the v2 tree.
func (e *ociEnv) procCgroup(id string) string {
	key := ""
	if !cgroupV2() {
		key = "pids"
	}
	return path.Join(e.own[key], e.cgroupOf(id))
}

// ociRun is one finished ward-oci command.
type ociRun struct {
	code           int
	stdout, stderr string
}

// run runs ward-oci with the test's root; the container's output (create
// and run hand it their stdio) goes to out when not nil. Its streams are
// files, never pipes: a container's process keeps create's open.
func (e *ociEnv) run(out *os.File, args ...string) ociRun {
	e.t.Helper()
	cmd := exec.Command(e.bin, append([]string{"--root", e.root}, args...)...)
	dir := e.t.TempDir()
	so, err := os.Create(filepath.Join(dir, "stdout"))
	if err != nil {
		e.t.Fatal(err)
	}
	defer so.Close()
	se, err := os.Create(filepath.Join(dir, "stderr"))
	if err != nil {
		e.t.Fatal(err)
	}
	defer se.Close()
	cmd.Stdout, cmd.Stderr = so, se
	if out != nil {
		cmd.Stdout, cmd.Stderr = out, out
	}
	err = cmd.Run()
	bo, _ := os.ReadFile(so.Name())
	be, _ := os.ReadFile(se.Name())
	r := ociRun{stdout: string(bo), stderr: string(be)}
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		r.code = ee.ExitCode()
	} else if err != nil {
		e.t.Fatalf("ward-oci %v: %v", args, err)
	}
	return r
}

// must runs ward-oci and fails the test unless it exits 0.
func (e *ociEnv) must(out *os.File, args ...string) string {
	e.t.Helper()
	r := e.run(out, args...)
	if r.code != 0 {
		e.t.Fatalf("ward-oci %v: exit %d: %s%s", args, r.code, r.stdout, r.stderr)
	}
	return r.stdout
}

// status is the container's status as `state` says it, with its pid.
func (e *ociEnv) status(id string) (string, int) {
	e.t.Helper()
	var st struct {
		Status string `json:"status"`
		Pid    int    `json:"pid"`
	}
	if err := json.Unmarshal([]byte(e.must(nil, "state", id)), &st); err != nil {
		e.t.Fatalf("state %s: %v", id, err)
	}
	return st.Status, st.Pid
}

// create creates container id with a pid file and returns the pid in it,
// checking that the file holds the number and no newline, and that the
// process is in the container's cgroup already.
func (e *ociEnv) create(id string, out *os.File) int {
	e.t.Helper()
	pidFile := filepath.Join(e.t.TempDir(), "pid")
	e.must(out, "create", "--bundle", e.bundle, "--pid-file", pidFile, id)
	b, err := os.ReadFile(pidFile)
	if err != nil {
		e.t.Fatal(err)
	}
	pid, err := strconv.Atoi(string(b))
	if err != nil || pid <= 0 {
		e.t.Fatalf("pid file %q: want a number with no newline", b)
	}
	e.t.Cleanup(func() { _ = unix.Kill(pid, unix.SIGKILL); reapPid(pid) })
	cg, err := os.ReadFile(fmt.Sprintf("/proc/%d/cgroup", pid))
	if err != nil {
		e.t.Fatal(err)
	}
	if !strings.Contains(string(cg), ":"+e.procCgroup(id)+"\n") {
		e.t.Fatalf("right after create, /proc/%d/cgroup is\n%s\nwant the container's cgroup %s", pid, cg, e.procCgroup(id))
	}
	if ppid := parentOf(pid); ppid != os.Getpid() {
		e.t.Fatalf("the container's process %d has parent %d, want the subreaper (the test, %d)", pid, ppid, os.Getpid())
	}
	return pid
}

// reapPid waits for pid (a child of the test, by re-parenting) to end.
func reapPid(pid int) unix.WaitStatus {
	var ws unix.WaitStatus
	for {
		_, err := unix.Wait4(pid, &ws, 0, nil)
		if !errors.Is(err, unix.EINTR) {
			return ws
		}
	}
}

// ociCgroupRoots are the v2 tree, or every v1 hierarchy.
func ociCgroupRoots() []string {
	if _, err := os.Stat("/sys/fs/cgroup/cgroup.controllers"); err == nil {
		return []string{"/sys/fs/cgroup"}
	}
	var out []string
	ents, _ := os.ReadDir("/sys/fs/cgroup")
	for _, e := range ents {
		if e.IsDir() {
			out = append(out, filepath.Join("/sys/fs/cgroup", e.Name()))
		}
	}
	return out
}

// gone checks that nothing of container id is left: its state, its
// cgroups, its process.
func (e *ociEnv) gone(id string, pid int) {
	e.t.Helper()
	if _, err := os.Stat(filepath.Join(e.root, id)); !errors.Is(err, os.ErrNotExist) {
		e.t.Errorf("the state of %s is still there: %v", id, err)
	}
	for _, dir := range e.cgroupDirs(id) {
		if _, err := os.Stat(dir); !errors.Is(err, os.ErrNotExist) {
			e.t.Errorf("the cgroup %s is still there: %v", dir, err)
		}
	}
	if err := unix.Kill(pid, 0); !errors.Is(err, unix.ESRCH) {
		e.t.Errorf("the container's process %d is still there: %v", pid, err)
	}
	if r := e.run(nil, "state", id); r.code == 0 || !strings.Contains(r.stderr, "does not exist") {
		e.t.Errorf("state %s after delete: %+v, want \"does not exist\"", id, r)
	}
}

// TestOCICreateStartExitStatus: create sets up and holds the program, the
// pid file names the process in the container's cgroup, start releases
// it, and the subreaper reaps it with the program's own exit status;
// delete leaves nothing.
func TestOCICreateStartExitStatus(t *testing.T) {
	e := newOCIEnv(t)
	e.config("c1", "sh", "-c", "echo hello from $(hostname) as $(id -u); grep CapEff /proc/self/status; exit 7")
	out, err := os.Create(filepath.Join(t.TempDir(), "out"))
	if err != nil {
		t.Fatal(err)
	}
	defer out.Close()
	pid := e.create("c1", out)
	if st, spid := e.status("c1"); st != "created" || spid != pid {
		t.Fatalf("after create: %s, pid %d; want created, pid %d", st, spid, pid)
	}
	b, _ := os.ReadFile(out.Name())
	if len(b) != 0 {
		t.Fatalf("the program ran before start: %q", b)
	}
	e.must(nil, "start", "c1")
	ws := reapPid(pid)
	if !ws.Exited() || ws.ExitStatus() != 7 {
		t.Fatalf("the subreaper saw %v, want exit 7 (the program's)", ws)
	}
	// runc spec's capabilities: CAP_AUDIT_WRITE, CAP_KILL, CAP_NET_BIND_SERVICE.
	if b, _ = os.ReadFile(out.Name()); string(b) != "hello from runc as 0\nCapEff:\t0000000020000420\n" {
		t.Errorf("the program wrote %q", b)
	}
	if st, spid := e.status("c1"); st != "stopped" || spid != 0 {
		t.Errorf("after the end: %s, pid %d; want stopped, pid 0", st, spid)
	}
	e.must(nil, "delete", "c1")
	e.gone("c1", pid)
}

// TestOCIKillRunning: a running container is running in state, kill's
// signal reaches the program, and delete of the stopped one leaves
// nothing; delete of a running one needs --force.
func TestOCIKillRunning(t *testing.T) {
	e := newOCIEnv(t)
	e.config("c2", "sleep", "1000")
	pid := e.create("c2", nil)
	e.must(nil, "start", "c2")
	if st, _ := e.status("c2"); st != "running" {
		t.Fatalf("after start: %s, want running", st)
	}
	if r := e.run(nil, "delete", "c2"); r.code == 0 || !strings.Contains(r.stderr, "not stopped") {
		t.Errorf("delete of a running container: %+v, want refused", r)
	}
	e.must(nil, "kill", "c2", "KILL")
	ws := reapPid(pid)
	if !ws.Signaled() || ws.Signal() != syscall.SIGKILL {
		t.Fatalf("the subreaper saw %v, want SIGKILL", ws)
	}
	if st, _ := e.status("c2"); st != "stopped" {
		t.Errorf("after kill: %s, want stopped", st)
	}
	if r := e.run(nil, "kill", "c2"); r.code == 0 || !strings.Contains(r.stderr, "container not running") {
		t.Errorf("kill of a stopped container: %+v, want \"container not running\"", r)
	}
	e.must(nil, "delete", "c2")
	e.gone("c2", pid)
}

// TestOCIDeleteCreated: delete of a created container kills its process
// (the program never runs) and leaves nothing.
func TestOCIDeleteCreated(t *testing.T) {
	e := newOCIEnv(t)
	e.config("c3", "sh", "-c", "echo ran")
	out, err := os.Create(filepath.Join(t.TempDir(), "out"))
	if err != nil {
		t.Fatal(err)
	}
	defer out.Close()
	pid := e.create("c3", out)
	e.must(nil, "delete", "c3")
	if ws := reapPid(pid); !ws.Signaled() || ws.Signal() != syscall.SIGKILL {
		t.Errorf("the subreaper saw %v, want SIGKILL", ws)
	}
	if b, _ := os.ReadFile(out.Name()); len(b) != 0 {
		t.Errorf("the program of a container deleted before start ran: %q", b)
	}
	e.gone("c3", pid)
	if r := e.run(nil, "delete", "--force", "c3"); r.code != 0 {
		t.Errorf("delete --force of an unknown id: %+v, want success", r)
	}
}

// TestOCIRun: run is create and start in the foreground; it exits with
// the program's status and deletes the container.
func TestOCIRun(t *testing.T) {
	e := newOCIEnv(t)
	e.config("c4", "sh", "-c", "cat /proc/self/cgroup >/dev/null && echo ran; exit 3")
	out, err := os.Create(filepath.Join(t.TempDir(), "out"))
	if err != nil {
		t.Fatal(err)
	}
	defer out.Close()
	if r := e.run(out, "run", "--bundle", e.bundle, "c4"); r.code != 3 {
		b, _ := os.ReadFile(out.Name())
		t.Fatalf("run: exit %d, want 3 (the program's): %s", r.code, b)
	}
	if b, _ := os.ReadFile(out.Name()); string(b) != "ran\n" {
		t.Errorf("the program wrote %q", b)
	}
	if _, err := os.Stat(filepath.Join(e.root, "c4")); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("run left the container's state: %v", err)
	}
	for _, dir := range e.cgroupDirs("c4") {
		if _, err := os.Stat(dir); !errors.Is(err, os.ErrNotExist) {
			t.Errorf("run left the cgroup %s", dir)
		}
	}
}

// TestOCIPauseResumePs: ps lists the container's process by its host pid;
// pause freezes the cgroup (paused in state), resume thaws it (running).
func TestOCIPauseResumePs(t *testing.T) {
	e := newOCIEnv(t)
	e.config("c5", "sleep", "1000")
	pid := e.create("c5", nil)
	e.must(nil, "start", "c5")
	var pids []int
	if err := json.Unmarshal([]byte(e.must(nil, "ps", "--format", "json", "c5")), &pids); err != nil || len(pids) != 1 || pids[0] != pid {
		t.Errorf("ps --format json: %v (%v), want [%d]", pids, err, pid)
	}
	if r := e.run(nil, "resume", "c5"); r.code == 0 || !strings.Contains(r.stderr, "not paused") {
		t.Errorf("resume of a running container: %+v, want refused", r)
	}
	e.must(nil, "pause", "c5")
	if st, _ := e.status("c5"); st != "paused" {
		t.Errorf("after pause: %s, want paused", st)
	}
	e.must(nil, "resume", "c5")
	if st, _ := e.status("c5"); st != "running" {
		t.Errorf("after resume: %s, want running", st)
	}
	e.must(nil, "delete", "--force", "c5")
	if ws := reapPid(pid); !ws.Signaled() || ws.Signal() != syscall.SIGKILL {
		t.Errorf("the subreaper saw %v, want SIGKILL", ws)
	}
	e.gone("c5", pid)
}

// TestOCIExec: exec runs a command in the container's namespaces and
// cgroup and exits with its status; with --detach and --pid-file the
// command's process re-parents to the caller's subreaper.
func TestOCIExec(t *testing.T) {
	e := newOCIEnv(t)
	e.config("c6", "sleep", "1000")
	pid := e.create("c6", nil)
	e.must(nil, "start", "c6")
	out, err := os.Create(filepath.Join(t.TempDir(), "out"))
	if err != nil {
		t.Fatal(err)
	}
	defer out.Close()
	r := e.run(out, "exec", "c6", "sh", "-c", "echo in $(hostname) with $(cat /proc/1/comm); exit 5")
	if b, _ := os.ReadFile(out.Name()); r.code != 5 || string(b) != "in runc with sleep\n" {
		t.Errorf("exec: exit %d, output %q; want 5 and \"in runc with sleep\"", r.code, b)
	}
	proc := filepath.Join(t.TempDir(), "process.json")
	if err := os.WriteFile(proc, []byte(`{"args":["sleep","1000"],"cwd":"/","env":["PATH=/bin"],"user":{"uid":0,"gid":0}}`), 0o644); err != nil {
		t.Fatal(err)
	}
	pidFile := filepath.Join(t.TempDir(), "exec.pid")
	e.must(nil, "exec", "--process", proc, "--detach", "--pid-file", pidFile, "c6")
	b, err := os.ReadFile(pidFile)
	if err != nil {
		t.Fatal(err)
	}
	epid, err := strconv.Atoi(string(b))
	if err != nil {
		t.Fatalf("exec's pid file %q: want a number with no newline", b)
	}
	t.Cleanup(func() { _ = unix.Kill(epid, unix.SIGKILL); reapPid(epid) })
	if ppid := parentOf(epid); ppid != os.Getpid() {
		t.Errorf("the detached command %d has parent %d, want the subreaper (%d)", epid, ppid, os.Getpid())
	}
	for _, ns := range []string{"pid", "mnt", "net", "uts", "ipc", "user"} {
		a, _ := os.Readlink(fmt.Sprintf("/proc/%d/ns/%s", pid, ns))
		b, _ := os.Readlink(fmt.Sprintf("/proc/%d/ns/%s", epid, ns))
		if a == "" || a != b {
			t.Errorf("the command's %s namespace is %q, the container's %q", ns, b, a)
		}
	}
	cg, _ := os.ReadFile(fmt.Sprintf("/proc/%d/cgroup", epid))
	if !strings.Contains(string(cg), ":"+e.procCgroup("c6")+"\n") {
		t.Errorf("the command's cgroups are\n%s\nwant the container's %s", cg, e.procCgroup("c6"))
	}
	var pids []int
	if err := json.Unmarshal([]byte(e.must(nil, "ps", "--format", "json", "c6")), &pids); err != nil || len(pids) != 2 {
		t.Errorf("ps --format json: %v (%v), want the container's process and the command", pids, err)
	}
	// The subreaper reaps as the shim does, while delete waits: the
	// container's PID 1 ends only once the command's process is reaped.
	reaped := make(chan unix.WaitStatus, 1)
	go func() { reaped <- reapPid(epid) }()
	e.must(nil, "delete", "--force", "c6")
	if ws := reapPid(pid); !ws.Signaled() {
		t.Errorf("the subreaper saw %v for the container's process, want a signal", ws)
	}
	if ws := <-reaped; !ws.Signaled() {
		t.Errorf("the subreaper saw %v for the command, want a signal", ws)
	}
	e.gone("c6", pid)
}
