package integration

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// Helpers of the tests that drive ward-oci through a container engine
// (containerd, podman) as its users would, and runc through the same steps
// first: the engine's own checks of the harness.

// engineRuntime is one OCI runtime an engine is pointed at.
type engineRuntime struct {
	name string // runc, ward-oci
	path string // absolute
}

// engineRuntimes are runc (when installed) and bin/ward-oci, in that order:
// runc first, so a failure of the harness shows there before ward-oci's.
func engineRuntimes(t *testing.T) []engineRuntime {
	t.Helper()
	var rts []engineRuntime
	if p, err := exec.LookPath("runc"); err == nil {
		abs, _ := filepath.Abs(p)
		rts = append(rts, engineRuntime{"runc", abs})
	}
	bin := filepath.Join(filepath.Dir(wardBin), "ward-oci")
	if _, err := os.Stat(bin); err != nil {
		t.Fatalf("bin/ward-oci missing: run make build (%v)", err)
	}
	return append(rts, engineRuntime{"ward-oci", bin})
}

// needTools skips the test unless every tool is on PATH, naming the missing
// one and the Debian package that has it.
func needTools(t *testing.T, tools map[string]string) {
	t.Helper()
	for tool, pkg := range tools {
		if _, err := exec.LookPath(tool); err != nil {
			t.Skipf("%s is not installed (Debian package %s; make deps installs it)", tool, pkg)
		}
	}
}

// pendingRefusal skips the test when ward-oci refused the config for one of
// the fields in pending (a substring of its error, for example
// "linux.sysctl"), naming the branch that implements it. Remove an entry
// once its branch is merged: the test then runs in full.
func pendingRefusal(t *testing.T, rt engineRuntime, out string, pending map[string]string) {
	t.Helper()
	if rt.name != "ward-oci" || !strings.Contains(out, "not supported by ward") {
		return
	}
	for field, why := range pending {
		if strings.Contains(out, field) {
			t.Skipf("ward-oci refuses %s, %s: %s", field, why, firstLine(out, "not supported by ward"))
		}
	}
}

// firstLine is the first line of out that contains s (or out's first line).
func firstLine(out, s string) string {
	for _, l := range strings.Split(out, "\n") {
		if strings.Contains(l, s) {
			return strings.TrimSpace(l)
		}
	}
	l, _, _ := strings.Cut(out, "\n")
	return l
}

// makeBusyboxRootfs fills dir with a root file system of busybox-static and
// its links; it skips the test when busybox-static is not installed.
func makeBusyboxRootfs(t *testing.T, dir string) {
	t.Helper()
	b, err := os.ReadFile("/bin/busybox")
	if err != nil {
		t.Skip("busybox-static is not installed (/bin/busybox): it makes the container's rootfs")
	}
	for _, d := range []string{"bin", "proc", "dev", "sys", "tmp", "etc", "run"} {
		if err := os.MkdirAll(filepath.Join(dir, d), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.WriteFile(filepath.Join(dir, "bin", "busybox"), b, 0o755); err != nil {
		t.Fatal(err)
	}
	for _, c := range []string{"sh", "echo", "sleep", "cat", "tty", "true", "grep"} {
		if err := os.Symlink("busybox", filepath.Join(dir, "bin", c)); err != nil {
			t.Fatal(err)
		}
	}
}

// engineNS is a mount namespace of the test's own, held by a sleeping
// process, with tmpfs on /run and /var/lib: the engine and everything it
// starts (shims, conmon) run in it, so what they mount (podman's /dev/shm
// tmpfs, containerd's and podman's state under /run and /var/lib, the
// shims' sockets in /run/containerd/s) is never in the host's mount
// namespace and goes with it.
type engineNS struct {
	t      *testing.T
	holder *exec.Cmd
	mntns  string // readlink /proc/PID/ns/mnt of the holder
}

func newEngineNS(t *testing.T) *engineNS {
	t.Helper()
	needTools(t, map[string]string{"unshare": "util-linux", "nsenter": "util-linux"})
	script := `mount -t tmpfs -o mode=0755 tmpfs /run || exit 1
if [ -d /var/lib ]; then mount -t tmpfs -o mode=0755 tmpfs /var/lib || exit 1; fi
echo ready
exec sleep 1000000`
	cmd := exec.Command("unshare", "--mount", "--propagation", "private", "--", "/bin/sh", "-c", script)
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		t.Fatalf("unshare --mount: %v", err)
	}
	ns := &engineNS{t: t, holder: cmd}
	t.Cleanup(ns.close)
	line, _ := bufio.NewReader(out).ReadString('\n')
	if strings.TrimSpace(line) != "ready" {
		t.Fatalf("the mount namespace's holder did not start (said %q)", line)
	}
	if ns.mntns, err = os.Readlink(fmt.Sprintf("/proc/%d/ns/mnt", cmd.Process.Pid)); err != nil {
		t.Fatal(err)
	}
	return ns
}

// command runs name in the namespace (nsenter, which execs it: the pid is
// the command's own).
func (ns *engineNS) command(name string, args ...string) *exec.Cmd {
	return exec.Command("nsenter", append([]string{"--target", strconv.Itoa(ns.holder.Process.Pid), "--mount", "--", name}, args...)...)
}

// pids are the processes in the namespace (the holder, the engine, its
// shims or conmon), by their mount namespace.
func (ns *engineNS) pids() []int {
	ents, _ := os.ReadDir("/proc")
	var pids []int
	for _, e := range ents {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		if l, err := os.Readlink(fmt.Sprintf("/proc/%d/ns/mnt", pid)); err == nil && l == ns.mntns {
			pids = append(pids, pid)
		}
	}
	return pids
}

// close ends every process of the namespace by pid (the holder last is
// not needed: the namespace goes with its last process) and reaps the
// holder.
func (ns *engineNS) close() {
	for i := 0; i < 100; i++ {
		pids := ns.pids()
		if len(pids) == 0 {
			break
		}
		for _, pid := range pids {
			_ = unix.Kill(pid, unix.SIGKILL)
		}
		if i == 0 {
			_ = ns.holder.Wait()
		}
		time.Sleep(50 * time.Millisecond)
	}
	if left := ns.pids(); len(left) > 0 {
		ns.t.Errorf("processes of the engine's mount namespace still there: %s", describePids(left))
	}
}

// engineRun is one finished command.
type engineRun struct {
	code   int
	stdout string
	stderr string
}

func (r engineRun) String() string {
	return fmt.Sprintf("exit %d, stdout %q, stderr %q", r.code, r.stdout, r.stderr)
}

// runEngine runs cmd with files for its output (never pipes: a container
// may keep them open) and a safety timeout.
func runEngine(t *testing.T, cmd *exec.Cmd) engineRun {
	t.Helper()
	dir := t.TempDir()
	so, err := os.Create(filepath.Join(dir, "stdout"))
	if err != nil {
		t.Fatal(err)
	}
	defer so.Close()
	se, err := os.Create(filepath.Join(dir, "stderr"))
	if err != nil {
		t.Fatal(err)
	}
	defer se.Close()
	if cmd.Stdout == nil {
		cmd.Stdout = so
	}
	cmd.Stderr = se
	if err := cmd.Start(); err != nil {
		t.Fatalf("%v: %v", cmd.Args, err)
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	select {
	case err = <-done:
	case <-time.After(2 * safetyTimeout):
		_ = cmd.Process.Kill()
		err = <-done
		t.Errorf("%v: still running after %v: killed", cmd.Args, 2*safetyTimeout)
	}
	bo, _ := os.ReadFile(so.Name())
	be, _ := os.ReadFile(se.Name())
	r := engineRun{stdout: string(bo), stderr: string(be)}
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		r.code = ee.ExitCode()
	} else if err != nil {
		t.Fatalf("%v: %v", cmd.Args, err)
	}
	return r
}

// engineCgroup is a cgroup parent of the test's own for the containers
// (and conmon): relative, it is below this process's own cgroup in each
// hierarchy, where the runtime resolves a relative cgroupsPath (ctr's
// --cgroup); else absolute, in every v1 hierarchy or the v2 tree (podman
// makes its --cgroup-parent absolute against PID 1's cgroup). At cleanup
// every process left in it is killed by pid and the tree is removed,
// deepest first.
func engineCgroup(t *testing.T, what string, relative bool) string {
	t.Helper()
	cg := fmt.Sprintf("ward-%s-test-%d-%d", what, os.Getpid(), rand.IntN(1<<30))
	if !relative {
		cg = "/" + cg
	}
	dirs := engineCgroupDirs(t, cg)
	t.Cleanup(func() {
		for i := 0; i < 100; i++ {
			left := false
			for _, d := range dirs {
				if killAndRemoveCgroups(d) {
					left = true
				}
			}
			if !left {
				return
			}
			time.Sleep(50 * time.Millisecond)
		}
		for _, d := range dirs {
			if _, err := os.Stat(d); err == nil {
				t.Errorf("cgroup %s could not be removed", d)
			}
		}
	})
	return cg
}

// engineCgroupDirs are cgroup cg's directories: an absolute one at each
// hierarchy's root, a relative one below this process's own cgroup there.
func engineCgroupDirs(t *testing.T, cg string) []string {
	if strings.HasPrefix(cg, "/") {
		var out []string
		for _, root := range ociCgroupRoots() {
			out = append(out, filepath.Join(root, cg))
		}
		return out
	}
	own := procCgroups(t, "self")
	out := (&ociEnv{t: t, cgroup: cg, own: own}).cgroupDirs("")
	if _, err := os.Stat("/sys/fs/cgroup/unified/cgroup.procs"); err == nil && !cgroupV2() {
		// runc on the hybrid layout makes it in the v2 tree too.
		out = append(out, filepath.Join("/sys/fs/cgroup/unified", own[""], cg))
	}
	return out
}

// killAndRemoveCgroups kills the processes of dir's tree and removes its
// cgroups deepest first; it says whether something is left.
func killAndRemoveCgroups(dir string) bool {
	if _, err := os.Stat(dir); err != nil {
		return false
	}
	var dirs []string
	_ = filepath.WalkDir(dir, func(p string, d os.DirEntry, err error) error {
		if err == nil && d.IsDir() {
			dirs = append(dirs, p)
		}
		return nil
	})
	for i := len(dirs) - 1; i >= 0; i-- {
		b, _ := os.ReadFile(filepath.Join(dirs[i], "cgroup.procs"))
		for _, f := range strings.Fields(string(b)) {
			if pid, err := strconv.Atoi(f); err == nil && pid > 1 {
				_ = unix.Kill(pid, unix.SIGKILL)
			}
		}
		// A frozen cgroup's processes die only once thawed.
		_ = os.WriteFile(filepath.Join(dirs[i], "cgroup.freeze"), []byte("0"), 0)
		_ = os.WriteFile(filepath.Join(dirs[i], "freezer.state"), []byte("THAWED"), 0)
		_ = os.Remove(dirs[i])
	}
	_, err := os.Stat(dir)
	return err == nil
}

// ptyPair opens a pseudo-terminal: the master, and the slave's path.
func ptyPair(t *testing.T) (*os.File, string) {
	t.Helper()
	m, err := os.OpenFile("/dev/ptmx", os.O_RDWR|unix.O_NOCTTY|unix.O_CLOEXEC, 0)
	if err != nil {
		t.Fatalf("/dev/ptmx: %v", err)
	}
	t.Cleanup(func() { m.Close() })
	if err := unix.IoctlSetPointerInt(int(m.Fd()), unix.TIOCSPTLCK, 0); err != nil {
		t.Fatalf("unlockpt: %v", err)
	}
	n, err := unix.IoctlGetInt(int(m.Fd()), unix.TIOCGPTN)
	if err != nil {
		t.Fatalf("ptsname: %v", err)
	}
	return m, fmt.Sprintf("/dev/pts/%d", n)
}

// runOnTerminal runs cmd with a new pty as its controlling terminal and
// stdio, and returns what it wrote there and its exit status.
func runOnTerminal(t *testing.T, cmd *exec.Cmd) (string, int) {
	t.Helper()
	m, slave := ptyPair(t)
	s, err := os.OpenFile(slave, os.O_RDWR|unix.O_NOCTTY, 0)
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stdin, cmd.Stdout, cmd.Stderr = s, s, s
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true, Setctty: true, Ctty: 0}
	if err := cmd.Start(); err != nil {
		s.Close()
		t.Fatalf("%v: %v", cmd.Args, err)
	}
	s.Close()
	var buf bytes.Buffer
	read := make(chan struct{})
	go func() {
		// EIO once the last slave descriptor is closed.
		b := make([]byte, 4096)
		for {
			n, err := m.Read(b)
			buf.Write(b[:n])
			if err != nil {
				break
			}
		}
		close(read)
	}()
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	select {
	case err = <-done:
	case <-time.After(2 * safetyTimeout):
		_ = cmd.Process.Kill()
		err = <-done
		t.Errorf("%v: still running after %v: killed", cmd.Args, 2*safetyTimeout)
	}
	select {
	case <-read:
	case <-time.After(pipeGrace):
		// Something still holds the slave: stop reading.
		m.Close()
		<-read
	}
	code := 0
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		code = ee.ExitCode()
	} else if err != nil {
		t.Fatalf("%v: %v", cmd.Args, err)
	}
	return buf.String(), code
}

// waitFor polls cond until it holds, failing the test after within (a
// bound on a hang, not a timed assertion).
func waitFor(t *testing.T, what string, within time.Duration, cond func() bool) {
	t.Helper()
	for end := time.Now().Add(within); ; {
		if cond() {
			return
		}
		if time.Now().After(end) {
			t.Fatalf("%s: not within %v", what, within)
		}
		time.Sleep(100 * time.Millisecond)
	}
}
