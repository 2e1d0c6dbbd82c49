package integration

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// podman (Debian's package, 4.3, with conmon) drives ward-oci as
// `podman --runtime bin/ward-oci`: an image imported here from a
// busybox-static rootfs (no registry), then run, exec, pause and unpause,
// stop and rm. Each runtime gets a podman store of its own (--root,
// --runroot, --tmpdir, vfs storage: nothing is mounted for the image) in a
// temp dir, its cgroups below a parent of the test's own (cgroupfs), no
// network, no events, and runs in a mount namespace of the test's own
// (engineNS: podman mounts each container's /dev/shm). These machines give
// root no CAP_SYS_RESOURCE, so podman's default rlimits (above root's hard
// ones) fail with runc too: the containers get nofile and nproc of 1024.

// podmanPending: what ward-oci refuses today in podman's config.json, and
// which branch sets it up. Remove an entry when its branch is merged.
var podmanPending = map[string]string{}

// podmanEnv is one test's podman.
type podmanEnv struct {
	t      *testing.T
	ns     *engineNS
	rt     engineRuntime
	dir    string
	cgroup string
	image  string
}

func newPodmanEnv(t *testing.T, rt engineRuntime) *podmanEnv {
	t.Helper()
	if _, err := os.Stat("/etc/containers/policy.json"); err != nil {
		t.Skip("no /etc/containers/policy.json (Debian's golang-github-containers-common, which podman depends on): podman import needs it")
	}
	// Short: podman refuses a runroot longer than 50 characters, and
	// t.TempDir's names hold the test's.
	dir, err := os.MkdirTemp("", "ward-podman-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	e := &podmanEnv{t: t, rt: rt, dir: dir, cgroup: engineCgroup(t, "podman", false), image: "localhost/ward-busybox:test"}
	rootfs := filepath.Join(dir, "rootfs")
	makeBusyboxRootfs(t, rootfs)
	tarball := filepath.Join(dir, "rootfs.tar")
	if out, err := exec.Command("tar", "-C", rootfs, "-cf", tarball, ".").CombinedOutput(); err != nil {
		t.Fatalf("tar: %v: %s", err, out)
	}
	for _, d := range []string{"tmp", "runroot", "root"} {
		if err := os.MkdirAll(filepath.Join(dir, d), 0o700); err != nil {
			t.Fatal(err)
		}
	}
	// A storage.conf of the test's own, so that the host's (an overlay
	// driver's options, another graph root) plays no part.
	conf := fmt.Sprintf("[storage]\ndriver = \"vfs\"\nrunroot = %q\ngraphroot = %q\n",
		filepath.Join(dir, "runroot"), filepath.Join(dir, "root"))
	if err := os.WriteFile(filepath.Join(dir, "storage.conf"), []byte(conf), 0o600); err != nil {
		t.Fatal(err)
	}
	e.ns = newEngineNS(t)
	// Whatever a failed step left: its containers, by podman (conmon and the
	// containers' processes also end with the namespace and the cgroups).
	t.Cleanup(func() { e.podman("rm", "--all", "--force", "--time", "0") })
	if r := e.podman("import", "--quiet", tarball, e.image); r.code != 0 {
		t.Fatalf("podman import: %v", r)
	}
	return e
}

// podman runs podman with this test's store and runtime.
func (e *podmanEnv) podman(args ...string) engineRun {
	e.t.Helper()
	cmd := e.ns.command("podman", append([]string{
		"--root", filepath.Join(e.dir, "root"), "--runroot", filepath.Join(e.dir, "runroot"),
		"--tmpdir", filepath.Join(e.dir, "tmp"), "--storage-driver", "vfs",
		"--cgroup-manager", "cgroupfs", "--events-backend", "none", "--runtime", e.rt.path,
	}, args...)...)
	cmd.Env = append(os.Environ(), "TMPDIR="+filepath.Join(e.dir, "tmp"),
		"CONTAINERS_STORAGE_CONF="+filepath.Join(e.dir, "storage.conf"))
	return runEngine(e.t, cmd)
}

// runFlags are podman run's flags for every container of the test.
func (e *podmanEnv) runFlags(name string) []string {
	return []string{"--name", name, "--network", "none", "--cgroup-parent", e.cgroup, "--log-driver", "k8s-file",
		"--ulimit", "nofile=1024:1024", "--ulimit", "nproc=1024:1024"}
}

// inspect is one field of the container, by a Go template.
func (e *podmanEnv) inspect(name, format string) string {
	e.t.Helper()
	r := e.podman("inspect", "--format", format, name)
	if r.code != 0 {
		e.t.Fatalf("podman inspect %s: %v", name, r)
	}
	return strings.TrimSpace(r.stdout)
}

// TestOCIPodmanRun: podman run --rm prints the program's output and
// leaves no container.
func TestOCIPodmanRun(t *testing.T) {
	needRoot(t)
	needTools(t, map[string]string{"podman": "podman", "conmon": "conmon", "tar": "tar"})
	before, err := readMountinfo()
	if err != nil {
		t.Fatal(err)
	}
	for _, rt := range engineRuntimes(t) {
		t.Run(rt.name, func(t *testing.T) {
			e := newPodmanEnv(t, rt)
			r := e.podman(append(append([]string{"run", "--rm"}, e.runFlags("echo")...), e.image, "/bin/echo", "hi")...)
			pendingRefusal(t, rt, r.stdout+r.stderr, podmanPending)
			if r.code != 0 || r.stdout != "hi\n" {
				t.Fatalf("podman run --rm ... /bin/echo hi: %v, want exit 0 and \"hi\\n\"", r)
			}
			if r := e.podman("ps", "--all", "--quiet"); strings.TrimSpace(r.stdout) != "" {
				t.Errorf("containers left after run --rm: %q", r.stdout)
			}
		})
	}
	assertNoWardMounts(t, before)
}

// TestOCIPodmanLifecycle: a detached container, exec into it (output and
// exit status), pause and unpause (where the host has a freezer), stop
// (SIGTERM, which the program traps: exit 7) and rm.
func TestOCIPodmanLifecycle(t *testing.T) {
	needRoot(t)
	needTools(t, map[string]string{"podman": "podman", "conmon": "conmon", "tar": "tar"})
	for _, rt := range engineRuntimes(t) {
		t.Run(rt.name, func(t *testing.T) {
			e := newPodmanEnv(t, rt)
			r := e.podman(append(append([]string{"run", "--detach"}, e.runFlags("loop")...), e.image,
				"/bin/sh", "-c", `trap "exit 7" TERM; echo ready; while :; do sleep 0.1; done`)...)
			pendingRefusal(t, rt, r.stdout+r.stderr, podmanPending)
			if r.code != 0 {
				t.Fatalf("podman run --detach: %v", r)
			}
			// The trap is set once it says ready.
			waitFor(t, "the container's \"ready\" in podman logs", 30*time.Second, func() bool {
				return strings.Contains(e.podman("logs", "loop").stdout, "ready")
			})
			if s := e.inspect("loop", "{{.State.Status}}"); s != "running" {
				t.Fatalf("state %q, want running", s)
			}

			r = e.podman("exec", "loop", "/bin/sh", "-c", "echo exec-hi; cat /proc/1/cmdline; exit 3")
			if r.code != 3 || !strings.HasPrefix(r.stdout, "exec-hi\n/bin/sh") {
				t.Errorf("podman exec ... exit 3: %v, want exit 3, \"exec-hi\" and PID 1 the container's /bin/sh", r)
			}

			if freezerAvailable() {
				if r := e.podman("pause", "loop"); r.code != 0 {
					t.Errorf("podman pause: %v", r)
				} else if s := e.inspect("loop", "{{.State.Status}}"); s != "paused" {
					t.Errorf("after pause: state %q, want paused", s)
				}
				if r := e.podman("unpause", "loop"); r.code != 0 {
					t.Errorf("podman unpause: %v", r)
				} else if s := e.inspect("loop", "{{.State.Status}}"); s != "running" {
					t.Errorf("after unpause: state %q, want running", s)
				}
			} else {
				t.Log("no freezer (cgroup v1 freezer or v2 cgroup.freeze): pause and unpause not tried")
			}

			if r := e.podman("stop", "--time", "20", "loop"); r.code != 0 || strings.Contains(r.stderr, "SIGKILL") {
				t.Errorf("podman stop: %v, want the program to end on SIGTERM", r)
			}
			if s := e.inspect("loop", "{{.State.Status}} {{.State.ExitCode}}"); s != "exited 7" {
				t.Errorf("after stop: %q, want \"exited 7\" (its TERM trap)", s)
			}
			if r := e.podman("rm", "loop"); r.code != 0 {
				t.Errorf("podman rm: %v", r)
			}
			if r := e.podman("ps", "--all", "--quiet"); strings.TrimSpace(r.stdout) != "" {
				t.Errorf("containers left after rm: %q", r.stdout)
			}
		})
	}
}

// freezerAvailable: pause needs the v1 freezer hierarchy or v2's
// cgroup.freeze (Linux 5.2).
func freezerAvailable() bool {
	if _, err := os.Stat("/sys/fs/cgroup/cgroup.controllers"); err == nil {
		_, err := os.Stat("/sys/fs/cgroup/init.scope/cgroup.freeze")
		if err != nil {
			// No init.scope in the VM: any child's file says the same.
			ents, _ := os.ReadDir("/sys/fs/cgroup")
			for _, d := range ents {
				if _, err := os.Stat(filepath.Join("/sys/fs/cgroup", d.Name(), "cgroup.freeze")); err == nil {
					return true
				}
			}
			return false
		}
		return true
	}
	_, err := os.Stat("/sys/fs/cgroup/freezer/freezer.state")
	if err != nil {
		_, err = os.Stat("/sys/fs/cgroup/freezer/cgroup.procs")
	}
	return err == nil
}
