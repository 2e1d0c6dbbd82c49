// The user's paths (--allow-read, --allow-write, --mount, --workspace):
// clone-user-paths, for an ordinary user's sources, while the host's root
// is still reachable; mount-user-paths, after it is gone. The parent
// resolved, opened and (as root) cloned each path on the host; here each
// detached tree is attached at a target made beneath the new root without
// following any symlink, checked, and its sockets hidden.

#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <linux/openat2.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "root_impl_linux.h"


#define FAIL(what, path) ward_root_fail(out, what, path, errno)

// open_beneath opens path with openat2 beneath dfd, O_PATH, with resolve.
static int open_beneath(int dfd, const char *path, uint64_t resolve) {
	struct open_how how = {.flags = O_PATH | O_CLOEXEC, .resolve = resolve};
	return (int)syscall(SYS_openat2, dfd, path, &how, sizeof(how));
}

// clone_one clones m's source (at m->fd, an O_PATH fd the caller opened)
// into a detached tree limited like the parent limits a clone, and puts it
// at m->fd's number.
static int clone_one(int old, const struct ward_root_mount *m, struct ward_root_out *out) {
	// Opened again by its resolved path beneath the old root, refusing
	// every symlink: it must be the very file the caller opened.
	char clean[WARD_ROOT_MAX_PATH + 2];
	ward_clean(m->src, strlen(m->src), clean);
	const char *rel = clean[0] == '/' ? clean + 1 : clean;
	int src = open_beneath(old, rel, RESOLVE_IN_ROOT | RESOLVE_NO_SYMLINKS | RESOLVE_NO_MAGICLINKS);
	if (src < 0) return FAIL("open again (no symlinks allowed)", m->src);
	struct stat want, got;
	int e = fstat(m->fd, &want) < 0 || fstat(src, &got) < 0 ? errno : 0;
	if (!e && (want.st_dev != got.st_dev || want.st_ino != got.st_ino)) e = ESTALE;
	if (e) {
		close(src);
		return ward_root_fail(out, "check it is what the caller opened", m->src, e);
	}
	int tree = (int)syscall(SYS_open_tree, src, "", OPEN_TREE_CLONE | O_CLOEXEC | AT_RECURSIVE | AT_EMPTY_PATH);
	e = errno;
	close(src);
	if (tree < 0) return ward_root_fail(out, "clone the mount of", m->src, e);
	uint64_t attrs = MOUNT_ATTR_NOSUID | MOUNT_ATTR_NODEV;
	if (!(m->flags & WARD_MOUNT_RW)) attrs |= MOUNT_ATTR_RDONLY;
	if (m->flags & WARD_MOUNT_NOEXEC) attrs |= MOUNT_ATTR_NOEXEC;
	if ((e = ward_root_setattr(tree, "", AT_EMPTY_PATH | AT_RECURSIVE, attrs))) {
		close(tree);
		return ward_root_fail(out, "limit the mount of", m->src, e);
	}
	e = dup3(tree, m->fd, O_CLOEXEC) < 0 ? errno : 0;
	close(tree);
	return e ? ward_root_fail(out, "dup the clone of", m->src, e) : 0;
}

// clone-user-paths makes each CLONE mount's detached tree while the host's
// root is still reachable (an unprivileged caller could not: cloning a
// mount needs CAP_SYS_ADMIN over its mount namespace, which the init has
// over its own copy).
int ward_root_clone_user_paths(const struct ward_root *r, struct ward_root_out *out) {
	int old = open(WARD_OLD_ROOT, O_PATH | O_DIRECTORY | O_CLOEXEC);
	if (old < 0) return FAIL("open", WARD_OLD_ROOT);
	struct ward_root_cursor c = ward_root_list(r, r->mounts);
	struct ward_root_mount m;
	int e = 0;
	for (uint32_t i = 0; !e && i < r->nmounts; i++) {
		if (ward_root_next_mount(&c, &m)) e = ward_root_fail(out, "plan", "", EINVAL);
		else if (m.flags & WARD_MOUNT_CLONE) e = clone_one(old, &m, out);
	}
	close(old);
	return e;
}

int ward_root_any_clone(const struct ward_root *r) {
	struct ward_root_cursor c = ward_root_list(r, r->mounts);
	struct ward_root_mount m;
	for (uint32_t i = 0; i < r->nmounts; i++)
		if (ward_root_next_mount(&c, &m) == 0 && (m.flags & WARD_MOUNT_CLONE)) return 1;
	return 0;
}

// Every lookup of a user mount's target stays in the new root and refuses
// any symlink: a link planted in a shared writable directory (by another
// sandbox, while this one is being set up) cannot redirect a mount.
// RESOLVE_NO_XDEV is left out: a component may be an existing mount point.
#define TARGET_RESOLVE (RESOLVE_IN_ROOT | RESOLVE_NO_SYMLINKS | RESOLVE_NO_MAGICLINKS)

// open_target creates dst (a directory, or an empty file) and its parents
// beneath root, one component at a time, and returns an O_PATH fd of it
// (or minus the errno, out filled in).
static int open_target(int root, const char *dst, int dir, struct ward_root_out *out) {
	char path[WARD_ROOT_MAX_PATH + 2];
	ward_clean(dst, strlen(dst), path);
	char *name = path[0] == '/' ? path + 1 : path;
	int cur = dup(root);
	if (cur < 0) return -ward_root_fail(out, "dup", "/", errno);
	for (;;) {
		char *slash = strchr(name, '/');
		int last = slash == NULL, e = 0;
		if (slash) *slash = 0;
		int fd = open_beneath(cur, name, TARGET_RESOLVE);
		if (fd < 0 && errno == ENOENT) {
			if (!last || dir) {
				if (mkdirat(cur, name, 0755) < 0) e = errno;
			} else {
				int f = openat(cur, name, O_CREAT | O_EXCL | O_WRONLY | O_NOFOLLOW | O_CLOEXEC, 0444);
				if (f < 0) e = errno;
				else close(f);
			}
			if (e && e != EEXIST) {
				close(cur);
				return -ward_root_fail(out, "create mount point", dst, e);
			}
			fd = open_beneath(cur, name, TARGET_RESOLVE);
		}
		e = errno;
		close(cur);
		if (fd < 0) return -ward_root_fail(out, "open mount point (no symlinks allowed)", dst, e);
		if (last) return fd;
		cur = fd;
		name = slash + 1;
	}
}

// hide_socket covers a unix socket with an empty read-only file: a socket
// is a way out of any sandbox (docker.sock, dbus, X11). One gone or
// replaced since the parent looked is left alone.
static int hide_socket(const char *path, struct ward_root_out *out) {
	struct stat st;
	if (lstat(path, &st) < 0 || !S_ISSOCK(st.st_mode)) return 0;
	if (mount("/dev/null", path, "", MS_BIND, "") < 0) return FAIL("hide socket", path);
	int e = ward_root_setattr(AT_FDCWD, path, AT_SYMLINK_NOFOLLOW, MOUNT_ATTR_RDONLY | MOUNT_ATTR_NOSUID | MOUNT_ATTR_NODEV | MOUNT_ATTR_NOEXEC);
	return e ? ward_root_fail(out, "hide socket", path, e) : 0;
}

// mount_one attaches m at its target, checks it is read-only when it must
// be, and hides the sockets found in it.
static int mount_one(int root, const struct ward_root_mount *m, const char *end, struct ward_root_out *out) {
	int target = open_target(root, m->dst, m->flags & WARD_MOUNT_DIR, out);
	if (target < 0) return -target;
	int e = syscall(SYS_move_mount, m->fd, "", target, "", MOVE_MOUNT_F_EMPTY_PATH | MOVE_MOUNT_T_EMPTY_PATH) < 0 ? errno : 0;
	close(target);
	// ENOENT: the mount point was removed since it was made.
	if (e) return ward_root_failf(out, m->dst, e, "move_mount %s onto the mount point", m->src);
	if ((e = ward_root_check_ro(m->dst, !(m->flags & WARD_MOUNT_RW), out))) return e;
	struct ward_root_cursor c = {m->sockets, end};
	for (uint32_t i = 0; i < m->nsockets; i++) {
		const char *s;
		char path[2 * WARD_ROOT_MAX_PATH + 2];
		if (ward_root_next_str(&c, &s)) return ward_root_fail(out, "plan", m->dst, EINVAL);
		snprintf(path, sizeof(path), "%s/%s", strcmp(m->dst, "/") ? m->dst : "", s);
		char clean[sizeof(path) + 2];
		ward_clean(path, strlen(path), clean);
		if ((e = hide_socket(clean, out))) return e;
	}
	return 0;
}

// mount-user-paths attaches the user's mounts in order, after the host's
// root is gone.
int ward_root_mount_user_paths(const struct ward_root *r, struct ward_root_out *out) {
	int root = open("/", O_PATH | O_DIRECTORY | O_CLOEXEC);
	if (root < 0) return FAIL("open", "/");
	struct ward_root_cursor c = ward_root_list(r, r->mounts);
	struct ward_root_mount m;
	int e = 0;
	for (uint32_t i = 0; !e && i < r->nmounts; i++) {
		if (ward_root_next_mount(&c, &m)) e = ward_root_fail(out, "plan", "", EINVAL);
		else e = mount_one(root, &m, r->end, out);
	}
	close(root);
	return e;
}
