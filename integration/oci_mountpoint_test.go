package integration

import (
	"os"
	"path/filepath"
	"syscall"
	"testing"
)

// TestOCIMountPointsMade: mount points config.json's mounts need and the
// rootfs lacks are made in the bundle's rootfs by create (as runc makes
// them): a directory, or an empty file for a bind of a file, and the
// directories above, host root's (the rootfs's owner's), 0755 and 0644,
// whether the rootfs is idmapped or not (the container's root may not
// write it then), and with root.readonly. A symlink in the rootfs is
// followed within it: one to nothing gets its target made; one to a host
// directory makes nothing there.
func TestOCIMountPointsMade(t *testing.T) {
	e := newOCIEnv(t)
	rootfs, host := filepath.Join(e.bundle, "rootfs"), t.TempDir()
	file := filepath.Join(t.TempDir(), "hosts")
	if err := os.WriteFile(file, []byte("from the host\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	for link, target := range map[string]string{"etc/resolv.conf": "../run/stub.conf", "etc/out": host} {
		if err := os.Symlink(target, filepath.Join(rootfs, link)); err != nil {
			t.Fatal(err)
		}
	}
	e.config("m1", "sh", "-c", "cat /etc/made/hosts /etc/resolv.conf && test -d /mnt/data/x && test -d /etc/out/t && echo ok")
	e.edit(func(c map[string]any) {
		bind := func(src, dst string) any {
			return map[string]any{"destination": dst, "type": "bind", "source": src, "options": []any{"rbind", "ro"}}
		}
		c["mounts"] = append(c["mounts"].([]any), bind(file, "/etc/made/hosts"), bind(file, "/etc/resolv.conf"),
			bind(t.TempDir(), "/mnt/data/x"), map[string]any{"destination": "/etc/out/t", "type": "tmpfs", "source": "tmpfs"})
	})
	if code, out := e.runCode("m1"); code != 0 || out != "from the host\nfrom the host\nok\n" {
		t.Fatalf("exit %d, output %q; want the binds at their new mount points", code, out)
	}
	in := host[1:] // the host directory's path, within the rootfs
	for p, want := range map[string]uint32{"etc/made": syscall.S_IFDIR | 0o755, "etc/made/hosts": syscall.S_IFREG | 0o644,
		"run/stub.conf": syscall.S_IFREG | 0o644, "mnt": syscall.S_IFDIR | 0o755, "mnt/data/x": syscall.S_IFDIR | 0o755,
		in + "/t": syscall.S_IFDIR | 0o755} {
		var st syscall.Stat_t
		if err := syscall.Lstat(filepath.Join(rootfs, p), &st); err != nil {
			t.Errorf("%s was not made in the rootfs: %v", p, err)
		} else if st.Mode != want || st.Uid != 0 || st.Gid != 0 || (st.Mode&syscall.S_IFREG != 0 && st.Size != 0) {
			t.Errorf("%s is %o %d:%d (%d bytes), want %o 0:0, empty", p, st.Mode, st.Uid, st.Gid, st.Size, want)
		}
	}
	if ents, _ := os.ReadDir(host); len(ents) != 0 {
		t.Errorf("made in the host's %s through the rootfs's symlink: %v", host, ents)
	}
}
