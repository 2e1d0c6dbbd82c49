package integration

import (
	"os"
	"path/filepath"
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
