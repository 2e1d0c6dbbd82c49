// The sandbox's root, built in C (root_linux.c) from a plan Go packs
// (rootplan.go's packRoot). See root_plan_linux.c for the plan's bytes.
#ifndef WARD_ROOT_LINUX_H
#define WARD_ROOT_LINUX_H
#include <stddef.h>
#include <stdint.h>

// Where the host's root stays while the root is built, and where the
// overlays' layers live until hide-overlay-layers (fs.OverlayDir in Go,
// which plans the overlays' tmpfs there).
#define WARD_OLD_ROOT "/.oldroot"
#define WARD_OVERLAY_DIR "/.ward-overlay"
// Where an OCI container's rootfs is attached in the root tmpfs while the
// plan is built in it (enter-rootfs), before it becomes the root.
#define WARD_ROOTFS_DIR "/.ward-rootfs"

// The plan's header: magic, version, and its whole size.
#define WARD_ROOT_MAGIC "wardroot" // 8 bytes, no NUL
#define WARD_ROOT_VERSION 1
#define WARD_ROOT_HEADER 64
// Bounds no real plan comes near: its size, each list's length, a path's
// (or mount data's) length. Longer is malformed.
#define WARD_ROOT_MAX_SIZE (64u << 20)
#define WARD_ROOT_MAX_COUNT (1u << 20)
#define WARD_ROOT_MAX_PATH 4096 // a path holds fewer bytes than this

// The plan's flags.
#define WARD_ROOT_OVERLAY 1u      // the system view is writable (--overlay)
#define WARD_ROOT_SESSION 2u      // a long-lived sandbox: no stdio rule
#define WARD_ROOT_KEEP_UPPER 4u   // --overlay-keep: hand back the upper layers
#define WARD_ROOT_LANDLOCK 8u     // build a Landlock ruleset
#define WARD_ROOT_LANDLOCK_NET 16u // and restrict TCP connect to the ports
// With a rootfs (an OCI container's root, rootfs_fd): / is made read-only
// at the end; and the propagation / gets after the pivot (none: private,
// as every mount), one of four kinds, recursive with PROP_REC.
#define WARD_ROOT_ROOTFS_RO 32u
#define WARD_ROOT_PROP_MASK (7u << 6)
#define WARD_ROOT_PROP_PRIVATE (1u << 6)
#define WARD_ROOT_PROP_SLAVE (2u << 6)
#define WARD_ROOT_PROP_SHARED (3u << 6)
#define WARD_ROOT_PROP_UNBINDABLE (4u << 6)
#define WARD_ROOT_PROP_REC 512u
#define WARD_ROOT_FLAGS 1023u

// An operation's kind (fs.Kind in Go).
enum {
	WARD_OP_BIND = 1, // bind host src at dst (recursively), read-only unless RW
	// A new file system's source (mount(2)'s, in /proc/self/mountinfo) is
	// src, or its type when src is "".
	WARD_OP_TMPFS,    // a tmpfs at dst with mount data
	WARD_OP_PROC,     // a new procfs at dst
	WARD_OP_DEVPTS,   // a new devpts instance at dst, with data
	WARD_OP_SYMLINK,  // a symlink at dst pointing to link
	WARD_OP_FILE,     // a file at dst holding content, mode
	WARD_OP_MASK,     // hide dst: /dev/null over a file, an empty read-only tmpfs over a dir
	WARD_OP_REBIND,   // bind dst onto itself read-only
	WARD_OP_SEAL,     // make the mount at dst read-only (not recursive)
	WARD_OP_OVERLAY,  // an overlay at dst: host src (or src_fd) below, a layer above
	WARD_OP_COPY,     // copy the host file src to dst
	WARD_OP_SYSFS,    // a new sysfs at dst, read-only unless RW (the host's /sys bound read-only where the kernel refuses one)
	WARD_OP_MQUEUE,   // a new mqueue file system at dst
	WARD_OP_PROPAGATE, // set the propagation mode (MS_SHARED, MS_SLAVE, MS_PRIVATE or MS_UNBINDABLE, with MS_REC) on the mount at dst
	WARD_OP_SETATTR,  // mount_setattr(AT_RECURSIVE) on the mount at dst: mode the MOUNT_ATTR_* to set, uid (its bits) those to clear
	WARD_OP_LAST = WARD_OP_SETATTR,
};

// The MOUNT_ATTR_* a setattr op may set or clear: read-only, nosuid,
// nodev, noexec, the atime modes, nodiratime, nosymfollow.
#define WARD_SETATTR_KNOWN 0x2000ffu

// An operation's flags.
#define WARD_OP_RW 1u     // writable
#define WARD_OP_DEV 2u    // a bind keeps device access (no nodev)
#define WARD_OP_EXEC 4u   // a tmpfs allows exec
#define WARD_OP_NOEXEC 8u // a bind gets noexec
#define WARD_OP_COPYUP 16u // a tmpfs starts with a copy of what was at dst (OCI's tmpcopyup)
#define WARD_OP_FLAGS 31u

// A user mount's flags (fs.UserMount).
#define WARD_MOUNT_RW 1u     // stays writable
#define WARD_MOUNT_DIR 2u    // a directory (else a file)
#define WARD_MOUNT_CLONE 4u  // fd is the source itself: clone-user-paths clones it
#define WARD_MOUNT_NOEXEC 8u // (with CLONE) the clone gets noexec
#define WARD_MOUNT_FLAGS 15u

// A parsed root plan; its pointers point into the buffer given to
// ward_unpack_root, which must outlive it. Each list is read with a
// cursor (below): nops operations, nmounts user mounts, ndeny deny
// patterns, nkeep paths a deny pattern never hides, nrules Landlock rules,
// nports TCP ports.
struct ward_root {
	uint32_t flags;
	int uid, gid;         // the sandbox user (owner of the overlays' upper layers)
	int rootfs_fd;        // an OCI container's rootfs, a detached clone the parent made (0: the root is a tmpfs)
	uint64_t root_size;   // the root tmpfs's size in bytes (0: small)
	uint32_t nops, nmounts, ndeny, nkeep, nrules, nports;
	const char *ops, *mounts, *deny, *keep, *rules, *ports; // each list's first record
	const char *end;      // the end of the buffer
};

// ward_unpack_root parses the packed plan (made by Go's packRoot)
// defensively: 0, or -EINVAL when buf is malformed (bad magic, version,
// length, string, flag or count). Every record is checked here, so the
// cursors below cannot fail on what it accepted.
int ward_unpack_root(const char *buf, size_t n, struct ward_root *r);

// One operation of the plan (fs.Op); unused strings are "".
struct ward_root_op {
	int kind;
	unsigned flags;
	uint32_t mode;  // a file's permission bits
	int src_fd;     // overlay: the lower layer's detached clone (0: none, use src)
	int uid, gid;   // overlay: the upper layer's owner
	const char *src, *dst, *link, *data, *content;
	uint32_t content_len;
};

// One user mount (fs.UserMount): the detached tree (or, with CLONE, the
// source) at fd, attached at dst; nsockets unix sockets beneath it
// (relative paths) to hide, read with ward_root_next_str from sockets.
struct ward_root_mount {
	unsigned flags;
	int fd;
	uint32_t nsockets;
	const char *src, *dst;
	const char *sockets;
};

// A cursor over one list of a plan ward_unpack_root accepted.
struct ward_root_cursor {
	const char *p, *end;
};

static inline struct ward_root_cursor ward_root_list(const struct ward_root *r, const char *first) {
	struct ward_root_cursor c = {first, r->end};
	return c;
}

// Each reads the record at the cursor and moves past it: 0, or -EINVAL
// when it is malformed (never, on an accepted plan's lists).
int ward_root_next_op(struct ward_root_cursor *c, struct ward_root_op *op);
int ward_root_next_mount(struct ward_root_cursor *c, struct ward_root_mount *m);
int ward_root_next_str(struct ward_root_cursor *c, const char **s); // deny, keep, sockets
int ward_root_next_rule(struct ward_root_cursor *c, uint64_t *access, const char **path);
int ward_root_next_port(struct ward_root_cursor *c, uint32_t *port);

// What the root steps hand back to the init.
struct ward_root_out {
	int upper_fd;            // hide-overlay-layers with --overlay-keep: the upper layers' dir (-1: none)
	int landlock_fd;         // build-landlock: the ruleset (-1: none)
	int landlock_abi;        // its ABI (0: none)
	int stage_fd;            // between enter-rootfs and leave-rootfs-chroot: the root tmpfs, where the host's root stays (-1: none)
	char landlock_note[256]; // why there is none, when there is none
	// On failure: the operation ("mount", "mkdir", "pivot_root", ...) with
	// what else it named (a bind's source: "bind /.oldroot/usr").
	char what[WARD_ROOT_MAX_PATH + 64];
	char path[4096];         // on failure: the path it named ("" if none)
};

// ward_root_out_init sets out to "nothing yet" (no fds, no failure).
void ward_root_out_init(struct ward_root_out *out);

// The root steps, in order. when() says whether the step runs for r (NULL:
// always). run() returns 0, or a positive errno with out->what and
// out->path filled in. They run in the init, in the sandbox's new mount
// namespace, with its capabilities; they call no malloc (the init may be a
// raw clone of a threaded process): lists that must grow use mmap. Stack:
// up to about 48 KiB (path buffers), plus about 2.5 KiB per directory level
// of the root tmpfs in give-root-to-user, and 1 KiB per directory level
// (32 at most) of a tmpcopyup's copy.
struct ward_root_step {
	const char *name; // the step's name: setup_ms key and "ward: <step>: <cause>"
	int (*when)(const struct ward_root *r);
	int (*run)(const struct ward_root *r, struct ward_root_out *out);
};
extern const struct ward_root_step ward_root_steps[];
extern const int ward_root_nsteps;

// For the tests (ctest/root_test.c, root_fuzz_linux.go): what Landlock
// handles at an ABI, and the glob that mask-denied uses (Go's
// filepath.Match).
uint64_t ward_landlock_handled_fs(int abi);
int ward_glob_match(const char *pattern, const char *name); // 1, 0, or -EINVAL (bad pattern)

#endif
