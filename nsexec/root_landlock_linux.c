// build-landlock: the second layer below the mounts, a Landlock ruleset
// that mirrors the sandbox's file-system policy (fs/landlock_linux.go says
// what it allows). Go computes the rules from the policy (a path inside
// and the rights beneath it, before any ABI masking); here the kernel's
// ABI is probed, every right it knows is handled (what no rule allows is
// denied), each rule is masked to what the ABI knows and what the path's
// type can hold, and added for what the path is now. The program's process
// enforces the ruleset after no_new_privs (spawn_linux.c).

#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "root_impl_linux.h"

// The kernel's Landlock ABI, under names of our own (older headers lack
// the newer rights and the network rule).
#define LL_CREATE_VERSION 1u
#define LL_RULE_PATH_BENEATH 1
#define LL_RULE_NET_PORT 2
#define LL_EXECUTE (1ull << 0)
#define LL_WRITE_FILE (1ull << 1)
#define LL_READ_FILE (1ull << 2)
#define LL_MAKE_SYM (1ull << 12)
#define LL_REFER (1ull << 13)
#define LL_TRUNCATE (1ull << 14)
#define LL_IOCTL_DEV (1ull << 15)
#define LL_CONNECT_TCP (1ull << 1)
// The rights a rule on a non-directory may hold.
#define LL_FILE_RIGHTS (LL_EXECUTE | LL_WRITE_FILE | LL_READ_FILE | LL_TRUNCATE | LL_IOCTL_DEV)

struct ll_ruleset_attr {
	uint64_t handled_access_fs, handled_access_net;
};

struct ll_path_beneath {
	uint64_t allowed_access;
	int32_t parent_fd;
} __attribute__((packed));

struct ll_net_port {
	uint64_t allowed_access, port;
};

uint64_t ward_landlock_handled_fs(int abi) {
	uint64_t m = (LL_MAKE_SYM << 1) - 1; // ABI 1: execute ... make_sym
	if (abi >= 2) m |= LL_REFER;
	if (abi >= 3) m |= LL_TRUNCATE;
	if (abi >= 5) m |= LL_IOCTL_DEV;
	return m;
}

// probe returns the kernel's Landlock ABI, or 0 with why not in note.
static int probe(char *note, size_t size) {
	long abi = syscall(SYS_landlock_create_ruleset, NULL, 0, LL_CREATE_VERSION);
	if (abi > 0) return (int)abi;
	switch (errno) {
	case ENOSYS: snprintf(note, size, "the kernel has no Landlock (ENOSYS)"); break;
	case EOPNOTSUPP: snprintf(note, size, "Landlock is not enabled in this kernel's active LSMs (EOPNOTSUPP)"); break;
	default: snprintf(note, size, "landlock_create_ruleset(VERSION): %s", strerror(errno));
	}
	return 0;
}

static int add_rule(int ruleset, int type, const void *attr) {
	return syscall(SYS_landlock_add_rule, ruleset, type, attr, 0) < 0 ? errno : 0;
}

// add_path adds the rule for what path is now: a symlink, or a path that
// is not there, is skipped (its target, or nothing, is what counts).
static int add_path(int ruleset, const char *path, uint64_t access, uint64_t handled, struct ward_root_out *out) {
	int fd = open(path, O_PATH | O_NOFOLLOW | O_CLOEXEC);
	if (fd < 0) return errno == ENOENT || errno == ELOOP ? 0 : ward_root_fail(out, "landlock: open", path, errno);
	struct stat st;
	int e = 0;
	if (fstat(fd, &st) < 0) e = ward_root_fail(out, "landlock: stat", path, errno);
	else if (!S_ISLNK(st.st_mode)) {
		struct ll_path_beneath pb = {.allowed_access = access & handled, .parent_fd = fd};
		if (!S_ISDIR(st.st_mode)) pb.allowed_access &= LL_FILE_RIGHTS;
		if ((e = add_rule(ruleset, LL_RULE_PATH_BENEATH, &pb)))
			ward_root_failf(out, path, e, "landlock_add_rule access %#llx", (unsigned long long)pb.allowed_access);
	}
	close(fd);
	return e;
}

// allow_stdio lets the program reopen what the caller gave it as stdin,
// stdout and stderr (the init's 0-2) through /dev/stdin and /proc/self/fd,
// as it could without Landlock: a file or fifo of the host is outside the
// view. The file's mode still decides. Pipes, sockets and terminals are
// no path rules (the kernel refuses them, and Landlock does not restrict
// pipes and sockets): skipped.
static int allow_stdio(int ruleset, uint64_t handled, struct ward_root_out *out) {
	for (int fd = 0; fd <= 2; fd++) {
		struct stat st;
		if (fstat(fd, &st) < 0 || !(S_ISREG(st.st_mode) || S_ISFIFO(st.st_mode))) continue;
		struct ll_path_beneath pb = {.allowed_access = (LL_READ_FILE | LL_WRITE_FILE | LL_TRUNCATE) & handled, .parent_fd = fd};
		int e = add_rule(ruleset, LL_RULE_PATH_BENEATH, &pb);
		if (e && e != EBADFD) {
			char name[16];
			snprintf(name, sizeof(name), "fd %d", fd);
			return ward_root_fail(out, "landlock_add_rule", name, e);
		}
	}
	return 0;
}

// add_all adds the plan's path rules, its TCP ports (when the ABI knows
// them) and, but in a session (whose commands get their stdio per command,
// as pipes), the stdio rule.
static int add_all(const struct ward_root *r, int ruleset, int abi, uint64_t handled, struct ward_root_out *out) {
	struct ward_root_cursor c = ward_root_list(r, r->rules);
	for (uint32_t i = 0; i < r->nrules; i++) {
		uint64_t access;
		const char *path;
		if (ward_root_next_rule(&c, &access, &path)) return ward_root_fail(out, "plan", "", EINVAL);
		int e = add_path(ruleset, path, access, handled, out);
		if (e) return e;
	}
	c = ward_root_list(r, r->ports);
	for (uint32_t i = 0; (r->flags & WARD_ROOT_LANDLOCK_NET) && abi >= 4 && i < r->nports; i++) {
		uint32_t port;
		if (ward_root_next_port(&c, &port)) return ward_root_fail(out, "plan", "", EINVAL);
		struct ll_net_port np = {.allowed_access = LL_CONNECT_TCP, .port = port};
		int e = add_rule(ruleset, LL_RULE_NET_PORT, &np);
		if (e) {
			char name[32];
			snprintf(name, sizeof(name), "tcp port %u", port);
			return ward_root_fail(out, "landlock_add_rule", name, e);
		}
	}
	return r->flags & WARD_ROOT_SESSION ? 0 : allow_stdio(ruleset, handled, out);
}

// ward_root_landlock builds the ruleset into out (landlock_fd, close-on-
// exec, and its ABI). A kernel without Landlock leaves it out, with why in
// out->landlock_note, and keeps every other layer.
int ward_root_landlock(const struct ward_root *r, struct ward_root_out *out) {
	int abi = probe(out->landlock_note, sizeof(out->landlock_note));
	if (!abi) return 0;
	uint64_t handled = ward_landlock_handled_fs(abi);
	struct ll_ruleset_attr attr = {.handled_access_fs = handled};
	if ((r->flags & WARD_ROOT_LANDLOCK_NET) && abi >= 4) attr.handled_access_net = LL_CONNECT_TCP;
	int fd = (int)syscall(SYS_landlock_create_ruleset, &attr, sizeof(attr), 0);
	if (fd < 0) {
		char name[16];
		snprintf(name, sizeof(name), "ABI %d", abi);
		return ward_root_fail(out, "landlock_create_ruleset", name, errno);
	}
	int e = add_all(r, fd, abi, handled, out);
	if (e) {
		close(fd);
		return e;
	}
	out->landlock_fd = fd;
	out->landlock_abi = abi;
	return 0;
}
