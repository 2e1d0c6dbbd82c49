// Shared by root_linux.c, root_glob_linux.c and root_landlock_linux.c:
// not part of the interface (root_linux.h).
#ifndef WARD_ROOT_IMPL_LINUX_H
#define WARD_ROOT_IMPL_LINUX_H
#include <stddef.h>
#include <stdint.h>
#include <sys/mount.h>
#include <sys/syscall.h>

#include "root_linux.h"

// The system calls glibc may lack wrappers for (the same numbers on every
// architecture since 5.x's unified table).
#ifndef SYS_open_tree
#define SYS_open_tree 428
#endif
#ifndef SYS_move_mount
#define SYS_move_mount 429
#endif
#ifndef SYS_openat2
#define SYS_openat2 437
#endif
#ifndef SYS_mount_setattr
#define SYS_mount_setattr 442
#endif
#ifndef SYS_landlock_create_ruleset
#define SYS_landlock_create_ruleset 444
#endif
#ifndef SYS_landlock_add_rule
#define SYS_landlock_add_rule 445
#endif
// Their flags, where <sys/mount.h> is older.
#ifndef MOUNT_ATTR_RDONLY
#define MOUNT_ATTR_RDONLY 0x1
#define MOUNT_ATTR_NOSUID 0x2
#define MOUNT_ATTR_NODEV 0x4
#define MOUNT_ATTR_NOEXEC 0x8
#endif
#ifndef AT_RECURSIVE
#define AT_RECURSIVE 0x8000
#endif
#ifndef OPEN_TREE_CLONE
#define OPEN_TREE_CLONE 1
#endif
#ifndef MOVE_MOUNT_F_EMPTY_PATH
#define MOVE_MOUNT_F_EMPTY_PATH 0x4
#define MOVE_MOUNT_T_EMPTY_PATH 0x40
#endif

// ward_root_fail fills out's what and path and returns err (positive).
int ward_root_fail(struct ward_root_out *out, const char *what, const char *path, int err);
// ward_root_failf is ward_root_fail with what formatted (printf).
int ward_root_failf(struct ward_root_out *out, const char *path, int err, const char *fmt, ...)
	__attribute__((format(printf, 4, 5)));

// ward_root_setattr sets attrs (MOUNT_ATTR_*) on the mount at path beneath
// dfd with flags (AT_RECURSIVE: the whole subtree): 0 or an errno.
// ward_root_check_ro (when want) fails with EROFS a mount that is not
// read-only: a flag that silently did not apply.
int ward_root_setattr(int dfd, const char *path, unsigned flags, uint64_t attrs);
int ward_root_check_ro(const char *path, int want, struct ward_root_out *out);

// ward_root_mask hides dst (inside): an empty read-only tmpfs over a
// directory, the sandbox's /dev/null over anything else; nothing when dst
// is not there. The plan's mask op, and mask-denied's.
int ward_root_mask(const char *dst, struct ward_root_out *out);

// A list of strings (each NUL-terminated, back to back) in memory of its
// own (mmap: no malloc in the init). Zero is an empty list.
struct ward_strs {
	char *p;
	size_t len, cap, n;
};
int ward_strs_add(struct ward_strs *l, const char *s, size_t n); // 0 or -ENOMEM
void ward_strs_free(struct ward_strs *l);
// ward_strs_next is the string after prev (NULL: the first), NULL after the last.
const char *ward_strs_next(const struct ward_strs *l, const char *prev);

// Go's path/filepath, for mask-denied's exact behaviour: Glob (matches in
// Go's order; -EINVAL for a bad pattern, -ENOMEM), EvalSymlinks (into out
// of size bytes; 0 or an errno) and Clean (out holds n+2 bytes; its length).
int ward_glob(const char *pattern, struct ward_strs *out);
int ward_eval_symlinks(const char *path, char *out, size_t size);
size_t ward_clean(const char *in, size_t n, char *out);
// ward_sort_names sorts n strings, given as offsets into base, bytewise.
void ward_sort_names(size_t *idx, size_t n, const char *base);

// The steps in files of their own: clone-user-paths (when any mount is a
// CLONE) and mount-user-paths (root_user_linux.c), mask-denied
// (root_glob_linux.c), build-landlock (root_landlock_linux.c).
int ward_root_any_clone(const struct ward_root *r);
int ward_root_clone_user_paths(const struct ward_root *r, struct ward_root_out *out);
int ward_root_mount_user_paths(const struct ward_root *r, struct ward_root_out *out);
int ward_root_mask_denied(const struct ward_root *r, struct ward_root_out *out);
int ward_root_landlock(const struct ward_root *r, struct ward_root_out *out);

#endif
