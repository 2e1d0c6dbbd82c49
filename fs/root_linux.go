package fs

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"

	"golang.org/x/sys/unix"
)

// OldRoot is where the host's root stays reachable while the plan runs.
const OldRoot = "/.oldroot"

// Error is a failed file system operation inside the sandbox: what was
// done, on which path (inside), and the errno.
type Error struct {
	Op   string
	Path string
	Err  error
}

func (e *Error) Error() string { return fmt.Sprintf("%s %s: %v", e.Op, e.Path, e.Err) }
func (e *Error) Unwrap() error { return e.Err }

// Errno returns the errno behind err, or 0.
func Errno(err error) syscall.Errno {
	var en syscall.Errno
	if errors.As(err, &en) {
		return en
	}
	return 0
}

func fail(op, path string, err error) error {
	var fe *Error
	if errors.As(err, &fe) {
		return err
	}
	return &Error{Op: op, Path: path, Err: err}
}

// MakeMountsPrivate stops mount events from propagating between the new
// mount namespace and the host's: nothing done after it can reach the host.
// Runs in the init, first, before any other mount.
func MakeMountsPrivate() error {
	if err := unix.Mount("", "/", "", unix.MS_REC|unix.MS_PRIVATE, ""); err != nil {
		return fail("make / rprivate", "/", err)
	}
	return nil
}

// EnterNewRoot mounts an empty tmpfs and pivots into it, keeping the host's
// root at OldRoot. The tmpfs is mounted on /tmp of the (private) mount
// namespace only to have a mount point; after pivot_root it is "/", and
// OldRoot/tmp shows the host's /tmp again, so any host path can still be a
// bind source. Runs in the init.
func EnterNewRoot(size int64) error {
	if size <= 0 {
		size = 1 << 20 // the plan's synthetic files and mount points
	}
	// nosuid/nodev: nothing on the root itself is a device or setuid.
	if err := unix.Mount("ward-root", "/tmp", "tmpfs", unix.MS_NOSUID|unix.MS_NODEV, fmt.Sprintf("mode=0755,size=%d,nr_inodes=65536", size)); err != nil {
		return fail("mount tmpfs root", "/tmp", err)
	}
	if err := os.Mkdir("/tmp"+OldRoot, 0o700); err != nil {
		return fail("mkdir", "/tmp"+OldRoot, err)
	}
	// pivot_root(new, put_old): the tmpfs becomes "/", the host's root moves
	// to OldRoot. Both must be mount points and not shared (made private).
	if err := unix.PivotRoot("/tmp", "/tmp"+OldRoot); err != nil {
		return fail("pivot_root", "/tmp", err)
	}
	// The cwd still points into the host's tree: leave it.
	if err := unix.Chdir("/"); err != nil {
		return fail("chdir", "/", err)
	}
	return nil
}

// Build runs the plan's operations in order inside the new root.
func Build(p *Plan) error {
	for _, op := range p.Ops {
		if err := apply(op); err != nil {
			return err
		}
	}
	return nil
}

// DetachOldRoot makes the host's root unreachable: lazily unmount it (its
// mounts are locked together in a user namespace, so all at once) and
// remove the empty mount point.
func DetachOldRoot() error {
	if err := unix.Unmount(OldRoot, unix.MNT_DETACH); err != nil {
		return fail("umount", OldRoot, err)
	}
	if err := os.Remove(OldRoot); err != nil {
		return fail("rmdir", OldRoot, err)
	}
	return nil
}

// HideOverlayLayers lazily unmounts the overlays' layer tmpfs (the
// overlays keep it alive) and removes its mount point, so the program
// reaches the layers only through the overlays. With keep it first opens,
// and returns, an fd of the upper layers' root for KeepUpper.
func HideOverlayLayers(keep bool) (int, error) {
	fd := -1
	if keep {
		var err error
		if fd, err = unix.Open(OverlayDir+"/upper", unix.O_PATH|unix.O_DIRECTORY|unix.O_CLOEXEC, 0); err != nil {
			return -1, fail("open", OverlayDir+"/upper", err)
		}
	}
	if err := unix.Unmount(OverlayDir, unix.MNT_DETACH); err != nil {
		return -1, fail("umount", OverlayDir, err)
	}
	if err := os.Remove(OverlayDir); err != nil {
		return -1, fail("rmdir", OverlayDir, err)
	}
	return fd, nil
}

// KeepUpper copies the overlays' upper layers (fd from HideOverlayLayers)
// into dst (an fd of the caller's directory, a detached mount): changed and
// new files, directories and links, each at its path inside (usr/...,
// etc/...); what the program deleted is listed in .ward-whiteouts. Runs
// in the init after the program's processes are gone.
func KeepUpper(upper, dst int) error {
	// "/." makes the walk start beyond the magic link, which Lstat would
	// otherwise report as a mere symlink.
	src := fmt.Sprintf("/proc/self/fd/%d/.", upper)
	out := fmt.Sprintf("/proc/self/fd/%d", dst)
	var whiteouts []string
	err := filepath.WalkDir(src, func(p string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(filepath.Clean(src), p)
		if rel == "." || p == src {
			return nil
		}
		target := filepath.Join(out, rel)
		fi, err := d.Info()
		if err != nil {
			return err
		}
		switch {
		case fi.Mode()&os.ModeCharDevice != 0:
			whiteouts = append(whiteouts, "/"+rel) // overlayfs's mark of a deleted file
		case fi.IsDir():
			return os.Mkdir(target, fi.Mode().Perm()|0o700)
		case fi.Mode()&os.ModeSymlink != 0:
			link, err := os.Readlink(p)
			if err != nil {
				return err
			}
			return os.Symlink(link, target)
		case fi.Mode().IsRegular():
			b, err := os.ReadFile(p)
			if err != nil {
				return err
			}
			return os.WriteFile(target, b, fi.Mode().Perm())
		}
		return nil
	})
	if err == nil && len(whiteouts) > 0 {
		err = os.WriteFile(filepath.Join(out, ".ward-whiteouts"), []byte(strings.Join(whiteouts, "\n")+"\n"), 0o644)
	}
	if err != nil {
		return fmt.Errorf("keep the overlay's changes: %w", err)
	}
	return nil
}

// GiveRootTo makes what the plan made in the root tmpfs (not what is
// mounted on it) uid:gid's, so that with --overlay the program may write
// anywhere in its view.
func GiveRootTo(uid, gid int) error {
	var root unix.Stat_t
	if err := unix.Lstat("/", &root); err != nil {
		return fail("lstat", "/", err)
	}
	return filepath.WalkDir("/", func(p string, d os.DirEntry, err error) error {
		if err != nil {
			return nil
		}
		var st unix.Stat_t
		if unix.Lstat(p, &st) != nil || st.Dev != root.Dev {
			if d.IsDir() && p != "/" {
				return filepath.SkipDir // another mount
			}
			return nil
		}
		if err := unix.Lchown(p, uid, gid); err != nil {
			return fail("chown", p, err)
		}
		return nil
	})
}

// SealRoot makes the root tmpfs itself read-only; the scratch mounts on it
// stay writable. A write anywhere else fails with EROFS.
func SealRoot() error {
	return seal("/")
}

func apply(op Op) error {
	switch op.Kind {
	case KindBind:
		return bind(OldRoot+op.Src, op.Dst, op)
	case KindTmpfs:
		flags := uintptr(unix.MS_NOSUID | unix.MS_NODEV)
		if !op.Exec {
			flags |= unix.MS_NOEXEC
		}
		if !op.RW {
			flags |= unix.MS_RDONLY
		}
		if err := os.MkdirAll(op.Dst, 0o755); err != nil {
			return fail("mkdir", op.Dst, err)
		}
		if err := unix.Mount("tmpfs", op.Dst, "tmpfs", flags, op.Data); err != nil {
			return fail("mount tmpfs", op.Dst, err)
		}
	case KindProc:
		if err := os.MkdirAll(op.Dst, 0o555); err != nil {
			return fail("mkdir", op.Dst, err)
		}
		if err := unix.Mount("proc", op.Dst, "proc", unix.MS_NOSUID|unix.MS_NODEV|unix.MS_NOEXEC, ""); err != nil {
			return fail("mount proc", op.Dst, err)
		}
	case KindDevpts:
		if err := os.MkdirAll(op.Dst, 0o755); err != nil {
			return fail("mkdir", op.Dst, err)
		}
		if err := unix.Mount("devpts", op.Dst, "devpts", unix.MS_NOSUID|unix.MS_NOEXEC, op.Data); err != nil {
			return fail("mount devpts", op.Dst, err)
		}
	case KindSymlink:
		if err := os.MkdirAll(filepath.Dir(op.Dst), 0o755); err != nil {
			return fail("mkdir", filepath.Dir(op.Dst), err)
		}
		if err := os.Symlink(op.Link, op.Dst); err != nil {
			return fail("symlink", op.Dst, err)
		}
	case KindFile:
		if err := os.MkdirAll(filepath.Dir(op.Dst), 0o755); err != nil {
			return fail("mkdir", filepath.Dir(op.Dst), err)
		}
		if err := os.WriteFile(op.Dst, []byte(op.Content), os.FileMode(op.Mode)); err != nil {
			return fail("write", op.Dst, err)
		}
	case KindMask:
		fi, err := os.Lstat(op.Dst)
		if os.IsNotExist(err) {
			return nil
		}
		if err != nil {
			return fail("lstat", op.Dst, err)
		}
		if fi.IsDir() {
			if err := unix.Mount("tmpfs", op.Dst, "tmpfs", unix.MS_RDONLY|unix.MS_NOSUID|unix.MS_NODEV|unix.MS_NOEXEC, "size=0,nr_inodes=1"); err != nil {
				return fail("mask", op.Dst, err)
			}
			return nil
		}
		// The sandbox's own /dev/null (built before /proc), so masks work
		// after the host's root is gone too.
		// Dev: reading the mask gives EOF, as in runc, not EACCES.
		return bind("/dev/null", op.Dst, Op{Dev: true})
	case KindRebind:
		if _, err := os.Lstat(op.Dst); os.IsNotExist(err) {
			return nil
		}
		return bind(op.Dst, op.Dst, Op{})
	case KindSeal:
		return seal(op.Dst)
	case KindOverlay:
		return overlay(op)
	case KindCopy:
		return copyFile(OldRoot+op.Src, op.Dst)
	default:
		return fail("plan", op.Dst, fmt.Errorf("unknown op kind %q", op.Kind))
	}
	return nil
}

// bind mounts src at dst recursively, then sets nosuid, nodev (unless
// op.Dev) and read-only (unless op.RW) on the whole subtree with
// mount_setattr, which, unlike MS_REMOUNT, reaches submounts and keeps the
// flags the kernel locked on the host's mounts.
func bind(src, dst string, op Op) error {
	fi, err := os.Stat(src)
	if err != nil {
		return fail("stat bind source", src, err)
	}
	if err := makeTarget(dst, fi.IsDir()); err != nil {
		return err
	}
	if err := unix.Mount(src, dst, "", unix.MS_BIND|unix.MS_REC, ""); err != nil {
		return fail("bind "+src, dst, err)
	}
	attr := &unix.MountAttr{Attr_set: unix.MOUNT_ATTR_NOSUID}
	if !op.Dev {
		attr.Attr_set |= unix.MOUNT_ATTR_NODEV
	}
	if !op.RW {
		attr.Attr_set |= unix.MOUNT_ATTR_RDONLY
	}
	if op.NoExec {
		attr.Attr_set |= unix.MOUNT_ATTR_NOEXEC
	}
	if err := unix.MountSetattr(unix.AT_FDCWD, dst, unix.AT_RECURSIVE|unix.AT_SYMLINK_NOFOLLOW, attr); err != nil {
		return fail("mount_setattr", dst, err)
	}
	return checkReadOnly(dst, !op.RW)
}

// overlay mounts an overlay at op.Dst: the host's op.Src below, an upper
// layer in OverlayDir above. In a user namespace overlayfs keeps its
// metadata in user.* xattrs (userxattr); where the upper file system has
// none (tmpfs before 6.6) it mounts without, with fewer features.
func overlay(op Op) error {
	upper, work, lower := OverlayDir+"/upper"+op.Dst, OverlayDir+"/work"+op.Dst, OldRoot+op.Src
	for _, d := range []string{upper, work, op.Dst} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			return fail("mkdir", d, err)
		}
	}
	// The merged directory takes its owner from the upper layer's root.
	if err := os.Chown(upper, op.UID, op.GID); err != nil {
		return fail("chown", upper, err)
	}
	if op.SrcFD > 0 {
		// The lower layer is the parent's idmapped clone: files of host
		// root are the sandbox user's through it, so copy-up and writes
		// work for the program.
		lower = OverlayDir + "/lower" + op.Dst
		if err := os.MkdirAll(lower, 0o755); err != nil {
			return fail("mkdir", lower, err)
		}
		if err := unix.MoveMount(op.SrcFD, "", unix.AT_FDCWD, lower, unix.MOVE_MOUNT_F_EMPTY_PATH); err != nil {
			return fail("move_mount lower "+op.Src, lower, err)
		}
	}
	data := fmt.Sprintf("lowerdir=%s,upperdir=%s,workdir=%s", lower, upper, work)
	flags := uintptr(unix.MS_NOSUID | unix.MS_NODEV)
	err := unix.Mount("overlay", op.Dst, "overlay", flags, data+",userxattr")
	if err != nil {
		err = unix.Mount("overlay", op.Dst, "overlay", flags, data)
	}
	if err != nil {
		return fail("mount overlay", op.Dst, err)
	}
	return nil
}

// copyFile copies a host file into the root tmpfs, keeping its mode.
func copyFile(src, dst string) error {
	b, err := os.ReadFile(src)
	if err != nil {
		return fail("read", src, err)
	}
	fi, err := os.Stat(src)
	if err != nil {
		return fail("stat", src, err)
	}
	if err := os.MkdirAll(filepath.Dir(dst), 0o755); err != nil {
		return fail("mkdir", filepath.Dir(dst), err)
	}
	if err := os.WriteFile(dst, b, fi.Mode().Perm()); err != nil {
		return fail("write", dst, err)
	}
	return nil
}

// seal makes the single mount at path read-only.
func seal(path string) error {
	attr := &unix.MountAttr{Attr_set: unix.MOUNT_ATTR_RDONLY}
	if err := unix.MountSetattr(unix.AT_FDCWD, path, unix.AT_SYMLINK_NOFOLLOW, attr); err != nil {
		return fail("mount_setattr ro", path, err)
	}
	return checkReadOnly(path, true)
}

// checkReadOnly refuses a read-only flag that silently did not apply.
func checkReadOnly(path string, want bool) error {
	if !want {
		return nil
	}
	var st unix.Statfs_t
	if err := unix.Statfs(path, &st); err != nil {
		return fail("statfs", path, err)
	}
	if st.Flags&unix.ST_RDONLY == 0 {
		return fail("check read-only", path, unix.EROFS)
	}
	return nil
}

// makeTarget creates the mount point dst inside the new root: a directory,
// or an empty file for a file bind.
func makeTarget(dst string, dir bool) error {
	if _, err := os.Lstat(dst); err == nil {
		return nil // already there (a /proc entry being masked or rebound)
	}
	if dir {
		if err := os.MkdirAll(dst, 0o755); err != nil {
			return fail("mkdir", dst, err)
		}
		return nil
	}
	if err := os.MkdirAll(filepath.Dir(dst), 0o755); err != nil {
		return fail("mkdir", filepath.Dir(dst), err)
	}
	f, err := os.OpenFile(dst, os.O_CREATE|os.O_RDONLY|syscall.O_NOFOLLOW, 0o444)
	if err != nil {
		return fail("create mount point", dst, err)
	}
	return f.Close()
}
