package oci

import (
	"errors"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"

	"golang.org/x/sys/unix"
)

// TestMakeMountPoint: missing mount points are made in the rootfs, a
// directory or an empty file, with runc's modes and the given owner; what
// is there is left; a symlink out of the rootfs (absolute or "..")
// resolves within it, never outside.
func TestMakeMountPoint(t *testing.T) {
	outside := t.TempDir()
	for _, tc := range []struct {
		name  string
		setup map[string]string // path in the rootfs: "dir", "file", or "->target"
		dst   string
		dir   bool
		want  map[string]string // path in the rootfs: "dir" or "file" (made: 0755, 0644)
		err   error
	}{
		{name: "file and its directory", dst: "/etc/hosts", want: map[string]string{"etc": "dir", "etc/hosts": "file"}},
		{name: "directories", dst: "/a/b/c", dir: true, want: map[string]string{"a": "dir", "a/b": "dir", "a/b/c": "dir"}},
		{name: "there already", setup: map[string]string{"etc": "dir", "etc/hosts": "file"}, dst: "/etc/hosts"},
		{name: "absolute symlink out", setup: map[string]string{"out": "->" + outside}, dst: "/out/x",
			want: map[string]string{outside[1:] + "/x": "file"}},
		{name: "dotdot symlink out", setup: map[string]string{"d": "dir", "d/up": "->../../../../../../.." + outside}, dst: "/d/up/y", dir: true,
			want: map[string]string{outside[1:] + "/y": "dir"}},
		{name: "symlink to nothing", setup: map[string]string{"etc": "dir", "etc/resolv.conf": "->../run/resolve/stub.conf"}, dst: "/etc/resolv.conf",
			want: map[string]string{"run": "dir", "run/resolve": "dir", "run/resolve/stub.conf": "file"}},
		{name: "symlink loop", setup: map[string]string{"a": "->b", "b": "->a"}, dst: "/a/x", err: unix.ELOOP},
		{name: "a file on the way", setup: map[string]string{"f": "file"}, dst: "/f/x", err: unix.ENOTDIR},
	} {
		t.Run(tc.name, func(t *testing.T) {
			root := t.TempDir()
			paths := slices.Sorted(maps.Keys(tc.setup)) // parents first
			for _, p := range paths {
				what := tc.setup[p]
				var err error
				switch full := filepath.Join(root, p); {
				case what == "dir":
					err = os.MkdirAll(full, 0o700)
				case what == "file":
					err = os.WriteFile(full, nil, 0o600)
				default:
					err = os.Symlink(strings.TrimPrefix(what, "->"), full)
				}
				if err != nil {
					t.Fatal(err)
				}
			}
			fd, err := unix.Open(root, unix.O_PATH|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
			if err != nil {
				t.Fatal(err)
			}
			defer unix.Close(fd)
			uid, gid := os.Getuid(), os.Getgid()
			if uid == 0 {
				uid, gid = 1234, 5678
			}
			err = (&mountPoint{root: fd, uid: uid, gid: gid}).make(tc.dst, tc.dir)
			if tc.err != nil {
				if !errors.Is(err, tc.err) {
					t.Fatalf("make(%s) = %v, want %v", tc.dst, err, tc.err)
				}
				return
			}
			if err != nil {
				t.Fatalf("make(%s): %v", tc.dst, err)
			}
			for p, what := range tc.want {
				var st syscall.Stat_t
				if err := syscall.Lstat(filepath.Join(root, p), &st); err != nil {
					t.Errorf("%s not made: %v", p, err)
					continue
				}
				mode, kind := uint32(0o644), uint32(syscall.S_IFREG)
				if what == "dir" {
					mode, kind = 0o755, syscall.S_IFDIR
				}
				if st.Mode != kind|mode || int(st.Uid) != uid || int(st.Gid) != gid {
					t.Errorf("%s is %o %d:%d, want %o %d:%d", p, st.Mode, st.Uid, st.Gid, kind|mode, uid, gid)
				}
			}
			for p := range tc.setup {
				var st syscall.Stat_t
				if tc.setup[p] == "file" && (syscall.Lstat(filepath.Join(root, p), &st) != nil || st.Mode&0o777 != 0o600) {
					t.Errorf("%s, there already, was changed (mode %o)", p, st.Mode)
				}
			}
			if ents, _ := os.ReadDir(outside); len(ents) != 0 {
				t.Errorf("made outside the rootfs: %v", ents)
			}
		})
	}
}

// TestMakeMountPoints: config.json's mounts get their mount points in the
// rootfs (a file for a bind of a file), except where an earlier mount
// covers them, by name (/dev/pts in a /dev tmpfs) or through a symlink
// (/var/run/x, /var/run being a link to /run, in a /run tmpfs).
func TestMakeMountPoints(t *testing.T) {
	root, src := t.TempDir(), t.TempDir()
	file := filepath.Join(src, "hosts")
	if err := os.WriteFile(file, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Mkdir(filepath.Join(root, "var"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink("/run", filepath.Join(root, "var/run")); err != nil {
		t.Fatal(err)
	}
	c := &Container{Root: root, Mounts: []Mount{
		{Destination: "/proc", Type: "proc"},
		{Destination: "/dev", Type: "tmpfs"},
		{Destination: "/dev/pts", Type: "devpts"},
		{Destination: "/etc/hosts", Bind: true, Source: file},
		{Destination: "/data", Bind: true, Source: src},
		{Destination: "/run", Type: "tmpfs"},
		{Destination: "/var/run/x", Type: "tmpfs"},
	}}
	if err := c.MakeMountPoints(); err != nil {
		t.Fatal(err)
	}
	for p, dir := range map[string]bool{"proc": true, "dev": true, "etc": true, "etc/hosts": false, "data": true, "run": true} {
		if st, err := os.Lstat(filepath.Join(root, p)); err != nil || st.IsDir() != dir {
			t.Errorf("%s: %v (a directory: %v, want %v)", p, err, err == nil && st.IsDir(), dir)
		}
	}
	if _, err := os.Lstat(filepath.Join(root, "dev/pts")); !os.IsNotExist(err) {
		t.Errorf("dev/pts, in the /dev tmpfs, was made in the rootfs: %v", err)
	}
	if _, err := os.Lstat(filepath.Join(root, "run/x")); !os.IsNotExist(err) {
		t.Errorf("run/x (/var/run/x), in the /run tmpfs, was made in the rootfs: %v", err)
	}
}
