// Unit tests of the root builder's C (root_*_linux.c), built with
// AddressSanitizer and UBSan (any finding aborts the test): `make csan`,
// part of `make unit`.
//
// The root plan's parser: a round trip of a plan packed here as Go packs
// it, then every truncation and every byte changed, each in a buffer of
// exactly its size so that a read past the end is caught. The path
// functions of mask-denied (Go's Match and Clean) on tables. Then, as
// root, the steps themselves on a small plan, in a child with a mount
// namespace of its own (nothing of the host's mount table changes).

#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <sys/statvfs.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include "root_impl_linux.h"

static int failures;

#define EXPECT(cond, ...)                                                  \
	do {                                                               \
		if (!(cond)) {                                             \
			failures++;                                        \
			fprintf(stderr, "%s:%d: %s: ", __func__, __LINE__, #cond); \
			fprintf(stderr, __VA_ARGS__);                      \
			fputc('\n', stderr);                               \
		}                                                          \
	} while (0)

// A plan packed by hand, as rootplan.go packs it.
struct plan {
	char b[1 << 16];
	size_t n;
};

static void put(struct plan *p, const void *v, size_t n) {
	if (p->n + n > sizeof(p->b)) abort();
	memcpy(p->b + p->n, v, n);
	p->n += n;
}
static void u8(struct plan *p, uint8_t v) { put(p, &v, 1); }
static void u32(struct plan *p, uint32_t v) { put(p, &v, 4); }
static void u64(struct plan *p, uint64_t v) { put(p, &v, 8); }
static void str(struct plan *p, const char *s) {
	u32(p, (uint32_t)strlen(s));
	put(p, s, strlen(s) + 1);
}

static void header(struct plan *p, uint32_t flags, uint32_t counts[6]) {
	p->n = 0;
	put(p, WARD_ROOT_MAGIC, 8);
	u32(p, WARD_ROOT_VERSION);
	u32(p, 0); // the size, set by finish
	u32(p, flags);
	u32(p, 1000);
	u32(p, 1001);
	u32(p, 0);
	u64(p, 8 << 20);
	for (int i = 0; i < 6; i++) u32(p, counts[i]);
}

static void op(struct plan *p, uint8_t kind, uint8_t flags, const char *src, const char *dst, const char *link, const char *data, const char *content) {
	u8(p, kind);
	u8(p, flags);
	u8(p, 0);
	u8(p, 0);
	u32(p, 0644);
	u32(p, 0);
	u32(p, 1000);
	u32(p, 1001);
	str(p, src);
	str(p, dst);
	str(p, link);
	str(p, data);
	str(p, content);
}

// op_attrs is an op whose mode and uid are its own (propagate, setattr).
static void op_attrs(struct plan *p, uint8_t kind, const char *dst, uint32_t mode, uint32_t uid) {
	u8(p, kind);
	u8(p, 0);
	u8(p, 0);
	u8(p, 0);
	u32(p, mode);
	u32(p, 0);
	u32(p, uid);
	u32(p, 0);
	for (int i = 0; i < 5; i++) str(p, i == 1 ? dst : "");
}

// op_fd is a bind of the parent's clone fd at dst, read-only.
static void op_fd(struct plan *p, const char *src, const char *dst, int32_t fd) {
	op(p, WARD_OP_BIND, 0, src, dst, "", "", "");
	// src_fd is the op's third u32, after kind, flags, padding and mode.
	size_t at = p->n - (20 + 4 + strlen(src) + 1 + 4 + strlen(dst) + 1 + 3 * 5) + 8;
	memcpy(p->b + at, &fd, 4);
}

// set_rootfs puts an OCI rootfs's fd in the header.
static void set_rootfs(struct plan *p, int32_t fd) {
	memcpy(p->b + 28, &fd, 4);
}

static void finish(struct plan *p) {
	uint32_t n = (uint32_t)p->n;
	memcpy(p->b + 12, &n, 4);
}

// sample is a plan with something in every list and field.
static void sample(struct plan *p) {
	uint32_t counts[6] = {3, 2, 1, 2, 2, 2};
	header(p, WARD_ROOT_OVERLAY | WARD_ROOT_KEEP_UPPER | WARD_ROOT_LANDLOCK | WARD_ROOT_LANDLOCK_NET, counts);
	op(p, WARD_OP_BIND, WARD_OP_RW | WARD_OP_NOEXEC, "/srv", "/data", "", "", "");
	op(p, WARD_OP_TMPFS, WARD_OP_RW | WARD_OP_EXEC, "", "/tmp", "", "mode=1777,size=1024", "");
	op(p, WARD_OP_FILE, 0, "", "/etc/hosts", "", "", "127.0.0.1 localhost\n");
	u8(p, WARD_MOUNT_RW | WARD_MOUNT_DIR);
	u8(p, 0), u8(p, 0), u8(p, 0);
	u32(p, 5);
	u32(p, 2);
	str(p, "/home/u/src");
	str(p, "/src");
	str(p, "run/a.sock");
	str(p, "b");
	u8(p, WARD_MOUNT_CLONE);
	u8(p, 0), u8(p, 0), u8(p, 0);
	u32(p, 6);
	u32(p, 0);
	str(p, "/home/u/f");
	str(p, "/in/f");
	str(p, "/etc/*");
	str(p, "/etc/passwd");
	str(p, "/etc/group");
	u64(p, 7);
	str(p, "/");
	u64(p, 2);
	str(p, "/tmp");
	u32(p, 3128);
	u32(p, 53);
	finish(p);
}

// exact copies n bytes of src into a buffer of exactly n bytes.
static char *exact(const char *src, size_t n) {
	char *b = malloc(n ? n : 1);
	if (!b) abort();
	memcpy(b, src, n);
	return b;
}

// read_all reads every list of an accepted plan: none may fail.
static int read_all(const struct ward_root *r) {
	struct ward_root_cursor c = ward_root_list(r, r->ops);
	struct ward_root_op o;
	struct ward_root_mount m;
	const char *s;
	uint64_t access;
	uint32_t port;
	int bad = 0;
	for (uint32_t i = 0; i < r->nops; i++) bad |= ward_root_next_op(&c, &o);
	c = ward_root_list(r, r->mounts);
	for (uint32_t i = 0; i < r->nmounts; i++) {
		bad |= ward_root_next_mount(&c, &m);
		struct ward_root_cursor sc = ward_root_list(r, m.sockets);
		for (uint32_t j = 0; !bad && j < m.nsockets; j++) bad |= ward_root_next_str(&sc, &s);
	}
	c = ward_root_list(r, r->deny);
	for (uint32_t i = 0; i < r->ndeny; i++) bad |= ward_root_next_str(&c, &s);
	c = ward_root_list(r, r->keep);
	for (uint32_t i = 0; i < r->nkeep; i++) bad |= ward_root_next_str(&c, &s);
	c = ward_root_list(r, r->rules);
	for (uint32_t i = 0; i < r->nrules; i++) bad |= ward_root_next_rule(&c, &access, &s);
	c = ward_root_list(r, r->ports);
	for (uint32_t i = 0; i < r->nports; i++) bad |= ward_root_next_port(&c, &port);
	return bad;
}

static void test_round_trip(void) {
	static struct plan p;
	sample(&p);
	char *b = exact(p.b, p.n);
	struct ward_root r;
	EXPECT(ward_unpack_root(b, p.n, &r) == 0, "unpack");
	EXPECT(r.uid == 1000 && r.gid == 1001 && r.root_size == 8 << 20, "ids %d %d size %llu", r.uid, r.gid, (unsigned long long)r.root_size);
	EXPECT(r.nops == 3 && r.nmounts == 2 && r.ndeny == 1 && r.nkeep == 2 && r.nrules == 2 && r.nports == 2, "counts");
	struct ward_root_cursor c = ward_root_list(&r, r.ops);
	struct ward_root_op o;
	EXPECT(ward_root_next_op(&c, &o) == 0 && o.kind == WARD_OP_BIND && o.flags == (WARD_OP_RW | WARD_OP_NOEXEC) &&
	           !strcmp(o.src, "/srv") && !strcmp(o.dst, "/data") && o.mode == 0644 && o.uid == 1000,
	       "op 0");
	EXPECT(ward_root_next_op(&c, &o) == 0 && !strcmp(o.data, "mode=1777,size=1024"), "op 1 %s", o.data);
	EXPECT(ward_root_next_op(&c, &o) == 0 && o.content_len == 20 && !memcmp(o.content, "127.0.0.1", 9), "op 2");
	struct ward_root_mount m;
	c = ward_root_list(&r, r.mounts);
	EXPECT(ward_root_next_mount(&c, &m) == 0 && m.fd == 5 && m.nsockets == 2 && !strcmp(m.dst, "/src"), "mount 0");
	struct ward_root_cursor sc = ward_root_list(&r, m.sockets);
	const char *s;
	EXPECT(ward_root_next_str(&sc, &s) == 0 && !strcmp(s, "run/a.sock"), "socket 0");
	EXPECT(ward_root_next_mount(&c, &m) == 0 && m.fd == 6 && m.flags == WARD_MOUNT_CLONE, "mount 1");
	c = ward_root_list(&r, r.ports);
	uint32_t port;
	EXPECT(ward_root_next_port(&c, &port) == 0 && port == 3128, "port %u", port);
	EXPECT(read_all(&r) == 0, "lists");
	free(b);
}

// test_malformed: every truncation (its size field saying so), a byte
// more, and every byte changed: refused, or (a change that still makes
// sense, in a string) accepted with lists that read back whole.
static void test_malformed(void) {
	static struct plan p;
	sample(&p);
	struct ward_root r;
	for (size_t n = 0; n < p.n; n++) {
		char *b = exact(p.b, n);
		if (n >= 16) memcpy(b + 12, &(uint32_t){(uint32_t)n}, 4);
		EXPECT(ward_unpack_root(b, n, &r) == -EINVAL, "truncated to %zu", n);
		free(b);
	}
	char *more = exact(p.b, p.n + 1);
	memcpy(more + 12, &(uint32_t){(uint32_t)p.n + 1}, 4);
	more[p.n] = 0;
	EXPECT(ward_unpack_root(more, p.n + 1, &r) == -EINVAL, "a byte more");
	free(more);
	const uint8_t vals[] = {0, 1, 0x7f, 0x80, 0xff, '/', 'a'};
	int accepted = 0;
	for (size_t i = 0; i < p.n; i++)
		for (size_t v = 0; v < sizeof(vals); v++) {
			char *b = exact(p.b, p.n);
			if ((uint8_t)b[i] == vals[v]) {
				free(b);
				continue;
			}
			b[i] = (char)vals[v];
			int e = ward_unpack_root(b, p.n, &r);
			EXPECT(e == 0 || e == -EINVAL, "byte %zu = %#x: %d", i, vals[v], e);
			if (e == 0) {
				accepted++;
				EXPECT(read_all(&r) == 0, "byte %zu = %#x: accepted but a list does not read", i, vals[v]);
			}
			free(b);
		}
	EXPECT(accepted > 0, "no change accepted (strings may change)");
	// Bad headers, each alone.
	struct {
		const char *name;
		size_t off;
		uint32_t val;
	} bad[] = {{"magic", 0, 'W'}, {"version", 8, 2}, {"size", 12, 64}, {"flags", 16, 1 << 8}, {"padding", 28, 1},
		   {"huge count", 40, WARD_ROOT_MAX_COUNT + 1}, {"root size", 36, 0x80000000u}, {"flags apart", 16, WARD_ROOT_KEEP_UPPER}};
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		char *b = exact(p.b, p.n);
		memcpy(b + bad[i].off, &bad[i].val, 4);
		EXPECT(ward_unpack_root(b, p.n, &r) == -EINVAL, "%s", bad[i].name);
		free(b);
	}
}

// test_rootfs_plan: an OCI container's rootfs (its fd, read-only, the
// propagation of /) and the propagate and setattr ops are read back;
// what the parser refuses about them is refused.
static void test_rootfs_plan(void) {
	static struct plan p;
	struct ward_root r;
	uint32_t counts[6] = {2, 0, 0, 0, 0, 0};
	header(&p, WARD_ROOT_ROOTFS_RO | WARD_ROOT_PROP_SHARED | WARD_ROOT_PROP_REC, counts);
	set_rootfs(&p, 7);
	op_attrs(&p, WARD_OP_PROPAGATE, "/dev", MS_SLAVE | MS_REC, 0);
	op_attrs(&p, WARD_OP_SETATTR, "/sys", MOUNT_ATTR_RDONLY | MOUNT_ATTR_NOSUID, MOUNT_ATTR_NOEXEC);
	finish(&p);
	char *b = exact(p.b, p.n);
	EXPECT(ward_unpack_root(b, p.n, &r) == 0 && r.rootfs_fd == 7, "unpack: rootfs fd %d", r.rootfs_fd);
	struct ward_root_cursor c = ward_root_list(&r, r.ops);
	struct ward_root_op o;
	EXPECT(ward_root_next_op(&c, &o) == 0 && o.kind == WARD_OP_PROPAGATE && o.mode == (MS_SLAVE | MS_REC), "propagate op");
	EXPECT(ward_root_next_op(&c, &o) == 0 && o.kind == WARD_OP_SETATTR && o.uid == MOUNT_ATTR_NOEXEC, "setattr op");
	free(b);
	struct {
		const char *name;
		size_t off;
		uint32_t val;
	} bad[] = {{"rootfs fd 2 (stdio)", 28, 2}, {"rootfs fd < 0", 28, 0xffffffffu}, {"read-only without a rootfs fd", 28, 0},
		   {"propagation 5", 16, 5u << 6}, {"recursive with no propagation", 16, WARD_ROOT_PROP_REC},
		   {"a rootfs with overlays", 16, WARD_ROOT_OVERLAY},
		   // The first op's mode is at 68 (after the header's 64 bytes,
		   // kind, flags and padding); it is 49 bytes long (20, four
		   // empty strings of 5 and "/dev" in 9), so the second's is at 117.
		   {"two propagation kinds", 68, MS_SLAVE | MS_SHARED}, {"not a propagation", 68, MS_RDONLY},
		   {"an unknown attribute to set", 117, 1u << 30}, {"an unknown attribute to clear", 125, 1u << 30}};
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		b = exact(p.b, p.n);
		memcpy(b + bad[i].off, &bad[i].val, 4);
		EXPECT(ward_unpack_root(b, p.n, &r) == -EINVAL, "%s", bad[i].name);
		free(b);
	}
}

static void test_match(void) {
	struct {
		const char *pattern, *name;
		int want;
	} cases[] = {
		{"/etc/*", "/etc/passwd", 1}, {"*", "a/b", 0}, {"a*b*c", "axxbyyc", 1}, {"[a-c]?", "bz", 1}, {"[^a]", "a", 0},
		{"\\*", "*", 1}, {"[", "a", -EINVAL}, {"a[", "b", -EINVAL}, {"[]a]", "]", -EINVAL}, {"[\\]]", "]", 1},
		{"é?", "éé", 1}, {"?", "\xff", 1}, {"[\xff]", "a", -EINVAL}, {"a\\", "a", -EINVAL}, {"*x", "yyx", 1},
		{"[!a]", "!", 1}, {"/home/*/.[a-z]*", "/home/u/.ssh", 1}, {"a*/b", "a/x/b", 0}, {"", "", 1},
	};
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		int got = ward_glob_match(cases[i].pattern, cases[i].name);
		EXPECT(got == cases[i].want, "Match(%s, %s) = %d, want %d", cases[i].pattern, cases[i].name, got, cases[i].want);
	}
}

// test_glob_deep: a pattern of more levels than ends holds is refused,
// not written past it (ASan).
static void test_glob_deep(void) {
	char pattern[WARD_ROOT_MAX_PATH];
	size_t n = 0;
	pattern[n++] = '/';
	pattern[n++] = '*';
	while (n < 4002) pattern[n++] = '/';
	pattern[n] = 0;
	struct ward_strs out = {0};
	int e = ward_glob(pattern, &out);
	EXPECT(e == -EINVAL, "Glob(/* + 4000 /) = %d, want -EINVAL", e);
	ward_strs_free(&out);
}

// test_sort: ward_sort_names sorts, in O(n log n) comparisons also on
// the order that makes a shell sort with halving gaps quadratic (the
// smaller half at even places, the larger at odd ones).
extern size_t ward_sort_compares;
static void test_sort(void) {
	enum { N = 4096, W = 6 };
	static char base[N * W];
	static size_t idx[N];
	for (size_t i = 0; i < N; i++) {
		size_t v = i % 2 == 0 ? i / 2 : N / 2 + i / 2;
		snprintf(base + i * W, W, "%05zu", v);
		idx[i] = i * W;
	}
	ward_sort_compares = 0;
	ward_sort_names(idx, N, base);
	for (size_t i = 1; i < N; i++) EXPECT(strcmp(base + idx[i - 1], base + idx[i]) <= 0, "not sorted at %zu", i);
	size_t bound = 3 * N * 12; // 3 n log2(n)
	EXPECT(ward_sort_compares <= bound, "%zu comparisons for %d names, want at most %zu", ward_sort_compares, N, bound);
}

// test_fail_detail: a failure's operation carries what else it named
// whole (a bind's source, beyond the 64 bytes what once had).
static void test_fail_detail(void) {
	struct ward_root_out out;
	ward_root_out_init(&out);
	char src[300] = "/.oldroot/";
	memset(src + strlen(src), 'a', 250);
	src[260] = 0;
	EXPECT(ward_root_failf(&out, "/usr", ENOENT, "bind %s", src) == ENOENT, "failf's return");
	EXPECT(!strncmp(out.what, "bind /.oldroot/", 15) && strlen(out.what) == 5 + strlen(src) && !strcmp(out.path, "/usr"),
	       "what %.80s... (%zu bytes), path %s", out.what, strlen(out.what), out.path);
}

static void test_clean(void) {
	const char *cases[][2] = {{"", "."}, {"/", "/"}, {"//a//b/", "/a/b"}, {"a/../..", ".."}, {"/../x", "/x"},
				  {"./a/./b/..", "a"}, {"/a/b/../../..", "/"}, {"...", "..."}};
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		char out[64];
		ward_clean(cases[i][0], strlen(cases[i][0]), out);
		EXPECT(!strcmp(out, cases[i][1]), "Clean(%s) = %s, want %s", cases[i][0], out, cases[i][1]);
	}
}

static void test_handled(void) {
	const uint64_t want[] = {0, (1 << 13) - 1, (1 << 14) - 1, (1 << 15) - 1, (1 << 15) - 1, (1 << 16) - 1, (1 << 16) - 1};
	for (int abi = 1; abi < 7; abi++) EXPECT(ward_landlock_handled_fs(abi) == want[abi], "ABI %d", abi);
}

// steps_plan: a small root, with a host file to copy and a deny pattern.
static void steps_plan(struct plan *p) {
	uint32_t counts[6] = {12, 0, 1, 1, 2, 0};
	header(p, WARD_ROOT_LANDLOCK, counts);
	op(p, WARD_OP_BIND, 0, "/usr", "/usr", "", "", "");
	op(p, WARD_OP_SYMLINK, 0, "", "/bin", "usr/bin", "", "");
	op(p, WARD_OP_FILE, 0, "", "/etc/secret", "", "", "hidden\n");
	op(p, WARD_OP_FILE, 0, "", "/etc/passwd", "", "", "root:x:0:0::/:/bin/sh\n");
	op(p, WARD_OP_COPY, 0, "/etc/passwd", "/etc/copied", "", "", "");
	op(p, WARD_OP_TMPFS, WARD_OP_RW, "", "/dev", "", "mode=0755,size=64k", "");
	op(p, WARD_OP_BIND, WARD_OP_RW | WARD_OP_DEV, "/dev/null", "/dev/null", "", "", "");
	op(p, WARD_OP_SEAL, 0, "", "/dev", "", "", "");
	op(p, WARD_OP_PROC, 0, "", "/proc", "", "", "");
	op(p, WARD_OP_MASK, 0, "", "/proc/kcore", "", "", "");
	op(p, WARD_OP_REBIND, 0, "", "/proc/sys", "", "", "");
	op(p, WARD_OP_TMPFS, WARD_OP_RW | WARD_OP_EXEC, "", "/tmp", "", "mode=1777,size=1m", "");
	str(p, "/etc/*");
	str(p, "/etc/passwd");
	u64(p, 7);
	str(p, "/");
	u64(p, 0x7fff);
	str(p, "/tmp");
	finish(p);
}

static int read_ro(const char *path) {
	struct statvfs st;
	return statvfs(path, &st) == 0 && (st.f_flag & ST_RDONLY);
}

// run_steps runs every step on the plan in a child of a mount namespace of
// its own, then looks at the root it built; the child's exit status is
// the number of failures.
static int run_steps(void) {
	static struct plan p;
	steps_plan(&p);
	struct ward_root r;
	struct ward_root_out out;
	if (unshare(CLONE_NEWNS) < 0) {
		fprintf(stderr, "root_test: unshare(CLONE_NEWNS): %s\n", strerror(errno));
		return 1; // never a mount in the host's namespace
	}
	if (ward_unpack_root(p.b, p.n, &r)) return 1;
	ward_root_out_init(&out);
	for (int i = 0; i < ward_root_nsteps; i++) {
		if (ward_root_steps[i].when && !ward_root_steps[i].when(&r)) continue;
		int e = ward_root_steps[i].run(&r, &out);
		EXPECT(e == 0, "%s: %s %s: %s", ward_root_steps[i].name, out.what, out.path, strerror(e));
		if (e) return failures;
	}
	char buf[64] = {0};
	int fd = open("/etc/secret", O_RDONLY);
	EXPECT(fd >= 0 && read(fd, buf, sizeof(buf)) == 0, "/etc/secret not masked: %s", buf);
	if (fd >= 0) close(fd);
	fd = open("/etc/passwd", O_RDONLY);
	EXPECT(fd >= 0 && read(fd, buf, sizeof(buf)) > 0, "/etc/passwd masked");
	if (fd >= 0) close(fd);
	EXPECT(readlink("/bin", buf, sizeof(buf)) == 7, "/bin");
	EXPECT(read_ro("/usr") && read_ro("/") && read_ro("/dev") && read_ro("/proc/sys"), "a mount is writable");
	EXPECT(!read_ro("/tmp") && !read_ro("/dev/null"), "/tmp or /dev/null read-only");
	EXPECT(mkdir("/x", 0755) < 0 && errno == EROFS, "the root is writable");
	EXPECT(access("/.oldroot", F_OK) < 0 && access("/proc/self", F_OK) == 0, "the old root is there, or /proc is not");
	EXPECT(out.landlock_fd >= 0 || out.landlock_note[0], "no ruleset and no note");
	return failures;
}

static void test_steps(void) {
	fflush(NULL);
	pid_t pid = fork();
	if (pid == 0) _exit(run_steps());
	int st;
	EXPECT(waitpid(pid, &st, 0) == pid && WIFEXITED(st) && WEXITSTATUS(st) == 0, "the steps' child: status %#x", st);
}

// mountinfo_of gives the optional fields of the mount at path (its
// mountinfo line's 7th field on), in buf; 0 if found.
static int mountinfo_of(const char *path, char *buf, size_t size) {
	FILE *f = fopen("/proc/self/mountinfo", "r");
	char line[1024], mnt[512];
	int found = -1;
	while (f && found && fgets(line, sizeof(line), f)) {
		int off = 0;
		if (sscanf(line, "%*s %*s %*s %*s %511s %*s %n", mnt, &off) == 1 && off && !strcmp(mnt, path)) {
			snprintf(buf, size, "%s", line + off);
			found = 0;
		}
	}
	if (f) fclose(f);
	return found;
}

// run_rootfs_steps runs every step with an OCI rootfs (the host directory
// dir, cloned as the parent clones it) in a child of a mount namespace of
// its own, then looks at the root: the rootfs itself, with the plan built
// in it (an absolute symlink of the rootfs resolved within it), the host's
// root gone, / shared and read-only with ro, else writable.
static int run_rootfs_steps(const char *dir, int ro) {
	static struct plan p;
	struct ward_root r;
	struct ward_root_out out;
	if (unshare(CLONE_NEWNS) < 0) {
		fprintf(stderr, "root_test: unshare(CLONE_NEWNS): %s\n", strerror(errno));
		return 1; // never a mount in the host's namespace
	}
	if (mount("", "/", "", MS_REC | MS_PRIVATE, "") < 0) return 1;
	int fd = (int)syscall(SYS_open_tree, AT_FDCWD, dir, OPEN_TREE_CLONE | O_CLOEXEC | AT_RECURSIVE);
	EXPECT(fd > 2, "open_tree %s: %s", dir, strerror(errno));
	if (fd <= 2) return failures;
	int usr = (int)syscall(SYS_open_tree, AT_FDCWD, "/usr", OPEN_TREE_CLONE | O_CLOEXEC | AT_RECURSIVE);
	EXPECT(usr > 2, "open_tree /usr: %s", strerror(errno));
	if (usr <= 2) return failures;
	uint32_t counts[6] = {10, 0, 0, 0, 0, 0};
	header(&p, (ro ? WARD_ROOT_ROOTFS_RO : 0) | WARD_ROOT_PROP_SHARED, counts);
	set_rootfs(&p, fd);
	op(&p, WARD_OP_TMPFS, WARD_OP_RW, "", "/dev", "", "mode=0755,size=64k", "");
	op_fd(&p, "/usr", "/usr", usr);
	op(&p, WARD_OP_BIND, WARD_OP_RW | WARD_OP_DEV, "/dev/null", "/dev/null", "", "", "");
	op(&p, WARD_OP_PROC, 0, "", "/proc", "", "", "");
	op(&p, WARD_OP_MASK, 0, "", "/proc/kcore", "", "", "");
	op(&p, WARD_OP_TMPFS, WARD_OP_RW, "", "/abs/run", "", "mode=0755,size=64k", "");
	op_attrs(&p, WARD_OP_SETATTR, "/abs/run", MOUNT_ATTR_NOEXEC, 0);
	op_attrs(&p, WARD_OP_PROPAGATE, "/abs/run", MS_UNBINDABLE, 0);
	op(&p, WARD_OP_SYMLINK, 0, "", "/dev/fd", "/proc/self/fd", "", "");
	op(&p, WARD_OP_TMPFS, WARD_OP_COPYUP, "", "/etc", "", "size=64k", "");
	finish(&p);
	if (ward_unpack_root(p.b, p.n, &r)) return 1;
	ward_root_out_init(&out);
	for (int i = 0; i < ward_root_nsteps; i++) {
		if (ward_root_steps[i].when && !ward_root_steps[i].when(&r)) continue;
		int e = ward_root_steps[i].run(&r, &out);
		EXPECT(e == 0, "%s: %s %s: %s", ward_root_steps[i].name, out.what, out.path, strerror(e));
		if (e) return failures;
	}
	struct stat st;
	struct statfs sf;
	char info[512] = "";
	EXPECT(access("/marker", F_OK) == 0, "/ is not the rootfs");
	EXPECT(access(WARD_ROOTFS_DIR, F_OK) < 0 && access(WARD_OLD_ROOT, F_OK) < 0, "the root tmpfs or the host's root is there");
	EXPECT(stat("/dev/null", &st) == 0 && S_ISCHR(st.st_mode), "/dev/null");
	EXPECT(statfs("/inside/run", &sf) == 0 && sf.f_type == 0x01021994 && read_ro("/inside") == ro,
	       "/abs/run (/abs -> /inside) not a tmpfs at /inside/run");
	struct statvfs sv;
	EXPECT(statvfs("/inside/run", &sv) == 0 && (sv.f_flag & ST_NOEXEC), "/inside/run not noexec");
	EXPECT(mountinfo_of("/", info, sizeof(info)) == 0 && strstr(info, "shared:"), "/ is not shared: %s", info);
	// tmpcopyup: the rootfs's /etc copied into a tmpfs, sealed after.
	char got[16] = "";
	int hf = open("/etc/sub/hosts", O_RDONLY | O_CLOEXEC);
	EXPECT(hf >= 0 && read(hf, got, sizeof(got)) == 2 && !strcmp(got, "x\n"), "/etc/sub/hosts: %s", got);
	if (hf >= 0) close(hf);
	EXPECT(stat("/etc/sub/hosts", &st) == 0 && (st.st_mode & 07777) == 0640, "/etc/sub/hosts mode %o", st.st_mode & 07777);
	EXPECT(stat("/etc", &st) == 0 && (st.st_mode & 07777) == 0710, "/etc mode %o", st.st_mode & 07777);
	char link[16] = "";
	EXPECT(readlink("/etc/l", link, sizeof(link) - 1) == 9 && !strcmp(link, "sub/hosts"), "/etc/l -> %s", link);
	EXPECT(statfs("/etc", &sf) == 0 && sf.f_type == 0x01021994 && read_ro("/etc"), "/etc not a read-only tmpfs");
	EXPECT(mountinfo_of("/inside/run", info, sizeof(info)) == 0 && strstr(info, "unbindable"), "/inside/run: %s", info);
	EXPECT(read_ro("/") == ro, "/ read-only %d, want %d", read_ro("/"), ro);
	// The parent's clone of /usr, bound after /dev, is listed after it.
	EXPECT(access("/usr/bin", F_OK) == 0 && read_ro("/usr"), "/usr not the host's, read-only");
	char line[1024];
	FILE *f = fopen("/proc/self/mountinfo", "r");
	int seen_dev = 0, usr_after_dev = 0;
	while (f && fgets(line, sizeof(line), f)) {
		seen_dev |= strstr(line, " /dev rw") != NULL;
		if (strstr(line, " /usr ro")) usr_after_dev = seen_dev;
	}
	if (f) fclose(f);
	EXPECT(usr_after_dev, "/usr (a clone bound after /dev) listed before /dev in mountinfo");
	int made = mkdir("/made", 0755);
	EXPECT(ro ? made < 0 && errno == EROFS : made == 0, "mkdir /made: %d (%s)", made, strerror(errno));
	return failures;
}

static int remove_one(const char *path, const struct stat *st, int flag, struct FTW *ftw) {
	(void)st, (void)flag, (void)ftw;
	return remove(path);
}

// test_rootfs_steps: the steps with an OCI rootfs, writable and read-only;
// what the container made is in the host directory.
static void test_rootfs_steps(void) {
	for (int ro = 0; ro < 2; ro++) {
		char dir[] = "/tmp/ward-root-test-XXXXXX", path[64];
		EXPECT(mkdtemp(dir) != NULL, "mkdtemp: %s", strerror(errno));
		snprintf(path, sizeof(path), "%s/marker", dir);
		close(open(path, O_CREAT | O_WRONLY | O_CLOEXEC, 0644));
		snprintf(path, sizeof(path), "%s/inside", dir);
		mkdir(path, 0755);
		snprintf(path, sizeof(path), "%s/abs", dir);
		EXPECT(symlink("/inside", path) == 0, "symlink: %s", strerror(errno));
		snprintf(path, sizeof(path), "%s/etc", dir);
		mkdir(path, 0710);
		chmod(path, 0710);
		snprintf(path, sizeof(path), "%s/etc/sub", dir);
		mkdir(path, 0755);
		snprintf(path, sizeof(path), "%s/etc/sub/hosts", dir);
		int hf = open(path, O_CREAT | O_WRONLY | O_CLOEXEC, 0640);
		EXPECT(hf >= 0 && write(hf, "x\n", 2) == 2, "write %s", path);
		if (hf >= 0) close(hf);
		chmod(path, 0640);
		snprintf(path, sizeof(path), "%s/etc/l", dir);
		EXPECT(symlink("sub/hosts", path) == 0, "symlink: %s", strerror(errno));
		fflush(NULL);
		pid_t pid = fork();
		if (pid == 0) _exit(run_rootfs_steps(dir, ro));
		int st;
		EXPECT(waitpid(pid, &st, 0) == pid && WIFEXITED(st) && WEXITSTATUS(st) == 0, "the rootfs steps' child (ro %d): status %#x", ro, st);
		snprintf(path, sizeof(path), "%s/made", dir);
		EXPECT((access(path, F_OK) == 0) == !ro, "ro %d: /made in the host directory: %s", ro, strerror(errno));
		nftw(dir, remove_one, 16, FTW_DEPTH | FTW_PHYS);
	}
}

int main(void) {
	test_round_trip();
	test_malformed();
	test_rootfs_plan();
	test_match();
	test_clean();
	test_glob_deep();
	test_sort();
	test_fail_detail();
	test_handled();
	if (geteuid() == 0) {
		test_steps();
		test_rootfs_steps();
	}
	else fprintf(stderr, "root_test: not root: the steps not run (they need a mount namespace)\n");
	if (failures) {
		fprintf(stderr, "root_test: %d failures\n", failures);
		return 1;
	}
	printf("root_test: ok\n");
	return 0;
}
