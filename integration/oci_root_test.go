package integration

import (
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
)

// The container's root as ward-oci builds it: the bundle's rootfs itself
// (docs/oci.md, "The lifecycle"), writable by the container's root through
// an idmapped mount, and what config.json adds to it.

// links adds busybox applets to the rootfs.
func (e *ociEnv) links(names ...string) {
	e.t.Helper()
	for _, n := range names {
		if err := os.Symlink("busybox", filepath.Join(e.bundle, "rootfs", "bin", n)); err != nil && !os.IsExist(err) {
			e.t.Fatal(err)
		}
	}
}

// runCode runs container id in the foreground (ward-oci run, after the
// global flags given) and returns its exit status and output (stdout and
// stderr, and ward-oci's).
func (e *ociEnv) runCode(id string, global ...string) (int, string) {
	e.t.Helper()
	out, err := os.Create(filepath.Join(e.t.TempDir(), "out"))
	if err != nil {
		e.t.Fatal(err)
	}
	defer out.Close()
	r := e.run(out, append(global, "run", "--bundle", e.bundle, id)...)
	b, _ := os.ReadFile(out.Name())
	return r.code, string(b) + r.stderr
}

// TestOCIRootfsIsWritable: with root.readonly false the container's root
// creates files at / and in the rootfs's directories; through the
// idmapped rootfs they are the container root's inside (uid 0) and, on
// disk, the rootfs's owner's (host root), as the files around them. /
// has linux.rootfsPropagation.
func TestOCIRootfsIsWritable(t *testing.T) {
	e := newOCIEnv(t)
	e.links("touch", "stat", "mkdir")
	e.config("r1", "sh", "-c", "touch /made && mkdir /etc/dir && touch /bin/made && stat -c '%u:%g' /made /etc/dir && "+
		"grep -E '^[0-9]+ [0-9]+ [^ ]+ [^ ]+ / ' /proc/self/mountinfo")
	e.edit(func(c map[string]any) {
		c["root"].(map[string]any)["readonly"] = false
		c["linux"].(map[string]any)["rootfsPropagation"] = "shared"
	})
	logFile := filepath.Join(t.TempDir(), "log")
	code, out := e.runCode("r1", "--debug", "--log", logFile)
	log, _ := os.ReadFile(logFile)
	if i := strings.Index(string(log), "the rootfs is not idmapped"); i >= 0 {
		// The documented fallback: the rootfs bound as it is, host
		// root's, which the container's root may not write.
		note, _, _ := strings.Cut(string(log[i:]), "\n")
		note = strings.TrimRight(note, `"`)
		if code == 0 || !strings.Contains(out, "Permission denied") {
			t.Errorf("the rootfs is not idmapped (%s), yet the container wrote /made: exit %d, %q", note, code, out)
		}
		t.Skipf("the kernel or the file system of %s refuses idmapped mounts (%s): the fallback checked, the idmapped rootfs not", e.bundle, note)
	}
	if code != 0 || !strings.HasPrefix(out, "0:0\n0:0\n") {
		t.Fatalf("exit %d, output %q; want 0 and the new files the container root's (0:0)", code, out)
	}
	if !strings.Contains(out, " shared:") {
		t.Errorf("/ is not shared (rootfsPropagation): %q", out)
	}
	rootfs := filepath.Join(e.bundle, "rootfs")
	for _, p := range []string{"made", "etc/dir", "bin/made"} {
		var st syscall.Stat_t
		if err := syscall.Lstat(filepath.Join(rootfs, p), &st); err != nil {
			t.Errorf("%s is not in the bundle's rootfs: %v", p, err)
		} else if st.Uid != 0 || st.Gid != 0 {
			t.Errorf("%s on disk is %d:%d, want the rootfs's owner's, 0:0", p, st.Uid, st.Gid)
		}
	}
}

// TestOCIRootfsReadonly: with root.readonly the container's root cannot
// write at / or in the rootfs's directories; its own mounts (/dev, a
// tmpfs) stay writable.
func TestOCIRootfsReadonly(t *testing.T) {
	e := newOCIEnv(t)
	e.links("touch")
	e.config("r2", "sh", "-c", "touch /made; touch /etc/made; touch /dev/made && echo dev ok")
	e.edit(func(c map[string]any) { c["root"].(map[string]any)["readonly"] = true })
	code, out := e.runCode("r2")
	if code != 0 || strings.Count(out, "Read-only file system") != 2 || !strings.Contains(out, "dev ok") {
		t.Errorf("exit %d, output %q; want two writes refused (read-only) and /dev writable", code, out)
	}
	for _, p := range []string{"made", "etc/made"} {
		if _, err := os.Lstat(filepath.Join(e.bundle, "rootfs", p)); !os.IsNotExist(err) {
			t.Errorf("%s was made in the read-only rootfs: %v", p, err)
		}
	}
}

// TestOCIDevices: a device of linux.devices is there, at its path, the
// host's node of its type and numbers (c 1:3, the null device), usable
// through the device cgroup; one no host node has is refused by create,
// naming it.
func TestOCIDevices(t *testing.T) {
	e := newOCIEnv(t)
	e.links("stat")
	e.config("d1", "sh", "-c", "stat -c '%F %t:%T' /dev/extra/null1 && echo hi >/dev/extra/null1 && echo wrote")
	e.edit(func(c map[string]any) {
		c["linux"].(map[string]any)["devices"] = []any{map[string]any{"path": "/dev/extra/null1", "type": "c", "major": 1, "minor": 3}}
	})
	if code, out := e.runCode("d1"); code != 0 || out != "character special file 1:3\nwrote\n" {
		t.Errorf("exit %d, output %q; want the null device at /dev/extra/null1, writable", code, out)
	}
	e.edit(func(c map[string]any) {
		c["linux"].(map[string]any)["devices"] = []any{map[string]any{"path": "/dev/none", "type": "c", "major": 4095, "minor": 1048575}}
	})
	if r := e.run(nil, "create", "--bundle", e.bundle, "d2"); r.code == 0 || !strings.Contains(r.stderr, "linux.devices[0]") ||
		!strings.Contains(r.stderr, "/dev/none") {
		t.Errorf("create with a device no host node has: %+v, want an error naming linux.devices[0] /dev/none", r)
	}
}

// TestOCICgroupMount: config.json's cgroup mount (runc spec's, read-only)
// shows the container's own cgroup: its cgroup.procs (v2's, or v1's
// pids hierarchy's) lists the container's process, PID 1 in its PID
// namespace; it is read-only.
func TestOCICgroupMount(t *testing.T) {
	e := newOCIEnv(t)
	e.links("touch")
	e.config("g1", "sh", "-c", "cat /sys/fs/cgroup/cgroup.procs 2>/dev/null || cat /sys/fs/cgroup/pids/cgroup.procs; "+
		"touch /sys/fs/cgroup/x 2>/dev/null || echo read-only")
	e.edit(func(c map[string]any) {
		c["mounts"] = append(c["mounts"].([]any), map[string]any{"destination": "/sys/fs/cgroup", "type": "cgroup", "source": "cgroup",
			"options": []any{"nosuid", "noexec", "nodev", "relatime", "ro"}})
	})
	code, out := e.runCode("g1")
	lines := strings.Fields(out)
	init := false
	for _, l := range lines {
		init = init || l == "1"
	}
	if code != 0 || !init || lines[len(lines)-1] != "read-only" {
		t.Errorf("exit %d, output %q; want the container's cgroup.procs (with 1) and read-only", code, out)
	}
}

// TestOCITmpCopyUp: a tmpfs with tmpcopyup starts with what the rootfs
// has at its destination; what the container writes there stays in the
// tmpfs, the rootfs unchanged.
func TestOCITmpCopyUp(t *testing.T) {
	e := newOCIEnv(t)
	marker := filepath.Join(e.bundle, "rootfs", "etc", "marker")
	if err := os.WriteFile(marker, []byte("from the image\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	e.config("u1", "sh", "-c", "cat /etc/marker && echo changed >/etc/marker && cat /etc/marker && grep -c ' /etc ' /proc/self/mountinfo")
	e.edit(func(c map[string]any) {
		c["mounts"] = append(c["mounts"].([]any), map[string]any{"destination": "/etc", "type": "tmpfs", "source": "tmpfs",
			"options": []any{"tmpcopyup", "mode=755"}})
	})
	if code, out := e.runCode("u1"); code != 0 || out != "from the image\nchanged\n1\n" {
		t.Errorf("exit %d, output %q; want the image's file, then the change, in a tmpfs at /etc", code, out)
	}
	if b, err := os.ReadFile(marker); err != nil || string(b) != "from the image\n" {
		t.Errorf("the rootfs's file is now %q (%v), want it unchanged", b, err)
	}
}
