// The root plan's bytes, as Go's packRoot (rootplan.go) writes them and the
// init reads them. The init never trusts them: every length, count, flag
// and string is checked against the buffer before any step runs, and the
// encoding is canonical (padding and unknown flags must be zero), so an
// accepted plan packed again is the same bytes (the fuzz target's check).
//
// All integers are in the machine's byte order (both sides are the same
// binary, on the same machine), at any alignment. A string is its length
// (u32), its bytes, and a NUL: C points into the buffer. A path holds no
// NUL and fewer than WARD_ROOT_MAX_PATH bytes; a file's content may be
// longer and hold NULs (its length counts).
//
//	header (64 bytes):
//	  0 magic "wardroot"   8 u32 version   12 u32 size (of the whole plan)
//	 16 u32 flags          20 i32 uid      24 i32 gid   28 i32 rootfs_fd
//	 32 u64 root_size      40 u32 nops     44 u32 nmounts  48 u32 ndeny
//	 52 u32 nkeep          56 u32 nrules   60 u32 nports
//	then the lists, in that order:
//	  op:    u8 kind, u8 flags, u16 zero, u32 mode, i32 src_fd, i32 uid,
//	         i32 gid, str src, str dst, str link, str data, str content
//	  mount: u8 flags, u8[3] zero, i32 fd, u32 nsockets, str src, str dst,
//	         nsockets x str socket (relative)
//	  deny:  str pattern (absolute)      keep: str path (absolute)
//	  rule:  u64 access, str path (absolute)
//	  port:  u32 port (< 65536)

#define _GNU_SOURCE
#include <errno.h>
#include <string.h>
#include <sys/mount.h>

#include "root_linux.h"

// reader takes fixed-size values and strings from [p, end).
struct reader {
	const char *p, *end;
};

static int take(struct reader *rd, void *v, size_t n) {
	if ((size_t)(rd->end - rd->p) < n) return -EINVAL;
	memcpy(v, rd->p, n);
	rd->p += n;
	return 0;
}

// take_str reads a string of at most max bytes: its length, the bytes and
// a NUL; with path, no NUL inside.
static int take_str(struct reader *rd, const char **s, uint32_t *len, uint32_t max, int path) {
	uint32_t n;
	if (take(rd, &n, 4) || n > max || (size_t)(rd->end - rd->p) <= n || rd->p[n] != 0) return -EINVAL;
	if (path && memchr(rd->p, 0, n)) return -EINVAL;
	*s = rd->p;
	if (len) *len = n;
	rd->p += (size_t)n + 1;
	return 0;
}

static int take_path(struct reader *rd, const char **s) {
	return take_str(rd, s, NULL, WARD_ROOT_MAX_PATH - 1, 1);
}

static int absolute(const char *s) {
	return s[0] == '/';
}

// next runs one record reader on a cursor.
#define NEXT(c, expr)                                  \
	do {                                           \
		struct reader rd = {(c)->p, (c)->end}; \
		int _e = (expr);                       \
		if (_e) return _e;                     \
		(c)->p = rd.p;                         \
		return 0;                              \
	} while (0)

static int read_op(struct reader *rd, struct ward_root_op *op) {
	uint8_t kind, flags;
	uint16_t zero;
	int32_t v[3];
	memset(op, 0, sizeof(*op));
	if (take(rd, &kind, 1) || take(rd, &flags, 1) || take(rd, &zero, 2) || take(rd, &op->mode, 4) || take(rd, v, 12))
		return -EINVAL;
	if (kind < WARD_OP_BIND || kind > WARD_OP_LAST || (flags & ~WARD_OP_FLAGS) || zero) return -EINVAL;
	op->kind = kind;
	op->flags = flags;
	op->src_fd = v[0];
	op->uid = v[1];
	op->gid = v[2];
	if (take_path(rd, &op->src) || take_path(rd, &op->dst) || take_path(rd, &op->link) || take_path(rd, &op->data) ||
	    take_str(rd, &op->content, &op->content_len, WARD_ROOT_MAX_SIZE, 0))
		return -EINVAL;
	// Every op names an absolute target; those that read the host an
	// absolute source; an overlay's clone is a real fd (0: none).
	if (!absolute(op->dst) || op->src_fd < 0) return -EINVAL;
	switch (op->kind) {
	case WARD_OP_BIND:
	case WARD_OP_OVERLAY:
	case WARD_OP_COPY:
		if (!absolute(op->src)) return -EINVAL;
		break;
	case WARD_OP_SYMLINK:
		if (!op->link[0]) return -EINVAL;
		break;
	case WARD_OP_PROPAGATE: {
		// One kind, recursive or not.
		uint32_t kind = op->mode & ~(uint32_t)MS_REC;
		if (kind != MS_SHARED && kind != MS_SLAVE && kind != MS_PRIVATE && kind != MS_UNBINDABLE) return -EINVAL;
		break;
	}
	case WARD_OP_SETATTR:
		if ((op->mode & ~WARD_SETATTR_KNOWN) || ((uint32_t)op->uid & ~WARD_SETATTR_KNOWN)) return -EINVAL;
		break;
	}
	return 0;
}

int ward_root_next_op(struct ward_root_cursor *c, struct ward_root_op *op) {
	NEXT(c, read_op(&rd, op));
}

// read_mount reads a user mount and checks its sockets (relative paths).
static int read_mount(struct reader *rd, struct ward_root_mount *m) {
	uint8_t flags, zero[3];
	int32_t fd;
	memset(m, 0, sizeof(*m));
	if (take(rd, &flags, 1) || take(rd, zero, 3) || take(rd, &fd, 4) || take(rd, &m->nsockets, 4)) return -EINVAL;
	if ((flags & ~WARD_MOUNT_FLAGS) || zero[0] || zero[1] || zero[2] || fd < 0 || m->nsockets > WARD_ROOT_MAX_COUNT)
		return -EINVAL;
	m->flags = flags;
	m->fd = fd;
	if (take_path(rd, &m->src) || take_path(rd, &m->dst) || !absolute(m->dst)) return -EINVAL;
	m->sockets = rd->p;
	for (uint32_t i = 0; i < m->nsockets; i++) {
		const char *s;
		if (take_path(rd, &s) || !s[0] || absolute(s)) return -EINVAL;
	}
	return 0;
}

int ward_root_next_mount(struct ward_root_cursor *c, struct ward_root_mount *m) {
	NEXT(c, read_mount(&rd, m));
}

int ward_root_next_str(struct ward_root_cursor *c, const char **s) {
	NEXT(c, take_path(&rd, s));
}

static int read_rule(struct reader *rd, uint64_t *access, const char **path) {
	if (take(rd, access, 8) || take_path(rd, path) || !absolute(*path)) return -EINVAL;
	return 0;
}

int ward_root_next_rule(struct ward_root_cursor *c, uint64_t *access, const char **path) {
	NEXT(c, read_rule(&rd, access, path));
}

static int read_port(struct reader *rd, uint32_t *port) {
	if (take(rd, port, 4) || *port > 65535) return -EINVAL;
	return 0;
}

int ward_root_next_port(struct ward_root_cursor *c, uint32_t *port) {
	NEXT(c, read_port(&rd, port));
}

// read_abs reads an absolute path (deny patterns, kept paths).
static int read_abs(struct reader *rd, const char **s) {
	if (take_path(rd, s) || !absolute(*s)) return -EINVAL;
	return 0;
}

// check_list runs n records of one kind through its reader and returns
// where the list starts; -EINVAL on the first that is malformed.
static int check_list(struct reader *rd, uint32_t n, int kind, const char **first) {
	*first = rd->p;
	for (uint32_t i = 0; i < n; i++) {
		struct ward_root_op op;
		struct ward_root_mount m;
		const char *s;
		uint64_t access;
		uint32_t port;
		int e = -EINVAL;
		switch (kind) {
		case 0: e = read_op(rd, &op); break;
		case 1: e = read_mount(rd, &m); break;
		case 2:
		case 3: e = read_abs(rd, &s); break;
		case 4: e = read_rule(rd, &access, &s); break;
		case 5: e = read_port(rd, &port); break;
		}
		if (e) return e;
	}
	return 0;
}

int ward_unpack_root(const char *buf, size_t n, struct ward_root *r) {
	struct reader rd = {buf, buf + n};
	char magic[8];
	uint32_t version, size, counts[6];
	memset(r, 0, sizeof(*r));
	if (n < WARD_ROOT_HEADER || n > WARD_ROOT_MAX_SIZE) return -EINVAL;
	take(&rd, magic, 8);
	take(&rd, &version, 4);
	take(&rd, &size, 4);
	take(&rd, &r->flags, 4);
	take(&rd, &r->uid, 4);
	take(&rd, &r->gid, 4);
	take(&rd, &r->rootfs_fd, 4);
	take(&rd, &r->root_size, 8);
	take(&rd, counts, sizeof(counts));
	if (memcmp(magic, WARD_ROOT_MAGIC, 8) || version != WARD_ROOT_VERSION || size != n ||
	    (r->flags & ~WARD_ROOT_FLAGS) || r->root_size > INT64_MAX)
		return -EINVAL;
	// A rootfs is a clone the parent passed (never stdio), for a root
	// without overlays; read-only and a propagation only with one, and one
	// of the four kinds.
	uint32_t prop = r->flags & WARD_ROOT_PROP_MASK;
	if (r->rootfs_fd < 0 || (r->rootfs_fd > 0 && r->rootfs_fd <= 2) || prop > WARD_ROOT_PROP_UNBINDABLE ||
	    (!r->rootfs_fd && (r->flags & (WARD_ROOT_ROOTFS_RO | WARD_ROOT_PROP_MASK | WARD_ROOT_PROP_REC))) ||
	    (r->rootfs_fd && (r->flags & WARD_ROOT_OVERLAY)) || ((r->flags & WARD_ROOT_PROP_REC) && !prop)) {
		memset(r, 0, sizeof(*r));
		return -EINVAL;
	}
	for (int i = 0; i < 6; i++)
		if (counts[i] > WARD_ROOT_MAX_COUNT) return -EINVAL;
	r->nops = counts[0], r->nmounts = counts[1], r->ndeny = counts[2];
	r->nkeep = counts[3], r->nrules = counts[4], r->nports = counts[5];
	// Rules and ports only with Landlock, ports only with its network
	// part; upper layers to keep only with overlays.
	if (((r->nrules || (r->flags & WARD_ROOT_LANDLOCK_NET)) && !(r->flags & WARD_ROOT_LANDLOCK)) ||
	    (r->nports && !(r->flags & WARD_ROOT_LANDLOCK_NET)) ||
	    ((r->flags & WARD_ROOT_KEEP_UPPER) && !(r->flags & WARD_ROOT_OVERLAY)))
		return -EINVAL;
	const char **lists[6] = {&r->ops, &r->mounts, &r->deny, &r->keep, &r->rules, &r->ports};
	for (int i = 0; i < 6; i++) {
		int e = check_list(&rd, counts[i], i, lists[i]);
		if (e) {
			memset(r, 0, sizeof(*r));
			return e;
		}
	}
	if (rd.p != rd.end) {
		memset(r, 0, sizeof(*r));
		return -EINVAL;
	}
	r->end = rd.end;
	return 0;
}
