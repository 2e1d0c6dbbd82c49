package integration

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"golang.org/x/sys/unix"
)

// TestOCIDevicesMade: devices of linux.devices that no host node has (c
// 10:666, b 8:666) and a fifo are in the container at their paths with
// their type, numbers, fileMode and uid/gid. create makes each node on
// the host in the container's state directory (0700), owned by the host
// ids the container's uids map to, and binds it in the container's mount
// namespace; delete removes them with the state.
func TestOCIDevicesMade(t *testing.T) {
	e := newOCIEnv(t)
	e.links("stat")
	e.config("dm", "sh", "-c", "stat -c '%n %F %t:%T %a %u:%g' /dev/test1 /dev/test2 /dev/test3")
	e.edit(func(c map[string]any) {
		c["linux"].(map[string]any)["devices"] = []any{
			map[string]any{"path": "/dev/test1", "type": "c", "major": 10, "minor": 666, "fileMode": 0o640, "uid": 0, "gid": 0},
			map[string]any{"path": "/dev/test2", "type": "b", "major": 8, "minor": 666, "fileMode": 0o604, "uid": 1, "gid": 2},
			// A fifo's numbers are ignored, as runc ignores them.
			map[string]any{"path": "/dev/test3", "type": "p", "major": 8, "minor": 666, "fileMode": 0o600, "uid": 3, "gid": 3},
		}
	})
	out, err := os.Create(filepath.Join(t.TempDir(), "out"))
	if err != nil {
		t.Fatal(err)
	}
	defer out.Close()
	pid := e.create("dm", out)
	dir := filepath.Join(e.root, "dm", "dev")
	if fi, err := os.Stat(dir); err != nil || fi.Mode().Perm() != 0o700 {
		t.Errorf("%s: %v, %v; want a directory 0700", dir, fi, err)
	}
	for i, want := range []struct{ mode, uid, gid uint32 }{
		{unix.S_IFCHR | 0o640, 1000000000, 1000000000},
		{unix.S_IFBLK | 0o604, 1000000001, 1000000002},
		{unix.S_IFIFO | 0o600, 1000000003, 1000000003},
	} {
		var st unix.Stat_t
		p := filepath.Join(dir, []string{"0", "1", "2"}[i])
		if err := unix.Stat(p, &st); err != nil || st.Mode != want.mode || st.Uid != want.uid || st.Gid != want.gid {
			t.Errorf("%s: %+v, %v; want mode %#o owned by %d:%d", p, st, err, want.mode, want.uid, want.gid)
		}
	}
	e.must(nil, "start", "dm")
	if ws := reapPid(pid); ws.ExitStatus() != 0 {
		t.Errorf("the program exited %v", ws)
	}
	b, _ := os.ReadFile(out.Name())
	want := "/dev/test1 character special file a:29a 640 0:0\n" +
		"/dev/test2 block special file 8:29a 604 1:2\n" +
		"/dev/test3 fifo 0:0 600 3:3\n"
	if string(b) != want {
		t.Errorf("in the container:\n%s\nwant\n%s", b, want)
	}
	e.must(nil, "delete", "dm")
	e.gone("dm", pid)
}

// TestOCIKernelMemory: linux.resources.memory.kernelTCP is written to
// cgroup v1's memory.kmem.tcp.limit_in_bytes, and refused by name on v2
// (no such file); memory.kernel, which the kernel no longer enforces, is
// ignored with a warning naming it, as runtime-spec lets a runtime.
func TestOCIKernelMemory(t *testing.T) {
	e := newOCIEnv(t)
	_, err := os.Stat("/sys/fs/cgroup/cgroup.controllers")
	v2 := err == nil
	for _, c := range []struct {
		id  string
		mem map[string]any
	}{
		{"km1", map[string]any{"kernel": 1 << 26, "kernelTCP": 1 << 26}},
		{"km2", map[string]any{"kernel": 1 << 26}},
	} {
		e.config(c.id, "true")
		e.edit(func(cfg map[string]any) {
			cfg["linux"].(map[string]any)["resources"].(map[string]any)["memory"] = c.mem
		})
		r := e.run(nil, "create", "--bundle", e.bundle, c.id)
		if _, tcp := c.mem["kernelTCP"]; tcp && v2 {
			if r.code == 0 || !strings.Contains(r.stderr, "linux.resources.memory.kernelTCP") {
				t.Errorf("%s on cgroup v2: %+v, want an error naming linux.resources.memory.kernelTCP", c.id, r)
			}
			continue
		}
		if r.code != 0 {
			t.Fatalf("%s: create: %+v", c.id, r)
		}
		_, pid := e.status(c.id)
		t.Cleanup(func() { _ = unix.Kill(pid, unix.SIGKILL); reapPid(pid) })
		if !strings.Contains(r.stderr, "linux.resources.memory.kernel: ignored") {
			t.Errorf("%s: stderr %q, want a warning that memory.kernel is ignored", c.id, r.stderr)
		}
		if _, tcp := c.mem["kernelTCP"]; tcp {
			p := filepath.Join(e.cgroupDir(c.id, "memory"), "memory.kmem.tcp.limit_in_bytes")
			if b, err := os.ReadFile(p); err != nil || strings.TrimSpace(string(b)) != "67108864" {
				t.Errorf("%s: %q, %v; want 67108864", p, b, err)
			}
		}
		e.must(nil, "delete", c.id)
		reapPid(pid)
		e.gone(c.id, pid)
	}
}

// TestOCISeccompRuleOfTheDefaultAction: a seccomp rule whose action is
// the default's (a conditional one too, as runtime-tools' profile has
// with its default set to allow) is skipped, as runc skips it, instead of
// failing create; the profile's other rules hold.
func TestOCISeccompRuleOfTheDefaultAction(t *testing.T) {
	e := newOCIEnv(t)
	e.links("mkdir")
	e.config("sc", "sh", "-c", "mkdir /tmp/x 2>/dev/null || echo denied")
	e.edit(func(c map[string]any) {
		c["linux"].(map[string]any)["seccomp"] = map[string]any{
			"defaultAction": "SCMP_ACT_ALLOW",
			"syscalls": []any{
				map[string]any{"names": []any{"personality"}, "action": "SCMP_ACT_ALLOW",
					"args": []any{map[string]any{"index": 0, "value": 0, "op": "SCMP_CMP_EQ"}}},
				map[string]any{"names": []any{"mkdir", "mkdirat"}, "action": "SCMP_ACT_ERRNO"},
			},
		}
	})
	if code, out := e.runCode("sc"); code != 0 || out != "denied\n" {
		t.Errorf("exit %d, output %q; want mkdir denied by the profile", code, out)
	}
}

// TestOCIPidsLimit: linux.resources.pids.limit is the container's
// pids.max once create returns (the validation suite's own check of it
// compares two pointers and fails for every runtime).
func TestOCIPidsLimit(t *testing.T) {
	e := newOCIEnv(t)
	e.config("pl", "true")
	e.edit(func(c map[string]any) {
		c["linux"].(map[string]any)["resources"].(map[string]any)["pids"] = map[string]any{"limit": 1000}
	})
	pid := e.create("pl", nil)
	if got := e.cgroupFile("pl", "pids", "pids.max", "pids.max"); got != "1000" {
		t.Errorf("pids.max %s, want 1000", got)
	}
	e.must(nil, "delete", "pl")
	reapPid(pid)
	e.gone("pl", pid)
}
