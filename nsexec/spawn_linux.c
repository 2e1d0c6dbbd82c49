// The program's process, from fork to exec, in C.
//
// The init (init_linux.c, PID 1 of the sandbox, C) calls ward_spawn. It
// forks with a raw clone (no CLONE_VM: a copy of the calling thread only),
// and the child turns itself into the program: it enters the sandbox's
// cgroup, drops every privilege, loads the seccomp filters and execs. The
// child uses raw system calls only: no malloc, no lock that another thread
// could have held at the fork (ward_spawn also works from a threaded
// process: the tests call it so).
//
// In ward run the program's process is the early child instead (below):
// forked by the constructor that starts the init, it enters the cgroup at
// once and waits for its config, so the cgroup migration (on cgroup v1 one
// RCU grace period, about 6 ms here) overlaps the init's own work. With
// wait_fd, a child of ward_spawn does the same: it enters the cgroup and
// waits for one byte before the rest.
//
// The child reports over report_fd (a SOCK_SEQPACKET socket, CLOEXEC), one
// struct ward_report per write(2) (allowed by every policy, so a report
// still goes out after the filter is loaded): "timings" right before exec;
// "error" (the step that failed, its errno and a detail such as the fd) or
// "exec_error" when it could not exec. With a seccomp listener, "listener"
// names its fd number and the child waits for one byte: the init takes the
// fd with pidfd_getfd meanwhile (sendmsg may be the very call the new filter
// hands to the listener nobody serves yet). A successful exec closes the
// socket: the init reads EOF after "timings"; EOF before it means the child
// died before exec.

#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <linux/capability.h>
#include <linux/filter.h>
#include <linux/sched.h>
#include <linux/seccomp.h>
#include <signal.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sched.h>
#include <stdio.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "init_linux.h"

#ifndef CLOSE_RANGE_CLOEXEC
#define CLOSE_RANGE_CLOEXEC (1U << 2)
#endif
#ifndef SYS_landlock_restrict_self
#define SYS_landlock_restrict_self 446
#endif

static long sys(long nr, long a, long b, long c, long d, long e) {
	long r = syscall(nr, a, b, c, d, e, 0);
	return r < 0 ? -errno : r;
}

static int64_t now_us(void) {
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000000 + ts.tv_nsec / 1000;
}

// The kernel's struct sigaction for rt_sigaction (not glibc's).
struct ksigaction {
	void *handler;
	unsigned long flags;
	void *restorer;
	uint64_t mask;
};

static void report(int fd, struct ward_report *r) {
	long n;
	do n = sys(SYS_write, fd, (long)r, sizeof(*r), 0, 0);
	while (n == -EINTR);
}

static void __attribute__((noreturn)) fail(struct ward_gate *g, struct ward_report *r, int kind, int step, long err, long detail) {
	r->kind = kind;
	r->step = step;
	r->err = (int32_t)-err;
	r->detail = detail;
	report(g->report_fd, r);
	sys(SYS_exit_group, kind == WARD_REPORT_EXEC_ERROR ? 127 : WARD_EXIT_SETUP, 0, 0, 0, 0);
	__builtin_unreachable();
}

// close_all_but closes every fd from 3 up but those in keep (n of them)
// and the range lo..lo+cnt-1 (the preserved fds; cnt 0: none).
static long close_all_but(int *keep, int n, int lo, int cnt) {
	// Sort the few fds to keep, then close the gaps between them.
	for (int i = 1; i < n; i++)
		for (int j = i; j > 0 && keep[j - 1] > keep[j]; j--) {
			int x = keep[j];
			keep[j] = keep[j - 1];
			keep[j - 1] = x;
		}
	unsigned int from = 3;
	for (int i = 0;;) {
		// The next kept span: the lower of keep[i] and the range.
		long a, b;
		if (i < n && (cnt <= 0 || keep[i] < lo)) {
			a = b = keep[i++];
		} else if (cnt > 0) {
			a = lo, b = (long)lo + cnt - 1;
			cnt = 0;
		} else {
			break;
		}
		if (b < (long)from) continue;
		if (a > (long)from) {
			long e = sys(SYS_close_range, from, a - 1, 0, 0, 0);
			if (e < 0) return e;
		}
		from = (unsigned int)b + 1;
	}
	return sys(SYS_close_range, from, ~0U, 0, 0, 0);
}

// CHECK fails the step with the system call's error (in a step function:
// g and r in scope).
#define CHECK(step, expr, detail)                                  \
	do {                                                           \
		long _e = (expr);                                          \
		if (_e < 0) fail(g, r, WARD_REPORT_ERROR, step, _e, detail); \
	} while (0)

// write_file writes s to path (a /proc file) with raw system calls.
static long write_file(const char *path, const char *s) {
	long fd = sys(SYS_openat, AT_FDCWD, (long)path, O_WRONLY | O_CLOEXEC, 0, 0);
	if (fd < 0) return fd;
	long n = (long)strlen(s), w = sys(SYS_write, fd, (long)s, n, 0, 0);
	sys(SYS_close, fd, 0, 0, 0, 0);
	return w < 0 ? w : (w == n ? 0 : -EIO);
}

// map_self writes "id id 1" (the single mapping an unprivileged process
// may write for itself) to path.
static long map_self(const char *path, int id) {
	char buf[40], digits[12];
	int n = 0, d = 0;
	unsigned v = (unsigned)id;
	do digits[d++] = (char)('0' + v % 10);
	while ((v /= 10) && d < 11);
	for (int k = 0; k < 2; k++) {
		for (int i = d - 1; i >= 0; i--) buf[n++] = digits[i];
		buf[n++] = ' ';
	}
	buf[n++] = '1';
	buf[n++] = '\n';
	buf[n] = 0;
	return write_file(path, buf);
}

// The child's steps, each in order, each returning only when it
// succeeded (a failure reports and exits): g is its config, r the report
// it fills, early the early child's report (NULL when forked later).

// set-stdio: standard streams first (through fds above any of 0-2, in
// case they overlap), then every other fd is closed but the few this
// process still needs: nothing of the init's (another command's stdio,
// another process's report socket) stays open here, and a low
// RLIMIT_NOFILE still leaves room for the seccomp listener.
static void step_stdio(struct ward_gate *g, struct ward_report *r, const struct ward_report *early) {
	(void)early;
	if (g->stdio[0] >= 0) {
		int tmp[3];
		for (int i = 0; i < 3; i++) CHECK(WARD_STEP_STDIO, tmp[i] = sys(SYS_fcntl, g->stdio[i], F_DUPFD_CLOEXEC, 10, 0, 0), i);
		for (int i = 0; i < 3; i++) CHECK(WARD_STEP_STDIO, sys(SYS_dup3, tmp[i], i, 0, 0, 0), i);
	}
	int keep[WARD_MAX_CGROUPS + 4], nkeep = 0;
	for (int i = 0; i < g->ncgroup; i++) keep[nkeep++] = g->cgroup_fds[i];
	if (g->wait_fd >= 0) keep[nkeep++] = g->wait_fd;
	if (g->start_fd >= 0) keep[nkeep++] = g->start_fd;
	if (g->landlock_fd >= 0) keep[nkeep++] = g->landlock_fd;
	keep[nkeep++] = g->report_fd;
	CHECK(WARD_STEP_STDIO, close_all_but(keep, nkeep, g->preserve_fd, g->npreserve), -3);
	// The init's handlers mean nothing here: default dispositions
	// (an ignored SIGXFSZ when there is a file size limit).
	for (int s = 1; s < 65; s++) {
		if (s == SIGKILL || s == SIGSTOP || s == 32 || s == 33) continue;
		struct ksigaction sa = {.handler = SIG_DFL};
		if (s == SIGXFSZ && g->ignore_xfsz) sa.handler = SIG_IGN;
		sys(SYS_rt_sigaction, s, (long)&sa, 0, 8, 0);
	}
}

static void fd_path(char *buf, int fd);

// console (an OCI container's process.terminal; runc's split): a pty
// from the container's own devpts, /dev/ptmx in its root (the init's after
// the pivot; a joiner's since it entered the mount namespace). Its master
// goes up the report socket ("console", SCM_RIGHTS; ward-oci sends it on
// to the console socket, oci/console.go) and is closed here; its slave
// becomes stdin, stdout and stderr, and the controlling terminal of a
// session of this process's own. As root of the container, before
// set-user: the slave is opened under the container's root (a joiner's
// fs ids are still host root's, unmapped there) and given to the
// process's user, as runc does.
static void step_console(struct ward_gate *g, struct ward_report *r, const struct ward_report *early) {
	(void)early;
	if (!g->console) return;
	sys(SYS_setfsuid, 0, 0, 0, 0, 0);
	sys(SYS_setfsgid, 0, 0, 0, 0, 0);
	long m, s, e;
	int unlock = 0;
	unsigned int n = 0;
	CHECK(WARD_STEP_CONSOLE, m = sys(SYS_openat, AT_FDCWD, (long)"/dev/ptmx", O_RDWR | O_NOCTTY | O_CLOEXEC, 0, 0), 0);
	CHECK(WARD_STEP_CONSOLE, sys(SYS_ioctl, m, TIOCSPTLCK, (long)&unlock, 0, 0), 1);
	CHECK(WARD_STEP_CONSOLE, sys(SYS_ioctl, m, TIOCGPTN, (long)&n, 0, 0), 2);
	CHECK(WARD_STEP_CONSOLE, s = sys(SYS_ioctl, m, TIOCGPTPEER, O_RDWR | O_NOCTTY | O_CLOEXEC, 0, 0), 3);
	if (g->console_rows && g->console_cols) {
		struct winsize ws = {.ws_row = g->console_rows, .ws_col = g->console_cols};
		CHECK(WARD_STEP_CONSOLE, sys(SYS_ioctl, m, TIOCSWINSZ, (long)&ws, 0, 0), 4);
	}
	CHECK(WARD_STEP_CONSOLE, sys(SYS_fchown, s, g->uid, -1, 0, 0), 5);
	struct ward_report c = {.kind = WARD_REPORT_CONSOLE, .detail = n};
	struct iovec iov = {.iov_base = &c, .iov_len = sizeof(c)};
	struct msghdr mh = {.msg_iov = &iov, .msg_iovlen = 1};
	union ward_cmsg_fd ctl;
	ward_attach_fd(&mh, &ctl, (int)m);
	do e = sys(SYS_sendmsg, g->report_fd, (long)&mh, MSG_NOSIGNAL, 0, 0);
	while (e == -EINTR);
	CHECK(WARD_STEP_CONSOLE, e, 6);
	sys(SYS_close, m, 0, 0, 0, 0);
	if (g->start_fd >= 0) {
		// The container's own process (not exec's): /dev/console is the
		// pty too, a bind mount on a file made for it, as runc makes it.
		char src[32];
		fd_path(src, (int)s);
		e = sys(SYS_mknodat, AT_FDCWD, (long)"/dev/console", S_IFREG | 0666, 0, 0);
		if (e != -EEXIST) CHECK(WARD_STEP_CONSOLE, e, 10);
		CHECK(WARD_STEP_CONSOLE, sys(SYS_mount, (long)src, (long)"/dev/console", 0, MS_BIND, 0), 11);
	}
	for (int i = 0; i < 3; i++) CHECK(WARD_STEP_CONSOLE, sys(SYS_dup3, s, i, 0, 0, 0), 7);
	sys(SYS_close, s, 0, 0, 0, 0);
	// The init of a container leads its session already.
	e = sys(SYS_setsid, 0, 0, 0, 0, 0);
	if (e != -EPERM) CHECK(WARD_STEP_CONSOLE, e, 8);
	CHECK(WARD_STEP_CONSOLE, sys(SYS_ioctl, 0, TIOCSCTTY, 0, 0, 0), 9);
}

// new-process-group: a process group of its own in the init's session
// (which has no terminal), not a session of its own: a session leader
// takes the first terminal it opens as its controlling one (and then dies
// of its hangup), which no program run from a shell or by a service's
// main process expects (Go's os and os/signal tests with a pty).
static void step_session(struct ward_gate *g, struct ward_report *r, const struct ward_report *early) {
	(void)early;
	if (g->setpgid && !g->console) CHECK(WARD_STEP_SESSION, sys(SYS_setpgid, 0, 0, 0, 0, 0), 0);
}

// enter-cgroup: the early child entered it before it got its config (its
// time and error are in early); a child forked later does it here.
static void step_cgroup(struct ward_gate *g, struct ward_report *r, const struct ward_report *early) {
	if (early && early->err) fail(g, r, WARD_REPORT_ERROR, WARD_STEP_CGROUP, -early->err, early->detail);
	if (!early)
		for (int i = 0; i < g->ncgroup; i++) CHECK(WARD_STEP_CGROUP, sys(SYS_write, g->cgroup_fds[i], (long)"0", 1, 0, 0), g->cgroup_fds[i]);
}

// (untimed) wait for the init's release, if it holds this process back;
// then only the report socket (and the Landlock ruleset, closed once
// enforced) stay open (all close on exec).
static void step_release(struct ward_gate *g, struct ward_report *r, const struct ward_report *early) {
	(void)early;
	if (g->wait_fd >= 0) {
		char b;
		long n;
		do n = sys(SYS_read, g->wait_fd, (long)&b, 1, 0, 0);
		while (n == -EINTR);
		if (n != 1) sys(SYS_exit_group, WARD_EXIT_SETUP, 0, 0, 0, 0); // the init gave up: it reports why
	}
	int keep[3], nkeep = 0;
	keep[nkeep++] = g->report_fd;
	if (g->landlock_fd >= 0) keep[nkeep++] = g->landlock_fd;
	if (g->start_fd >= 0) keep[nkeep++] = g->start_fd;
	CHECK(WARD_STEP_STDIO, close_all_but(keep, nkeep, g->preserve_fd, g->npreserve), -3);
}

// enter-user-namespace: under an unprivileged caller the init runs as the
// sandbox user too: in a user namespace of its own (the same single
// mapping) the program's processes are counted apart from the init's
// threads, for RLIMIT_NPROC, and the init holds every capability over it.
static void step_userns(struct ward_gate *g, struct ward_report *r, const struct ward_report *early) {
	(void)early;
	if (!g->nest_userns) return;
	// A process forked by a non-dumpable init is non-dumpable: its
	// /proc/self files are then root's, and it could not write its own
	// maps. Dumpable for these writes only; while it holds capabilities
	// nothing without them may trace it anyway.
	CHECK(WARD_STEP_USERNS, sys(SYS_prctl, PR_SET_DUMPABLE, 1, 0, 0, 0), 4);
	CHECK(WARD_STEP_USERNS, sys(SYS_unshare, CLONE_NEWUSER, 0, 0, 0, 0), 0);
	CHECK(WARD_STEP_USERNS, write_file("/proc/self/setgroups", "deny"), 1);
	CHECK(WARD_STEP_USERNS, map_self("/proc/self/uid_map", g->uid), 2);
	CHECK(WARD_STEP_USERNS, map_self("/proc/self/gid_map", g->gid), 3);
	CHECK(WARD_STEP_USERNS, sys(SYS_prctl, PR_SET_DUMPABLE, 0, 0, 0, 0), 5);
}

// set_limit sets resource res to cur (soft) and max (hard).
static void set_limit(struct ward_gate *g, struct ward_report *r, int res, uint64_t cur, uint64_t max) {
	struct rlimit rl = {cur, max};
	CHECK(WARD_STEP_RLIMITS, sys(SYS_setrlimit, res, (long)&rl, 0, 0, 0), res);
}

// set-rlimits: open files, no core dumps, and the per-process limits.
static void step_rlimits(struct ward_gate *g, struct ward_report *r, const struct ward_report *early) {
	(void)early;
	set_limit(g, r, RLIMIT_NOFILE, g->nofile, g->nofile_hard ? g->nofile_hard : g->nofile);
	if (!g->oci_proc) set_limit(g, r, RLIMIT_CORE, 0, 0); // an OCI container's is config.json's
	if (g->cpu_seconds) set_limit(g, r, RLIMIT_CPU, g->cpu_seconds, g->cpu_seconds + 1);
	// Without a cgroup, the process limit: the kernel counts the sandbox
	// user's processes in the sandbox's own user namespace.
	if (g->nproc) set_limit(g, r, RLIMIT_NPROC, g->nproc, g->nproc);
	// Memory per process, where no cgroup holds the sandbox's.
	if (g->data) set_limit(g, r, RLIMIT_DATA, g->data, g->data);
	if (g->file_size) set_limit(g, r, RLIMIT_FSIZE, g->file_size, g->file_size);
	// OCI: process.rlimits, after ward's own (they win). Raising a hard
	// limit needs CAP_SYS_RESOURCE over the host, as with runc.
	for (int i = 0; i < g->nrlimits; i++) set_limit(g, r, g->rlimits[i].resource, g->rlimits[i].cur, g->rlimits[i].max);
}

// enter-cgroup-namespace: unshared after entering the cgroup, the
// namespace is rooted at the sandbox's cgroup: the program sees "0::/".
// It needs CAP_SYS_ADMIN, so before the privileges go.
static void step_cgroupns(struct ward_gate *g, struct ward_report *r, const struct ward_report *early) {
	(void)early;
	if (g->keep_cgroupns) return;
	CHECK(WARD_STEP_CGROUPNS, sys(SYS_unshare, CLONE_NEWCGROUP, 0, 0, 0, 0), 0);
}

// ward_write_sysctls: an OCI container's linux.sysctl (and domainname, as
// kernel.domainname), in order, written by its init in its namespaces
// before it builds the root (init_linux.c's set-sysctl): each "key=value"
// to /proc/sys/key (dots as slashes) of the host's procfs, still mounted
// then, whose /proc/sys shows the writer's own namespaces; the container's
// /proc/sys may be read-only (readonlyPaths). The config was checked
// (oci.Spec): only keys the container's own namespaces hold.
// kernel.hostname and kernel.domainname through their system calls: their
// /proc/sys files are the host root's to write, whatever the namespace.
long ward_write_sysctls(char *const *kv, int *bad) {
	for (int i = 0; kv && kv[i]; i++) {
		*bad = i;
		const char *eq = strchr(kv[i], '=');
		if (!eq) return -EINVAL;
		size_t klen = (size_t)(eq - kv[i]);
		const char *val = eq + 1;
		long e;
		if (klen == 15 && memcmp(kv[i], "kernel.hostname", 15) == 0) {
			e = sys(SYS_sethostname, (long)val, (long)strlen(val), 0, 0, 0);
		} else if (klen == 17 && memcmp(kv[i], "kernel.domainname", 17) == 0) {
			e = sys(SYS_setdomainname, (long)val, (long)strlen(val), 0, 0, 0);
		} else {
			char path[256] = "/proc/sys/";
			size_t pre = strlen(path);
			if (klen >= sizeof(path) - pre) return -ENAMETOOLONG;
			for (size_t k = 0; k < klen; k++) path[pre + k] = kv[i][k] == '.' ? '/' : kv[i][k];
			path[pre + klen] = 0;
			e = write_file(path, val);
		}
		if (e < 0) return e;
	}
	return 0;
}

// set-oom-score-adj (OCI): process.oomScoreAdj, before the privileges
// go. Raising it needs none; lowering it below what ward-oci's caller had
// needs CAP_SYS_RESOURCE over the host, as with runc.
static void step_oom(struct ward_gate *g, struct ward_report *r, const struct ward_report *early) {
	(void)early;
	if (!g->set_oom) return;
	char buf[16], digits[12];
	int n = 0, d = 0;
	unsigned v = g->oom_score_adj < 0 ? (unsigned)-(long)g->oom_score_adj : (unsigned)g->oom_score_adj;
	if (g->oom_score_adj < 0) buf[n++] = '-';
	do digits[d++] = (char)('0' + v % 10);
	while ((v /= 10) && d < 11);
	while (d > 0) buf[n++] = digits[--d];
	buf[n] = 0;
	CHECK(WARD_STEP_OOM, write_file("/proc/self/oom_score_adj", buf), g->oom_score_adj);
}

// drop-bounding-set: the bounding and ambient sets (and the securebits
// next) need CAP_SETPCAP: before set-user.
static void step_bounding(struct ward_gate *g, struct ward_report *r, const struct ward_report *early) {
	(void)early;
	for (int c = 0; c <= 63; c++) {
		if (g->oci_caps && (g->cap_bounding >> c & 1)) continue; // config.json keeps it
		long e = sys(SYS_prctl, PR_CAPBSET_DROP, c, 0, 0, 0);
		if (e == -EINVAL) break; // past the kernel's last capability
		CHECK(WARD_STEP_BOUNDING, e, c);
	}
	CHECK(WARD_STEP_BOUNDING, sys(SYS_prctl, PR_CAP_AMBIENT, PR_CAP_AMBIENT_CLEAR_ALL, 0, 0, 0), -1);
}

// lock-securebits: uid 0 means nothing (no capabilities on exec, none kept
// or regained across uid changes, no ambient raise), locked so that
// neither the program nor anything it execs can undo it.
static void step_securebits(struct ward_gate *g, struct ward_report *r, const struct ward_report *early) {
	(void)early;
	if (g->oci_caps) {
		// OCI: runc's model instead: uid 0 is root within the container's
		// namespaces (its bounding set, above, is the limit); the sets
		// config.json gives are kept across set-user and set after it.
		CHECK(WARD_STEP_SECUREBITS, sys(SYS_prctl, PR_SET_KEEPCAPS, 1, 0, 0, 0), 0);
		return;
	}
	const long bits = 1 << 0 | 1 << 1 | // SECBIT_NOROOT, _LOCKED
			  1 << 3 |          // SECBIT_NO_SETUID_FIXUP_LOCKED (fixup stays on)
			  1 << 5 |          // SECBIT_KEEP_CAPS_LOCKED (keep-caps stays off)
			  1 << 6 | 1 << 7;  // SECBIT_NO_CAP_AMBIENT_RAISE, _LOCKED
	CHECK(WARD_STEP_SECUREBITS, sys(SYS_prctl, PR_SET_SECUREBITS, bits, 0, 0, 0), bits);
}

// set-user: supplementary groups first: the init's (root's group 0 among
// them) must not follow the program.
static void step_user(struct ward_gate *g, struct ward_report *r, const struct ward_report *early) {
	(void)early;
	uint32_t gid = g->gid;
	// Under an unprivileged caller's single mapping the kernel denies
	// setgroups(2): the groups stay the caller's (unmapped: nogroup).
	// OCI: exactly process.user.additionalGids, as runc sets them.
	if (g->oci_proc && !g->keep_groups) CHECK(WARD_STEP_USER, sys(SYS_setgroups, g->ngroups, (long)g->groups, 0, 0, 0), 0);
	else if (!g->keep_groups) CHECK(WARD_STEP_USER, sys(SYS_setgroups, 1, (long)&gid, 0, 0, 0), 0);
	CHECK(WARD_STEP_USER, sys(SYS_setresgid, g->gid, g->gid, g->gid, 0, 0), 1);
	CHECK(WARD_STEP_USER, sys(SYS_setresuid, g->uid, g->uid, g->uid, 0, 0), 2);
	if (g->set_umask) sys(SYS_umask, g->umask, 0, 0, 0, 0); // it cannot fail
}

// oci_caps sets config.json's effective, permitted and inheritable sets,
// raises its ambient ones (one the kernel refuses, not permitted and
// inheritable, is not raised, as with runc) and ends keep-caps.
static void oci_caps(struct ward_gate *g, struct ward_report *r, struct __user_cap_header_struct *hdr, struct __user_cap_data_struct *data) {
	for (int i = 0; i < 2; i++) {
		data[i].effective = (uint32_t)(g->cap_effective >> (32 * i));
		data[i].permitted = (uint32_t)(g->cap_permitted >> (32 * i));
		data[i].inheritable = (uint32_t)(g->cap_inheritable >> (32 * i));
	}
	CHECK(WARD_STEP_CAPS, sys(SYS_capset, (long)hdr, (long)data, 0, 0, 0), 3);
	for (int c = 0; c <= 63; c++)
		if (g->cap_ambient >> c & 1) sys(SYS_prctl, PR_CAP_AMBIENT, PR_CAP_AMBIENT_RAISE, c, 0, 0);
	CHECK(WARD_STEP_CAPS, sys(SYS_prctl, PR_SET_KEEPCAPS, 0, 0, 0, 0), 4);
}

// clear-capabilities: set-user cleared the effective and permitted sets;
// the inheritable set survives a uid change. Clear all three, then check.
static void step_caps(struct ward_gate *g, struct ward_report *r, const struct ward_report *early) {
	(void)early;
	struct __user_cap_header_struct hdr = {.version = _LINUX_CAPABILITY_VERSION_3};
	struct __user_cap_data_struct data[2];
	memset(data, 0, sizeof(data));
	if (g->oci_caps) {
		oci_caps(g, r, &hdr, data);
		return;
	}
	CHECK(WARD_STEP_CAPS, sys(SYS_capset, (long)&hdr, (long)data, 0, 0, 0), 0);
	CHECK(WARD_STEP_CAPS, sys(SYS_capget, (long)&hdr, (long)data, 0, 0, 0), 1);
	for (int i = 0; i < 2; i++)
		if (data[i].effective | data[i].permitted | data[i].inheritable) fail(g, r, WARD_REPORT_ERROR, WARD_STEP_CAPS, -EPERM, 2);
}

// no-new-privs: always for ward's own programs; for an OCI container
// only when process.noNewPrivileges says so (its seccomp filters were
// then loaded before the capabilities went: step_seccomp_early).
static void step_nnp(struct ward_gate *g, struct ward_report *r, const struct ward_report *early) {
	(void)early;
	if (g->oci_nnp_off) return;
	CHECK(WARD_STEP_NNP, sys(SYS_prctl, PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0), 0);
}

// landlock: the second layer below the mounts, the ruleset the init built
// from the file-system (and network) policy. no_new_privs is what lets an
// unprivileged process enforce it; before seccomp, whose policies may not
// allow landlock_restrict_self. It holds for this process and everything
// it execs or forks, and cannot be undone.
static void step_landlock(struct ward_gate *g, struct ward_report *r, const struct ward_report *early) {
	(void)early;
	if (g->landlock_fd < 0) return;
	CHECK(WARD_STEP_LANDLOCK, sys(SYS_landlock_restrict_self, g->landlock_fd, 0, 0, 0, 0), g->landlock_fd);
	sys(SYS_close, g->landlock_fd, 0, 0, 0, 0);
}

static void step_workdir(struct ward_gate *g, struct ward_report *r, const struct ward_report *early) {
	(void)early;
	CHECK(WARD_STEP_WORKDIR, sys(SYS_chdir, (long)g->dir, 0, 0, 0, 0), 0);
}

// fd_path writes "/proc/self/fd/N" into buf (32 bytes): no stdio here.
static void fd_path(char *buf, int fd) {
	static const char pre[] = "/proc/self/fd/";
	char digits[12];
	int n = 0;
	do digits[n++] = (char)('0' + fd % 10);
	while ((fd /= 10) > 0 && n < (int)sizeof(digits));
	memcpy(buf, pre, sizeof(pre) - 1);
	for (int i = 0; i < n; i++) buf[sizeof(pre) - 1 + i] = digits[n - 1 - i];
	buf[sizeof(pre) - 1 + n] = 0;
}

// start_hooks runs the startContainer hooks (hooks_linux.c) once start
// opened the fifo (fifo), before the byte that lets start return: a hook
// that fails ends this process without it (start then reports the
// container gone), its error on the container's stderr.
static void start_hooks(struct ward_gate *g, long fifo) {
	char msg[WARD_HOOK_OUTPUT_MAX + 512];
	if (ward_hooks_run(g->start_hooks, WARD_HOOK_START_CONTAINER, NULL, msg, sizeof(msg)) == 0) return;
	dprintf(2, "ward-oci: start-container-hooks: %s\n", msg);
	sys(SYS_close, fifo, 0, 0, 0, 0);
	sys(SYS_exit_group, WARD_EXIT_SETUP, 0, 0, 0, 0);
}

// wait-start (an OCI container's create): tell the parent this process
// is set up (it is in its cgroup, with its credentials), then open the
// exec fifo for writing, which blocks until `start` opens it for reading,
// and write one byte: the program runs from here on. After the report
// nobody reads the report socket any more: it is closed, and a later
// failure is only this process's exit status (71, or 127 for exec).
// The fifo is reached through /proc/self/fd (the container's procfs):
// its path on the host is out of reach since the pivot. Dumpable again so
// that /proc/self/fd stays searchable under any user (exec would make it
// dumpable anyway).
static void step_wait_start(struct ward_gate *g, struct ward_report *r, const struct ward_report *early) {
	(void)early;
	if (g->start_fd < 0) return;
	CHECK(WARD_STEP_WAIT_START, sys(SYS_prctl, PR_SET_DUMPABLE, 1, 0, 0, 0), 0);
	char path[32];
	fd_path(path, g->start_fd);
	struct ward_report w = {.kind = WARD_REPORT_WAITING};
	report(g->report_fd, &w);
	// With a seccomp listener (ward.report) the socket is the init's,
	// which stays: it takes the listener after start (step_seccomp).
	if (!g->notify) {
		sys(SYS_close, g->report_fd, 0, 0, 0, 0);
		g->report_fd = -1;
	}
	long fd;
	do fd = sys(SYS_openat, AT_FDCWD, (long)path, O_WRONLY | O_CLOEXEC, 0, 0);
	while (fd == -EINTR);
	CHECK(WARD_STEP_WAIT_START, fd, 1);
	if (g->start_hooks) start_hooks(g, fd);
	long n;
	do n = sys(SYS_write, fd, (long)"0", 1, 0, 0);
	while (n == -EINTR);
	CHECK(WARD_STEP_WAIT_START, n, 2);
	sys(SYS_close, fd, 0, 0, 0, 0);
	sys(SYS_close, g->start_fd, 0, 0, 0, 0);
	g->start_fd = -1;
}

// seccomp: last, as close to exec as it can be: every step above may use
// system calls the policy denies.
static void step_seccomp(struct ward_gate *g, struct ward_report *r, const struct ward_report *early) {
	(void)early;
	for (int i = 0; i < g->nfilters; i++) {
		struct sock_fprog prog = {.len = g->filter_len[i], .filter = (struct sock_filter *)g->filters[i]};
		if (!g->notify) {
			CHECK(WARD_STEP_SECCOMP, sys(SYS_seccomp, SECCOMP_SET_MODE_FILTER, 0, (long)&prog, 0, 0), i);
			continue;
		}
		long fd = sys(SYS_seccomp, SECCOMP_SET_MODE_FILTER, SECCOMP_FILTER_FLAG_NEW_LISTENER, (long)&prog, 0, 0);
		if (fd < 0) fail(g, r, WARD_REPORT_ERROR, WARD_STEP_SECCOMP, fd, i);
		// The init takes the fd (pidfd_getfd) and answers one byte; read
		// and write are allowed outright by every policy.
		struct ward_report l = {.kind = WARD_REPORT_LISTENER, .detail = fd};
		report(g->report_fd, &l);
		char ack;
		long n;
		do n = sys(SYS_read, g->report_fd, (long)&ack, 1, 0, 0);
		while (n == -EINTR);
		sys(SYS_close, fd, 0, 0, 0, 0);
		if (n != 1) fail(g, r, WARD_REPORT_ERROR, WARD_STEP_SECCOMP, -EPIPE, i);
		if (ack != 1) fail(g, r, WARD_REPORT_ERROR, WARD_STEP_SECCOMP, -EPERM, i);
	}
}

// seccomp, early (OCI, noNewPrivileges false): without no_new_privs the
// kernel loads a filter only for a process with CAP_SYS_ADMIN over its
// user namespace, which the container's process may not keep: loaded
// here, before the capabilities go, as runc does. The filter then sees
// the steps after it (a profile that denies setresuid, capset or prctl
// fails the container, as under runc).
static void step_seccomp_early(struct ward_gate *g, struct ward_report *r, const struct ward_report *early) {
	if (!g->oci_nnp_off) return;
	step_seccomp(g, r, early);
	g->nfilters = 0; // loaded
}

// preserve-fds (OCI --preserve-fds; untimed): the caller's fds, inherited
// at preserve_fd.., become 3..3+npreserve-1 without close-on-exec, and
// nothing else of ward's stays open but the report socket (close-on-exec,
// moved above them). After the exec fifo (its open is done) and before
// seccomp, whose filter may deny the calls made here (runc, too, has the
// fds in place before its filter loads); seccomp's listener, if any, then
// takes a free number and is closed before exec.
static void step_preserve_fds(struct ward_gate *g, struct ward_report *r, const struct ward_report *early) {
	(void)early;
	int n = g->npreserve;
	if (n <= 0) return;
	// Above the targets, the preserved fds and the report socket (if
	// still open: create's closes at start): the report socket first,
	// then a copy of each preserved fd above it.
	long base = g->preserve_fd + n;
	if (3 + n > base) base = 3 + n;
	if (g->report_fd >= base) base = g->report_fd + 1;
	long low = base, tmp; // everything below low goes
	if (g->report_fd >= 0) {
		CHECK(WARD_STEP_STDIO, low = sys(SYS_fcntl, g->report_fd, F_DUPFD_CLOEXEC, base, 0, 0), -4);
		g->report_fd = (int)low;
		low++;
	}
	for (int i = 0; i < n; i++) {
		CHECK(WARD_STEP_STDIO, tmp = sys(SYS_fcntl, g->preserve_fd + i, F_DUPFD_CLOEXEC, low, 0, 0), -5);
		// Everything from low up was free: the copies are in order.
		if (tmp != low + i) fail(g, r, WARD_REPORT_ERROR, WARD_STEP_STDIO, -EBADF, -5);
	}
	// The originals and the old report socket go; then each copy
	// onto its number (dup3: not close-on-exec), and the copies go.
	long below = g->report_fd >= 0 ? g->report_fd : low;
	CHECK(WARD_STEP_STDIO, sys(SYS_close_range, 3, below - 1, 0, 0, 0), -6);
	for (int i = 0; i < n; i++) CHECK(WARD_STEP_STDIO, sys(SYS_dup3, low + i, 3 + i, 0, 0, 0), -7);
	CHECK(WARD_STEP_STDIO, sys(SYS_close_range, low, ~0U, 0, 0, 0), -8);
}

// exec: as a shell finds a command (glibc's execvp): a name with a slash
// as is, else each directory of PATH (an empty one is "."); EACCES when it
// was found only without execute permission, ENOENT when nowhere. ENOEXEC
// is an error (no /bin/sh fallback). It returns only by failing.
static void __attribute__((noreturn)) step_exec(struct ward_gate *g, struct ward_report *r) {
	char buf[4096 + 256]; // PATH candidates
	if (g->file[0] == 0) fail(g, r, WARD_REPORT_EXEC_ERROR, WARD_STEP_EXEC, -ENOENT, 0);
	if (strchr(g->file, '/')) {
		long e = sys(SYS_execve, (long)g->file, (long)g->argv, (long)g->envp, 0, 0);
		fail(g, r, WARD_REPORT_EXEC_ERROR, WARD_STEP_EXEC, e, 0);
	}
	int denied = 0;
	size_t flen = strlen(g->file);
	for (const char *p = g->path;;) {
		const char *end = strchrnul(p, ':');
		const char *dir = p;
		size_t dlen = end - p;
		if (dlen == 0) dir = ".", dlen = 1;
		long e = -ENAMETOOLONG;
		if (dlen + 1 + flen + 1 <= sizeof(buf)) {
			memcpy(buf, dir, dlen);
			buf[dlen] = '/';
			memcpy(buf + dlen + 1, g->file, flen + 1);
			e = sys(SYS_execve, (long)buf, (long)g->argv, (long)g->envp, 0, 0);
		}
		switch (e) {
		case -EACCES:
			denied = 1;
			break;
		case -ENOENT:
		case -ESTALE:
		case -ENOTDIR:
		case -ENODEV:
		case -ETIMEDOUT:
			break;
		default:
			fail(g, r, WARD_REPORT_EXEC_ERROR, WARD_STEP_EXEC, e, 0);
		}
		if (*end == 0) break;
		p = end + 1;
	}
	fail(g, r, WARD_REPORT_EXEC_ERROR, WARD_STEP_EXEC, denied ? -EACCES : -ENOENT, 0);
}

// child_steps are the child's steps in order; id is where its time goes in
// the report (-1: not timed, it waits for the init).
static const struct {
	int id;
	void (*run)(struct ward_gate *, struct ward_report *, const struct ward_report *);
} child_steps[] = {
	{WARD_STEP_STDIO, step_stdio},
	{WARD_STEP_CONSOLE, step_console},
	{WARD_STEP_SESSION, step_session},
	{WARD_STEP_CGROUP, step_cgroup},
	{-1, step_release},
	{WARD_STEP_USERNS, step_userns},
	{WARD_STEP_RLIMITS, step_rlimits},
	{WARD_STEP_CGROUPNS, step_cgroupns},
	{WARD_STEP_OOM, step_oom},
	{WARD_STEP_SECCOMP, step_seccomp_early},
	{WARD_STEP_BOUNDING, step_bounding},
	{WARD_STEP_SECUREBITS, step_securebits},
	{WARD_STEP_USER, step_user},
	{WARD_STEP_CAPS, step_caps},
	{WARD_STEP_NNP, step_nnp},
	{WARD_STEP_LANDLOCK, step_landlock},
	{WARD_STEP_WORKDIR, step_workdir},
	{-1, step_wait_start}, // untimed: it waits for start
	{-1, step_preserve_fds},
	{WARD_STEP_SECCOMP, step_seccomp},
};

// child runs the steps, reports their times, and execs the program.
static void __attribute__((noreturn)) child(struct ward_gate *g, struct ward_report *early) {
	struct ward_report r;
	memset(&r, 0, sizeof(r));
	if (early) r = *early; // the early child's time in enter-cgroup
	for (size_t i = 0; i < sizeof(child_steps) / sizeof(child_steps[0]); i++) {
		int64_t t = now_us();
		child_steps[i].run(g, &r, early);
		if (child_steps[i].id >= 0) r.us[child_steps[i].id] += now_us() - t;
	}
	r.kind = WARD_REPORT_TIMINGS;
	// The program's own clock starts here, as it execs: the init measures
	// the wall time and the time limit from this instant, not from when it
	// got round to reading this report (which may be later on a busy host).
	r.detail = now_us();
	report(g->report_fd, &r);
	// The mask survives exec: unblock what ward_spawn blocked.
	uint64_t none = 0;
	sys(SYS_rt_sigprocmask, SIG_SETMASK, (long)&none, 0, 8, 0);
	step_exec(g, &r);
}

void __attribute__((noreturn)) ward_become(struct ward_gate *g) { child(g, NULL); }

int ward_spawn(struct ward_gate *g) {
	// No signal may run a handler of the caller's in the child: block them all around
	// the fork; the child resets every handler before it unblocks.
	sigset_t all, old;
	sigfillset(&all);
	pthread_sigmask(SIG_SETMASK, &all, &old);
	long pid = sys(SYS_clone, SIGCHLD, 0, 0, 0, 0);
	if (pid == 0) {
		child(g, NULL);
	}
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	return (int)pid;
}

// The early child. A sandbox init ("ward init N", PID 1, N the number of
// cgroup.procs fds from WARD_CGROUP_FD0) forks the program's process here,
// in the constructor, first thing: the child enters the cgroup at once, so
// that on cgroup v1 the kernel's grace period for the migration runs while
// the init reads its config and builds the root. The child is a plain
// single-threaded C process (glibc is set up), so it may malloc. It then
// waits for its config (ward_send_gate_to, the gate ward packed, which the
// init checked and completed) on a SOCK_SEQPACKET socket, the same one it
// reports on.
int ward_early_pid = -1, ward_early_fd = -1;

// ward_early_child is the early child (a function of its own, not static,
// so that ctest/gate_test.c can run it): it enters its ncg cgroups (fds
// WARD_CGROUP_FD0...), takes its config on fd (gate_linux.c) and goes on.
void __attribute__((noreturn)) ward_early_child(int fd, int ncg) {
	struct ward_report r;
	memset(&r, 0, sizeof(r));
	int64_t t = now_us();
	for (int i = 0; i < ncg; i++) {
		long e = sys(SYS_write, WARD_CGROUP_FD0 + i, (long)"0", 1, 0, 0);
		if (e < 0) {
			r.err = (int32_t)-e;
			r.detail = WARD_CGROUP_FD0 + i;
			break;
		}
	}
	r.us[WARD_STEP_CGROUP] = now_us() - t;

	// The config: its size first (MSG_PEEK|MSG_TRUNC), then the message.
	// Until it is read, a failure has no config to report it with; after
	// that, every failure is reported (step "fork-program").
	long n;
	char probe;
	do n = sys(SYS_recvfrom, fd, (long)&probe, 1, MSG_PEEK | MSG_TRUNC, 0);
	while (n == -EINTR);
	if (n == 0) _exit(0); // EOF: no program (the init failed first, or it forks another)
	struct ward_gate bad = {.report_fd = fd};
	if (n < 0) fail(&bad, &r, WARD_REPORT_ERROR, WARD_STEP_FORK, n, 0);
	char *buf = malloc(n);
	if (!buf) fail(&bad, &r, WARD_REPORT_ERROR, WARD_STEP_FORK, -ENOMEM, n);
	// The Landlock ruleset, if any, comes with the config (SCM_RIGHTS).
	long got;
	union ward_cmsg_fd ctl;
	struct iovec iov = {.iov_base = buf, .iov_len = n};
	struct msghdr mh = {.msg_iov = &iov, .msg_iovlen = 1, .msg_control = ctl.b, .msg_controllen = sizeof(ctl.b)};
	do got = sys(SYS_recvmsg, fd, (long)&mh, MSG_CMSG_CLOEXEC, 0, 0);
	while (got == -EINTR);
	if (got != n || (mh.msg_flags & (MSG_TRUNC | MSG_CTRUNC))) fail(&bad, &r, WARD_REPORT_ERROR, WARD_STEP_FORK, got < 0 ? got : -EBADMSG, got);
	int landlock_fd = -1;
	struct cmsghdr *c = CMSG_FIRSTHDR(&mh);
	if (c && c->cmsg_level == SOL_SOCKET && c->cmsg_type == SCM_RIGHTS && c->cmsg_len == CMSG_LEN(sizeof(int)))
		memcpy(&landlock_fd, CMSG_DATA(c), sizeof(int));
	struct ward_gate g;
	long detail;
	long e = ward_unpack_gate(buf, n, landlock_fd, &g, &detail);
	if (e < 0) fail(&bad, &r, WARD_REPORT_ERROR, WARD_STEP_FORK, e, detail);
	g.report_fd = fd;
	child(&g, &r);
}

// fork_early forks the early child for ncg cgroups, if it can (the init
// forks the program's process later otherwise).
static void fork_early(int ncg) {
	if (ncg < 0 || ncg > WARD_MAX_CGROUPS) return;
	int sv[2];
	if (socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, sv) < 0) return;
	long pid = sys(SYS_clone, SIGCHLD, 0, 0, 0, 0);
	if (pid == 0) {
		close(sv[0]);
		ward_early_child(sv[1], ncg);
	}
	close(sv[1]);
	if (pid < 0) {
		close(sv[0]);
		return;
	}
	ward_early_pid = (int)pid;
	ward_early_fd = sv[0];
}

// The joiner ("ward join N M", ward-oci exec): a command run in the
// namespaces of an OCI container's process. ward-oci passes fd 3, a
// SOCK_SEQPACKET socket; N cgroup.procs fds from WARD_CGROUP_FD0 (the
// container's cgroup); then M namespace fds (/proc/PID/ns/..., the user
// namespace first, the mount namespace last), which it joins here, before
// Go's runtime starts threads (setns needs a single-threaded process). The
// PID namespace is joined by children only: it forks the command's
// process, an early child (it enters the cgroup, takes its gate on fd 3 and
// goes on as every program's process does), sends its pid as the first
// message (an int32; a negative errno and the namespace's index when a
// step failed) and exits: the command's process re-parents to ward-oci
// exec (a subreaper), or with --detach to the caller's subreaper.
static void __attribute__((noreturn)) join_container(int ncg, int nns) {
	int32_t msg[2] = {0, -1};
	int fd0 = WARD_CGROUP_FD0 + ncg;
	// The socket closes on the command's exec: ward-oci reads EOF then.
	if (fcntl(WARD_PROTO_FD, F_SETFD, FD_CLOEXEC) < 0) msg[0] = -errno;
	for (int i = 0; i < nns && msg[0] == 0; i++) {
		if (setns(fd0 + i, 0) < 0) msg[0] = -errno, msg[1] = i;
		close(fd0 + i);
	}
	if (msg[0] == 0) {
		long pid = sys(SYS_clone, SIGCHLD, 0, 0, 0, 0);
		if (pid == 0) ward_early_child(WARD_PROTO_FD, ncg);
		msg[0] = (int32_t)pid;
	}
	sys(SYS_write, WARD_PROTO_FD, (long)msg, sizeof(msg), 0, 0);
	_exit(msg[0] > 0 ? 0 : WARD_EXIT_SETUP);
}

// is_seqpacket says whether fd is a SOCK_SEQPACKET socket (a joiner's fd 3
// from ward-oci, not whatever a user running "ward join" has there).
static int is_seqpacket(int fd) {
	int type = 0;
	socklen_t n = sizeof(type);
	return getsockopt(fd, SOL_SOCKET, SO_TYPE, &type, &n) == 0 && type == SOCK_SEQPACKET;
}

// The sandbox init is this constructor's: "ward init [N]" as PID 1 forks
// the early child (with N) and runs the init (init_linux.c), which never
// returns. Any other argv goes on to Go's main.
__attribute__((constructor)) static void ward_early(int argc, char **argv, char **envp) {
	(void)envp;
	if (argc == 4 && strcmp(argv[0], WARD_ARGV0) == 0 && strcmp(argv[1], WARD_JOIN_ARG) == 0 && is_seqpacket(WARD_PROTO_FD)) {
		int ncg = atoi(argv[2]), nns = atoi(argv[3]);
		if (ncg >= 0 && ncg <= WARD_MAX_CGROUPS && nns >= 0 && nns <= 8) join_container(ncg, nns);
	}
	if ((argc != 2 && argc != 3) || strcmp(argv[0], WARD_ARGV0) != 0 || strcmp(argv[1], WARD_INIT_ARG) != 0 || getpid() != 1) return;
	if (argc == 3) fork_early(atoi(argv[2]));
	ward_init_main(argc, argv);
}

// ward_send_gate_to sends g to the early child over fd: it goes on from
// there. It returns 0 or -errno.
int ward_send_gate_to(struct ward_gate *g, int fd) {
	size_t n;
	char *buf = ward_pack_gate(g, &n);
	if (!buf) return -ENOMEM;
	// The Landlock ruleset goes along as an fd of the child's own.
	union ward_cmsg_fd ctl;
	struct iovec iov = {.iov_base = buf, .iov_len = n};
	struct msghdr mh = {.msg_iov = &iov, .msg_iovlen = 1};
	ward_attach_fd(&mh, &ctl, g->landlock_fd);
	long e = sys(SYS_sendmsg, fd, (long)&mh, MSG_NOSIGNAL, 0, 0);
	free(buf);
	return e < 0 ? (int)e : 0;
}
