// The sandbox's root, built in C by the init from the plan Go packed.
//
// The parent (ward, on the host) decides everything: it resolves host
// paths once, opens and clones what the user asked for, and writes a plan
// (fs.Plan, the user mounts, the deny patterns, the Landlock rules) that
// rootplan.go packs and root_plan_linux.c checks. The steps here only
// execute it, in the sandbox's new mount namespace, with the init's
// capabilities over its own namespaces: they make no policy decision and
// never look up a host path by name after the host's root is out of reach.
//
// The steps, in order (ward_root_steps): make the mounts private, pivot
// into an empty tmpfs keeping the host's root at WARD_OLD_ROOT, run the
// plan's operations, hide the overlays' layers, clone an unprivileged
// caller's sources, detach the host's root, attach the user's mounts, mask
// what the deny patterns match, seal the root (or give it to the sandbox
// user with --overlay), build the Landlock ruleset. An OCI container's
// root (a rootfs in the plan) is the rootfs itself: enter-rootfs attaches
// it and chroots into it, build-root builds the plan there,
// leave-rootfs-chroot goes back, pivot-into-rootfs (in place of
// detach-host-root) pivots into it, seal-rootfs makes it read-only. Each
// returns 0 or a positive errno with out->what and out->path saying what
// failed where.
//
// Every bind ends with mount_setattr (which, unlike MS_REMOUNT, reaches
// submounts and keeps the flags the kernel locked on the host's mounts),
// and every mount that must be read-only is checked to be (statfs): a flag
// that silently did not apply fails the step.

#define _GNU_SOURCE
#include <errno.h>
#include <stdarg.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <unistd.h>

#include "root_impl_linux.h"

#ifndef ST_RDONLY
#define ST_RDONLY 1
#endif

// The kernel's struct mount_attr (mount_setattr), under a name of its own.
struct ward_mount_attr {
	uint64_t attr_set, attr_clr, propagation, userns_fd;
};

// copy_str copies src into dst (size bytes), cut short if it must be.
static void copy_str(char *dst, size_t size, const char *src) {
	size_t n = strnlen(src, size - 1);
	memcpy(dst, src, n);
	dst[n] = 0;
}

int ward_root_fail(struct ward_root_out *out, const char *what, const char *path, int err) {
	copy_str(out->what, sizeof(out->what), what);
	copy_str(out->path, sizeof(out->path), path ? path : "");
	return err;
}

int ward_root_failf(struct ward_root_out *out, const char *path, int err, const char *fmt, ...) {
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(out->what, sizeof(out->what), fmt, ap);
	va_end(ap);
	copy_str(out->path, sizeof(out->path), path ? path : "");
	return err;
}

#define FAIL(what, path) ward_root_fail(out, what, path, errno)

void ward_root_out_init(struct ward_root_out *out) {
	memset(out, 0, sizeof(*out));
	out->upper_fd = out->landlock_fd = out->stage_fd = -1;
}

int ward_root_setattr(int dfd, const char *path, unsigned flags, uint64_t attrs) {
	struct ward_mount_attr a = {.attr_set = attrs};
	return syscall(SYS_mount_setattr, dfd, path, flags, &a, sizeof(a)) < 0 ? errno : 0;
}

// join writes a then b into buf (size bytes): 0 or ENAMETOOLONG.
static int join(char *buf, size_t size, const char *a, const char *b) {
	return (size_t)snprintf(buf, size, "%s%s", a, b) >= size ? ENAMETOOLONG : 0;
}

// mkdir_in is os.MkdirAll on path, which it changes and restores: a
// directory that is there (through symlinks) is fine, anything else there
// is ENOTDIR; parents first.
static int mkdir_in(char *path, mode_t mode) {
	struct stat st;
	if (stat(path, &st) == 0) return S_ISDIR(st.st_mode) ? 0 : ENOTDIR;
	size_t i = strlen(path);
	while (i > 0 && path[i - 1] == '/') i--;
	while (i > 0 && path[i - 1] != '/') i--;
	if (i > 1) { // a parent, path[:i-1]
		path[i - 1] = 0;
		int e = mkdir_in(path, mode);
		path[i - 1] = '/';
		if (e) return e;
	}
	if (mkdir(path, mode) < 0) {
		int e = errno;
		return lstat(path, &st) == 0 && S_ISDIR(st.st_mode) ? 0 : e;
	}
	return 0;
}

static int mkdir_all(const char *path, mode_t mode) {
	char buf[WARD_ROOT_MAX_PATH];
	if (join(buf, sizeof(buf), path, "")) return ENAMETOOLONG;
	return mkdir_in(buf, mode);
}

// mkdir_parent makes the directory holding path (Go's filepath.Dir).
static int mkdir_parent(const char *path, struct ward_root_out *out) {
	char dir[WARD_ROOT_MAX_PATH + 2];
	const char *slash = strrchr(path, '/');
	ward_clean(path, slash ? (size_t)(slash - path) + 1 : 0, dir);
	int e = mkdir_all(dir, 0755);
	return e ? ward_root_fail(out, "mkdir", dir, e) : 0;
}

int ward_root_check_ro(const char *path, int want, struct ward_root_out *out) {
	struct statfs st;
	if (!want) return 0;
	if (statfs(path, &st) < 0) return FAIL("statfs", path);
	if (!(st.f_flags & ST_RDONLY)) return ward_root_fail(out, "check read-only", path, EROFS);
	return 0;
}

// make_target creates the mount point dst inside the new root, unless
// something is there already (a /proc entry being masked or rebound): a
// directory, or an empty file for a file bind.
static int make_target(const char *dst, int dir, struct ward_root_out *out) {
	struct stat st;
	if (lstat(dst, &st) == 0) return 0;
	if (dir) {
		int e = mkdir_all(dst, 0755);
		return e ? ward_root_fail(out, "mkdir", dst, e) : 0;
	}
	int e = mkdir_parent(dst, out);
	if (e) return e;
	int fd = open(dst, O_CREAT | O_RDONLY | O_NOFOLLOW | O_CLOEXEC, 0444);
	if (fd < 0) return FAIL("create mount point", dst);
	close(fd);
	return 0;
}

// bind_attrs sets nosuid, nodev (unless WARD_OP_DEV), read-only (unless
// WARD_OP_RW) and noexec (with WARD_OP_NOEXEC) on the whole subtree at
// dst, a bind just made.
static int bind_attrs(const char *dst, unsigned flags, struct ward_root_out *out) {
	uint64_t attrs = MOUNT_ATTR_NOSUID;
	if (!(flags & WARD_OP_DEV)) attrs |= MOUNT_ATTR_NODEV;
	if (!(flags & WARD_OP_RW)) attrs |= MOUNT_ATTR_RDONLY;
	if (flags & WARD_OP_NOEXEC) attrs |= MOUNT_ATTR_NOEXEC;
	int e = ward_root_setattr(AT_FDCWD, dst, AT_RECURSIVE | AT_SYMLINK_NOFOLLOW, attrs);
	if (e) return ward_root_fail(out, "mount_setattr", dst, e);
	return ward_root_check_ro(dst, !(flags & WARD_OP_RW), out);
}

// bind mounts src at dst recursively, then sets its attributes.
static int bind(const char *src, const char *dst, unsigned flags, struct ward_root_out *out) {
	struct stat st;
	if (stat(src, &st) < 0) return FAIL("stat bind source", src);
	int e = make_target(dst, S_ISDIR(st.st_mode), out);
	if (e) return e;
	if (mount(src, dst, "", MS_BIND | MS_REC, "") < 0) return ward_root_failf(out, dst, errno, "bind %s", src);
	return bind_attrs(dst, flags, out);
}

// bind_fd attaches at dst the detached clone (open_tree) the parent made
// of a source on the host and passed as fd: a source the init may not
// reach by its path (in a directory only host root may search, as an OCI
// bundle's often is). Then as bind.
static int bind_fd(int fd, const char *dst, unsigned flags, struct ward_root_out *out) {
	struct stat st;
	if (fstat(fd, &st) < 0) return FAIL("stat bind source", dst);
	int e = make_target(dst, S_ISDIR(st.st_mode), out);
	if (e) return e;
	if (syscall(SYS_move_mount, fd, "", AT_FDCWD, dst, MOVE_MOUNT_F_EMPTY_PATH) < 0) return FAIL("move_mount", dst);
	// The clone's mounts were made by the parent, before any of the
	// init's, and /proc/self/mountinfo lists mounts in the order they were
	// made: replaced by a copy made now, a bind is listed in the plan's
	// order, as config.json's mounts must be (the copy can be made only
	// once the clone is in this mount namespace).
	int copy = (int)syscall(SYS_open_tree, AT_FDCWD, dst, OPEN_TREE_CLONE | O_CLOEXEC | AT_RECURSIVE | AT_SYMLINK_NOFOLLOW);
	if (copy < 0) return FAIL("clone the bind", dst);
	int e2 = umount2(dst, MNT_DETACH) < 0 ? errno : 0;
	if (!e2 && syscall(SYS_move_mount, copy, "", AT_FDCWD, dst, MOVE_MOUNT_F_EMPTY_PATH) < 0) e2 = errno;
	close(copy);
	if (e2) return ward_root_fail(out, "move_mount the bind's copy", dst, e2);
	return bind_attrs(dst, flags, out);
}

// bind_host binds the host's src (absolute) at dst. The host's root is at
// WARD_OLD_ROOT, or, while the plan is built in an OCI container's rootfs
// (stage_fd), beneath the root tmpfs that is out of reach by path: there
// the source is cloned (open_tree) through stage_fd and attached as
// bind_fd attaches the parent's clones.
static int bind_host(const char *src, const char *dst, unsigned flags, struct ward_root_out *out) {
	char path[WARD_ROOT_MAX_PATH];
	int e = join(path, sizeof(path), WARD_OLD_ROOT, src);
	if (e) return ward_root_fail(out, "stat bind source", src, e);
	if (out->stage_fd < 0) return bind(path, dst, flags, out);
	int tree = (int)syscall(SYS_open_tree, out->stage_fd, path + 1, OPEN_TREE_CLONE | O_CLOEXEC | AT_RECURSIVE);
	if (tree < 0) return ward_root_failf(out, dst, errno, "clone %s", path);
	e = bind_fd(tree, dst, flags, out);
	close(tree);
	return e;
}

// seal makes the single mount at path read-only.
static int seal(const char *path, struct ward_root_out *out) {
	int e = ward_root_setattr(AT_FDCWD, path, AT_SYMLINK_NOFOLLOW, MOUNT_ATTR_RDONLY);
	if (e) return ward_root_fail(out, "mount_setattr ro", path, e);
	return ward_root_check_ro(path, 1, out);
}

int ward_root_mask(const char *dst, struct ward_root_out *out) {
	struct stat st;
	if (lstat(dst, &st) < 0) return errno == ENOENT ? 0 : FAIL("lstat", dst);
	if (S_ISDIR(st.st_mode)) {
		if (mount("tmpfs", dst, "tmpfs", MS_RDONLY | MS_NOSUID | MS_NODEV | MS_NOEXEC, "size=0,nr_inodes=1") < 0)
			return FAIL("mask", dst);
		return 0;
	}
	// The sandbox's own /dev/null (built before /proc), so masks work
	// after the host's root is gone too. Device access kept: reading the
	// mask gives EOF, as in runc, not EACCES.
	return bind("/dev/null", dst, WARD_OP_DEV, out);
}

// write_all writes n bytes of p to fd: 0 or an errno.
static int write_all(int fd, const char *p, size_t n) {
	while (n > 0) {
		ssize_t w = write(fd, p, n);
		if (w < 0 && errno == EINTR) continue;
		if (w < 0) return errno;
		p += w;
		n -= (size_t)w;
	}
	return 0;
}

// write_file is os.WriteFile: dst created (mode, less the umask) or
// truncated, then content.
static int write_file(const char *dst, const char *content, size_t n, mode_t mode, struct ward_root_out *out) {
	int fd = open(dst, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, mode & 0777);
	if (fd < 0) return FAIL("write", dst);
	int e = write_all(fd, content, n);
	if (close(fd) < 0 && !e) e = errno;
	return e ? ward_root_fail(out, "write", dst, e) : 0;
}

// copy_file copies a host file (a path beneath the old root) into the
// root tmpfs, keeping its permission bits.
static int copy_file(const char *src, const char *dst, struct ward_root_out *out) {
	struct stat st;
	char buf[16384];
	int in = open(src, O_RDONLY | O_CLOEXEC);
	if (in < 0) return FAIL("read", src);
	int e = fstat(in, &st) < 0 ? errno : 0;
	if (e || S_ISDIR(st.st_mode)) {
		close(in);
		return e ? ward_root_fail(out, "stat", src, e) : ward_root_fail(out, "read", src, EISDIR);
	}
	if ((e = mkdir_parent(dst, out))) {
		close(in);
		return e;
	}
	int o = open(dst, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, st.st_mode & 0777);
	if (o < 0) {
		e = FAIL("write", dst);
		close(in);
		return e;
	}
	for (;;) {
		ssize_t r = read(in, buf, sizeof(buf));
		if (r < 0 && errno == EINTR) continue;
		if (r < 0) e = ward_root_fail(out, "read", src, errno);
		if (r <= 0) break;
		if ((e = write_all(o, buf, (size_t)r))) {
			ward_root_fail(out, "write", dst, e);
			break;
		}
	}
	close(in);
	if (close(o) < 0 && !e) e = FAIL("write", dst);
	return e;
}

// overlay mounts an overlay at op->dst: the host's op->src (or the
// parent's idmapped clone of it, op->src_fd) below, an upper layer in
// WARD_OVERLAY_DIR above, owned by the sandbox user (the merged directory
// takes its owner from the upper layer's root). In a user namespace
// overlayfs keeps its metadata in user.* xattrs (userxattr); where the
// upper file system has none (tmpfs before 6.6) it mounts without, with
// fewer features.
static int overlay(const struct ward_root_op *op, struct ward_root_out *out) {
	char upper[WARD_ROOT_MAX_PATH], work[WARD_ROOT_MAX_PATH], lower[WARD_ROOT_MAX_PATH], data[3 * WARD_ROOT_MAX_PATH + 64];
	int e = join(upper, sizeof(upper), WARD_OVERLAY_DIR "/upper", op->dst);
	if (!e) e = join(work, sizeof(work), WARD_OVERLAY_DIR "/work", op->dst);
	if (!e) e = join(lower, sizeof(lower), WARD_OLD_ROOT, op->src);
	if (e) return ward_root_fail(out, "mkdir", op->dst, e);
	const char *dirs[3] = {upper, work, op->dst};
	for (int i = 0; i < 3; i++)
		if ((e = mkdir_all(dirs[i], 0755))) return ward_root_fail(out, "mkdir", dirs[i], e);
	if (chown(upper, op->uid, op->gid) < 0) return FAIL("chown", upper);
	if (op->src_fd > 0) {
		// The lower layer is the parent's idmapped clone: files of host
		// root are the sandbox user's through it, so copy-up and writes
		// work for the program.
		if ((e = join(lower, sizeof(lower), WARD_OVERLAY_DIR "/lower", op->dst))) return ward_root_fail(out, "mkdir", op->dst, e);
		if ((e = mkdir_all(lower, 0755))) return ward_root_fail(out, "mkdir", lower, e);
		if (syscall(SYS_move_mount, op->src_fd, "", AT_FDCWD, lower, MOVE_MOUNT_F_EMPTY_PATH) < 0)
			return FAIL("move_mount lower", lower);
	}
	if ((size_t)snprintf(data, sizeof(data), "lowerdir=%s,upperdir=%s,workdir=%s,userxattr", lower, upper, work) >= sizeof(data))
		return ward_root_fail(out, "mount overlay", op->dst, ENAMETOOLONG);
	if (mount("overlay", op->dst, "overlay", MS_NOSUID | MS_NODEV, data) == 0) return 0;
	*strrchr(data, ',') = 0; // without userxattr
	if (mount("overlay", op->dst, "overlay", MS_NOSUID | MS_NODEV, data) < 0) return FAIL("mount overlay", op->dst);
	return 0;
}

// copy_tree copies what is in the directory from into the directory to
// (both fds, which it closes): directories, files and symlinks, with their
// permission bits and owners; anything else (a device, a socket) is left
// out, and so is what is deeper than depth levels. For tmpcopyup: the
// rootfs's directory at a tmpfs's destination, copied into the tmpfs.
// owner_id is id for chown, or -1 (leave it) for the kernel's default
// overflow id, which stands for an id the user namespace does not map.
static unsigned owner_id(unsigned id) {
	return id == 65534 ? (unsigned)-1 : id;
}

// data is a buffer of WARD_ROOT_MAX_PATH bytes the levels share (the
// stack holds 1 KiB per level).
static int copy_tree(int from, int to, const char *dst, int depth, char *data, struct ward_root_out *out) {
	char buf[1024];
	int e = 0;
	for (;;) {
		long n = syscall(SYS_getdents64, from, buf, sizeof(buf));
		if (n < 0 && errno == EINTR) continue;
		if (n < 0) e = ward_root_fail(out, "read the directory", dst, errno);
		if (n <= 0) break;
		for (long off = 0; !e && off < n;) {
			// struct linux_dirent64: ino, off, reclen (u16 at 16), type, name (at 19).
			unsigned short reclen;
			memcpy(&reclen, buf + off + 16, 2);
			const char *name = buf + off + 19;
			off += reclen;
			struct stat st;
			if (!strcmp(name, ".") || !strcmp(name, "..") || fstatat(from, name, &st, AT_SYMLINK_NOFOLLOW) < 0) continue;
			if (S_ISDIR(st.st_mode) && depth > 0) {
				if (mkdirat(to, name, st.st_mode & 07777) < 0) {
					e = ward_root_failf(out, dst, errno, "tmpcopyup: mkdir %s in", name);
					break;
				}
				int f = openat(from, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
				int t = openat(to, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
				if (f >= 0 && t >= 0) e = copy_tree(f, t, dst, depth - 1, data, out);
				else {
					e = ward_root_failf(out, dst, errno, "tmpcopyup: open %s in", name);
					if (f >= 0) close(f);
					if (t >= 0) close(t);
				}
			} else if (S_ISLNK(st.st_mode)) {
				ssize_t l = readlinkat(from, name, data, WARD_ROOT_MAX_PATH - 1);
				if (l < 0) continue;
				data[l] = 0;
				if (symlinkat(data, to, name) < 0) e = ward_root_failf(out, dst, errno, "tmpcopyup: symlink %s in", name);
			} else if (S_ISREG(st.st_mode)) {
				int f = openat(from, name, O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
				int t = f < 0 ? -1 : openat(to, name, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, st.st_mode & 07777);
				for (ssize_t r = 1; f >= 0 && t >= 0 && r > 0 && !e;) {
					r = read(f, data, WARD_ROOT_MAX_PATH);
					if (r < 0 && errno == EINTR) r = 1;
					else if (r < 0) e = ward_root_failf(out, dst, errno, "tmpcopyup: read %s in", name);
					else if (r > 0 && (e = write_all(t, data, (size_t)r))) ward_root_failf(out, dst, e, "tmpcopyup: write %s in", name);
				}
				if (f >= 0 && t < 0) e = ward_root_failf(out, dst, errno, "tmpcopyup: create %s in", name);
				if (f >= 0) close(f);
				if (t >= 0) close(t);
			} else continue;
			// The owner as in the rootfs (mkdirat and openat applied the
			// umask: the mode again too). An owner the container has no
			// mapping for shows as the overflow id: the copy stays the
			// init's (the container root's), as runc's rootless copy.
			if (!e) {
				(void)fchownat(to, name, owner_id(st.st_uid), owner_id(st.st_gid), AT_SYMLINK_NOFOLLOW);
				if (!S_ISLNK(st.st_mode)) (void)fchmodat(to, name, st.st_mode & 07777, 0);
			}
		}
		if (e) break;
	}
	close(from);
	close(to);
	return e;
}

// mount_new mounts a new file system of type at op->dst (made with mode),
// its source op->src (an OCI mount's, "shm") or else its type.
static int mount_new(const char *type, const struct ward_root_op *op, mode_t mode, unsigned long flags, const char *data, const char *what, struct ward_root_out *out) {
	int e = mkdir_all(op->dst, mode);
	if (e) return ward_root_fail(out, "mkdir", op->dst, e);
	if (mount(op->src[0] ? op->src : type, op->dst, type, flags, data) < 0) return FAIL(what, op->dst);
	return 0;
}

// tmpfs mounts op's tmpfs; with WARD_OP_COPYUP it starts with a copy of
// what was at its destination, and the destination's mode and owner.
static int tmpfs(const struct ward_root_op *op, struct ward_root_out *out) {
	unsigned long flags = MS_NOSUID | MS_NODEV;
	if (!(op->flags & WARD_OP_EXEC)) flags |= MS_NOEXEC;
	int from = -1, e;
	struct stat st;
	if ((op->flags & WARD_OP_COPYUP) && (from = open(op->dst, O_RDONLY | O_DIRECTORY | O_CLOEXEC)) >= 0 && fstat(from, &st) < 0) {
		e = FAIL("stat", op->dst);
		close(from);
		return e;
	}
	// Read-only at once, or with a copy once the copy is in.
	if (!(op->flags & WARD_OP_RW) && from < 0) flags |= MS_RDONLY;
	if ((e = mount_new("tmpfs", op, 0755, flags, op->data, "mount tmpfs", out))) {
		if (from >= 0) close(from);
		return e;
	}
	if (from >= 0) {
		int to = open(op->dst, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
		if (to < 0) {
			e = FAIL("open", op->dst);
			close(from);
			return e;
		}
		(void)fchown(to, owner_id(st.st_uid), owner_id(st.st_gid));
		(void)fchmod(to, st.st_mode & 07777);
		char data[WARD_ROOT_MAX_PATH];
		if ((e = copy_tree(from, to, op->dst, 32, data, out))) return e;
	}
	if ((op->flags & WARD_OP_RW) || from < 0) return 0;
	return seal(op->dst, out);
}

// sysfs mounts a new sysfs at dst (an OCI container's): the kernel allows
// one only in a network namespace of the container's own; elsewhere the
// host's /sys is bound, read-only, as runc does for a rootless container.
static int sysfs(const struct ward_root_op *op, struct ward_root_out *out) {
	unsigned long flags = MS_NOSUID | MS_NODEV | MS_NOEXEC;
	if (!(op->flags & WARD_OP_RW)) flags |= MS_RDONLY;
	int e = mkdir_all(op->dst, 0555);
	if (e) return ward_root_fail(out, "mkdir", op->dst, e);
	if (mount(op->src[0] ? op->src : "sysfs", op->dst, "sysfs", flags, "") == 0) return 0;
	if (errno != EPERM) return FAIL("mount sysfs", op->dst);
	return bind_host("/sys", op->dst, 0, out);
}

// setattr sets and clears mount attributes on the whole subtree at
// op->dst (an OCI mount's recursive options: rro, rnosuid, ...).
static int setattr(const struct ward_root_op *op, struct ward_root_out *out) {
	struct ward_mount_attr a = {.attr_set = op->mode, .attr_clr = (uint32_t)op->uid};
	if (syscall(SYS_mount_setattr, AT_FDCWD, op->dst, AT_RECURSIVE | AT_SYMLINK_NOFOLLOW, &a, sizeof(a)) < 0)
		return FAIL("mount_setattr", op->dst);
	return ward_root_check_ro(op->dst, (op->mode & MOUNT_ATTR_RDONLY) != 0, out);
}

// apply runs one operation of the plan.
static int apply(const struct ward_root_op *op, struct ward_root_out *out) {
	char src[WARD_ROOT_MAX_PATH];
	struct stat st;
	int e;
	switch (op->kind) {
	case WARD_OP_BIND:
		if (op->src_fd > 0) return bind_fd(op->src_fd, op->dst, op->flags, out);
		return bind_host(op->src, op->dst, op->flags, out);
	case WARD_OP_TMPFS:
		return tmpfs(op, out);
	case WARD_OP_PROC:
		return mount_new("proc", op, 0555, MS_NOSUID | MS_NODEV | MS_NOEXEC, "", "mount proc", out);
	case WARD_OP_DEVPTS:
		return mount_new("devpts", op, 0755, MS_NOSUID | MS_NOEXEC, op->data, "mount devpts", out);
	case WARD_OP_SYMLINK:
		if ((e = mkdir_parent(op->dst, out))) return e;
		return symlink(op->link, op->dst) < 0 ? FAIL("symlink", op->dst) : 0;
	case WARD_OP_FILE:
		if ((e = mkdir_parent(op->dst, out))) return e;
		return write_file(op->dst, op->content, op->content_len, op->mode, out);
	case WARD_OP_MASK:
		return ward_root_mask(op->dst, out);
	case WARD_OP_REBIND:
		if (lstat(op->dst, &st) < 0 && errno == ENOENT) return 0;
		return bind(op->dst, op->dst, 0, out);
	case WARD_OP_SEAL:
		return seal(op->dst, out);
	case WARD_OP_OVERLAY:
		return overlay(op, out);
	case WARD_OP_COPY:
		if ((e = join(src, sizeof(src), WARD_OLD_ROOT, op->src))) return ward_root_fail(out, "read", op->src, e);
		return copy_file(src, op->dst, out);
	case WARD_OP_SYSFS:
		return sysfs(op, out);
	case WARD_OP_MQUEUE:
		return mount_new("mqueue", op, 0755, MS_NOSUID | MS_NODEV | MS_NOEXEC, "", "mount mqueue", out);
	case WARD_OP_PROPAGATE:
		return mount("", op->dst, "", op->mode, "") < 0 ? FAIL("set propagation", op->dst) : 0;
	case WARD_OP_SETATTR:
		return setattr(op, out);
	}
	return ward_root_fail(out, "plan", op->dst, EINVAL);
}

// make-mounts-private stops mount events from propagating between the new
// mount namespace and the host's: nothing done after it can reach the host.
static int make_mounts_private(const struct ward_root *r, struct ward_root_out *out) {
	(void)r;
	if (mount("", "/", "", MS_REC | MS_PRIVATE, "") < 0) return FAIL("make / rprivate", "/");
	return 0;
}

// enter-new-root mounts an empty tmpfs and pivots into it, keeping the
// host's root at WARD_OLD_ROOT. The tmpfs is mounted on /tmp of the
// (private) mount namespace only to have a mount point; after pivot_root
// it is "/", and WARD_OLD_ROOT/tmp shows the host's /tmp again, so any
// host path can still be a bind source.
static int enter_new_root(const struct ward_root *r, struct ward_root_out *out) {
	char data[96];
	// Small by default: the plan's synthetic files and mount points.
	unsigned long long size = r->root_size > 0 ? (unsigned long long)r->root_size : 1u << 20;
	snprintf(data, sizeof(data), "mode=0755,size=%llu,nr_inodes=65536", size);
	// nosuid, nodev: nothing on the root itself is a device or setuid.
	if (mount("ward-root", "/tmp", "tmpfs", MS_NOSUID | MS_NODEV, data) < 0) return FAIL("mount tmpfs root", "/tmp");
	if (mkdir("/tmp" WARD_OLD_ROOT, 0700) < 0) return FAIL("mkdir", "/tmp" WARD_OLD_ROOT);
	// pivot_root(new, put_old): the tmpfs becomes "/", the host's root
	// moves to WARD_OLD_ROOT. Both must be mount points, not shared.
	if (syscall(SYS_pivot_root, "/tmp", "/tmp" WARD_OLD_ROOT) < 0) return FAIL("pivot_root", "/tmp");
	// The cwd still points into the host's tree: leave it.
	if (chdir("/") < 0) return FAIL("chdir", "/");
	return 0;
}

// enter-rootfs (an OCI container's root) attaches the rootfs, the detached
// clone the parent made of it (idmapped where it had to be), at
// WARD_ROOTFS_DIR in the root tmpfs and chroots into it: the plan's paths,
// and the rootfs's own absolute symlinks, resolve within it. The root
// tmpfs, the host's root beneath it, stays open as out->stage_fd for
// bind_host until leave-rootfs-chroot. Nothing is made in the rootfs here.
static int enter_rootfs(const struct ward_root *r, struct ward_root_out *out) {
	if (mkdir(WARD_ROOTFS_DIR, 0755) < 0) return FAIL("mkdir", WARD_ROOTFS_DIR);
	if (syscall(SYS_move_mount, r->rootfs_fd, "", AT_FDCWD, WARD_ROOTFS_DIR, MOVE_MOUNT_F_EMPTY_PATH) < 0)
		return FAIL("move_mount the rootfs", WARD_ROOTFS_DIR);
	int fd = open("/", O_PATH | O_DIRECTORY | O_CLOEXEC);
	if (fd < 0) return FAIL("open", "/");
	out->stage_fd = fd;
	if (chdir(WARD_ROOTFS_DIR) < 0) return FAIL("chdir", WARD_ROOTFS_DIR);
	if (chroot(".") < 0) return FAIL("chroot", WARD_ROOTFS_DIR);
	return 0;
}

// leave-rootfs-chroot, once the plan is built, goes back to the root
// tmpfs as root, the working directory the rootfs: what runs until the
// pivot (the createContainer hooks) finds the host's root at
// WARD_OLD_ROOT and the container's root at ".", as with a tmpfs root.
static int leave_rootfs_chroot(const struct ward_root *r, struct ward_root_out *out) {
	(void)r;
	if (fchdir(out->stage_fd) < 0 || chroot(".") < 0) return FAIL("chroot back", "/");
	close(out->stage_fd);
	out->stage_fd = -1;
	if (chdir(WARD_ROOTFS_DIR) < 0) return FAIL("chdir", WARD_ROOTFS_DIR);
	return 0;
}

// pivot-into-rootfs makes the rootfs the root, as runc does: from the
// rootfs, pivot_root(".", ".") puts the root tmpfs on top of it, and a
// lazy unmount of that detaches the root tmpfs with the host's root
// beneath it, all at once. Then / gets the plan's propagation.
static int pivot_into_rootfs(const struct ward_root *r, struct ward_root_out *out) {
	if (chdir(WARD_ROOTFS_DIR) < 0) return FAIL("chdir", WARD_ROOTFS_DIR);
	if (syscall(SYS_pivot_root, ".", ".") < 0) return FAIL("pivot_root", WARD_ROOTFS_DIR);
	if (umount2(".", MNT_DETACH) < 0) return FAIL("umount the old root", "/");
	if (chdir("/") < 0) return FAIL("chdir", "/");
	static const unsigned long props[] = {0, MS_PRIVATE, MS_SLAVE, MS_SHARED, MS_UNBINDABLE};
	unsigned long prop = props[(r->flags & WARD_ROOT_PROP_MASK) >> 6];
	if (prop && (r->flags & WARD_ROOT_PROP_REC)) prop |= MS_REC;
	if (prop && mount("", "/", "", prop, "") < 0) return FAIL("set the rootfs's propagation", "/");
	return 0;
}

// seal-rootfs makes an OCI container's / read-only (root.readonly); the
// mounts on it keep their own.
static int seal_rootfs(const struct ward_root *r, struct ward_root_out *out) {
	(void)r;
	return seal("/", out);
}

// build-root runs the plan's operations in order inside the new root.
static int build_root(const struct ward_root *r, struct ward_root_out *out) {
	struct ward_root_cursor c = ward_root_list(r, r->ops);
	struct ward_root_op op;
	for (uint32_t i = 0; i < r->nops; i++) {
		if (ward_root_next_op(&c, &op)) return ward_root_fail(out, "plan", "", EINVAL);
		int e = apply(&op, out);
		if (e) return e;
	}
	return 0;
}

// hide-overlay-layers lazily unmounts the overlays' layer tmpfs (the
// overlays keep it alive) and removes its mount point, so the program
// reaches the layers only through the overlays. With --overlay-keep it
// first opens, and hands back, the upper layers' root.
static int hide_overlay_layers(const struct ward_root *r, struct ward_root_out *out) {
	int fd = -1;
	if ((r->flags & WARD_ROOT_KEEP_UPPER) &&
	    (fd = open(WARD_OVERLAY_DIR "/upper", O_PATH | O_DIRECTORY | O_CLOEXEC)) < 0)
		return FAIL("open", WARD_OVERLAY_DIR "/upper");
	int e = 0;
	if (umount2(WARD_OVERLAY_DIR, MNT_DETACH) < 0) e = FAIL("umount", WARD_OVERLAY_DIR);
	else if (rmdir(WARD_OVERLAY_DIR) < 0) e = FAIL("rmdir", WARD_OVERLAY_DIR);
	if (e) {
		if (fd >= 0) close(fd);
		return e;
	}
	out->upper_fd = fd;
	return 0;
}

// detach-host-root makes the host's root unreachable: lazily unmount it
// (its mounts are locked together in a user namespace, so all at once) and
// remove the empty mount point.
static int detach_host_root(const struct ward_root *r, struct ward_root_out *out) {
	(void)r;
	if (umount2(WARD_OLD_ROOT, MNT_DETACH) < 0) return FAIL("umount", WARD_OLD_ROOT);
	if (rmdir(WARD_OLD_ROOT) < 0) return FAIL("rmdir", WARD_OLD_ROOT);
	return 0;
}

// seal-root makes the root tmpfs itself read-only; the scratch mounts on
// it stay writable. A write anywhere else fails with EROFS.
static int seal_root(const struct ward_root *r, struct ward_root_out *out) {
	(void)r;
	return seal("/", out);
}

// chown_tree gives everything beneath the directory fd (at path, a buffer
// of WARD_ROOT_MAX_PATH bytes holding len of them) on device dev to
// uid:gid; what is on another mount is left alone, and so is what cannot
// be read. It closes fd.
static int chown_tree(int fd, char *path, size_t len, dev_t dev, const struct ward_root *r, struct ward_root_out *out) {
	char buf[2048];
	int e = 0;
	for (;;) {
		long n = syscall(SYS_getdents64, fd, buf, sizeof(buf));
		if (n < 0 && errno == EINTR) continue;
		if (n <= 0) break;
		for (long off = 0; !e && off < n;) {
			// struct linux_dirent64: ino, off, reclen (u16 at 16), type, name (at 19).
			unsigned short reclen;
			memcpy(&reclen, buf + off + 16, 2);
			const char *name = buf + off + 19;
			off += reclen;
			if (!strcmp(name, ".") || !strcmp(name, "..")) continue;
			size_t l = len + (len > 1) + strlen(name);
			if (l < WARD_ROOT_MAX_PATH) snprintf(path + len, WARD_ROOT_MAX_PATH - len, "%s%s", len > 1 ? "/" : "", name);
			struct stat st;
			if (fstatat(fd, name, &st, AT_SYMLINK_NOFOLLOW) < 0 || st.st_dev != dev) continue;
			if (fchownat(fd, name, r->uid, r->gid, AT_SYMLINK_NOFOLLOW) < 0) e = FAIL("chown", path);
			else if (S_ISDIR(st.st_mode)) {
				int sub = openat(fd, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
				if (sub >= 0) e = chown_tree(sub, path, l < WARD_ROOT_MAX_PATH ? l : len, dev, r, out);
			}
			path[len] = 0;
		}
		if (e) break;
	}
	close(fd);
	return e;
}

// give-root-to-user makes what the plan made in the root tmpfs (not what
// is mounted on it) the sandbox user's, so that with --overlay the program
// may write anywhere in its view.
static int give_root_to_user(const struct ward_root *r, struct ward_root_out *out) {
	char path[WARD_ROOT_MAX_PATH] = "/";
	struct stat st;
	if (lstat("/", &st) < 0) return FAIL("lstat", "/");
	if (lchown("/", r->uid, r->gid) < 0) return FAIL("chown", "/");
	int fd = open("/", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (fd < 0) return 0; // unreadable: nothing more to give
	return chown_tree(fd, path, 1, st.st_dev, r, out);
}

static int is_overlay(const struct ward_root *r) {
	return (r->flags & WARD_ROOT_OVERLAY) != 0;
}
static int is_rootfs(const struct ward_root *r) {
	return r->rootfs_fd > 0;
}
static int tmpfs_root(const struct ward_root *r) {
	return !is_rootfs(r);
}
static int seal_tmpfs(const struct ward_root *r) {
	return !is_overlay(r) && !is_rootfs(r);
}
static int rootfs_ro(const struct ward_root *r) {
	return is_rootfs(r) && (r->flags & WARD_ROOT_ROOTFS_RO);
}
static int have_mounts(const struct ward_root *r) {
	return r->nmounts > 0;
}
static int have_deny(const struct ward_root *r) {
	return r->ndeny > 0;
}
static int have_landlock(const struct ward_root *r) {
	return (r->flags & WARD_ROOT_LANDLOCK) != 0;
}

const struct ward_root_step ward_root_steps[] = {
	{"make-mounts-private", NULL, make_mounts_private},
	{"enter-new-root", NULL, enter_new_root},
	// An OCI container's root is its rootfs, built in place.
	{"enter-rootfs", is_rootfs, enter_rootfs},
	{"build-root", NULL, build_root},
	{"leave-rootfs-chroot", is_rootfs, leave_rootfs_chroot},
	{"hide-overlay-layers", is_overlay, hide_overlay_layers},
	// An unprivileged caller passes its sources themselves: they are
	// cloned here, while the host's root is still reachable.
	{"clone-user-paths", ward_root_any_clone, ward_root_clone_user_paths},
	{"detach-host-root", tmpfs_root, detach_host_root},
	{"pivot-into-rootfs", is_rootfs, pivot_into_rootfs},
	{"mount-user-paths", have_mounts, ward_root_mount_user_paths},
	{"mask-denied", have_deny, ward_root_mask_denied},
	{"seal-root", seal_tmpfs, seal_root},
	{"seal-rootfs", rootfs_ro, seal_rootfs},
	{"give-root-to-user", is_overlay, give_root_to_user},
	// The second layer, built from the policy once every mount is in
	// place; the program's process enforces it (spawn_linux.c).
	{"build-landlock", have_landlock, ward_root_landlock},
};
const int ward_root_nsteps = sizeof(ward_root_steps) / sizeof(ward_root_steps[0]);
