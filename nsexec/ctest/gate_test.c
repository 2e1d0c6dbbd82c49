// Unit tests of nsexec's C, built with AddressSanitizer and UBSan (any
// finding aborts the test): `make csan`, part of `make unit`.
//
// The config message of the early child (gate_linux.c): round trips, and
// every kind of malformed message, each in a buffer of exactly its size so
// that a read past the end is caught. Then the program's process itself
// (spawn_linux.c), forked by ward_spawn and by the early child, running
// /bin/true: no cgroup, no namespace but a cgroup namespace of the child's
// own, so nothing outside the child changes. And the child that holds a
// user namespace for an idmapped mount (userns_linux.c).

#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include "spawn_linux.h"

static int failures;

#define EXPECT(cond, ...)                                             \
	do {                                                          \
		if (!(cond)) {                                        \
			failures++;                                   \
			fprintf(stderr, "%s:%d: %s: ", __func__, __LINE__, #cond); \
			fprintf(stderr, __VA_ARGS__);                 \
			fputc('\n', stderr);                          \
		}                                                     \
	} while (0)

// The struct, then argc, envc, sysctlc and padding (gate_linux.c's struct
// packed).
#define HEADER (sizeof(struct ward_gate) + 16)

static const uint64_t filter0[3] = {0x0102030405060708, 0x1112131415161718, 0x2122232425262728};
static const uint64_t filter1[1] = {0xa1a2a3a4a5a6a7a8};
static char *const test_argv[] = {"prog", "", "-x=1", NULL};
static char *const test_envp[] = {"A=1", "PATH=/bin", NULL};
static char *const no_env[] = {NULL};

// sample is a gate with something in every field that travels.
static struct ward_gate sample(void) {
	struct ward_gate g;
	memset(&g, 0, sizeof(g));
	g.stdio[0] = g.stdio[1] = g.stdio[2] = -1;
	g.setpgid = 1;
	g.ncgroup = 2;
	g.cgroup_fds[0] = 4;
	g.cgroup_fds[1] = 5;
	g.wait_fd = 7;
	g.report_fd = 8;
	g.nofile = 1024;
	g.nofile_hard = 4096;
	g.cpu_seconds = 3;
	g.file_size = 1 << 20;
	g.ignore_xfsz = 1;
	g.uid = 1000;
	g.gid = 1001;
	g.keep_groups = 1;
	g.nest_userns = 1;
	g.nproc = 64;
	g.data = 1 << 30;
	g.landlock_fd = -1;
	g.oci_nnp_off = 1;
	g.set_umask = 1;
	g.umask = 027;
	g.set_oom = 1;
	g.oom_score_adj = -17;
	g.oci_proc = 1;
	g.ngroups = 2;
	g.groups[0] = 5;
	g.groups[1] = 4294967294u;
	g.nrlimits = 1;
	g.rlimits[0].resource = 7;
	g.rlimits[0].cur = 100;
	g.rlimits[0].max = ~0ull;
	g.notify = 1;
	g.nfilters = 2;
	g.filter_len[0] = 3;
	g.filter_len[1] = 1;
	g.filters[0] = filter0;
	g.filters[1] = filter1;
	g.dir = "/work dir";
	g.file = "prog";
	g.path = "/usr/bin:/bin";
	g.argv = test_argv;
	g.envp = test_envp;
	return g;
}

// exact copies n bytes of src into a buffer of exactly n bytes.
static char *exact(const char *src, size_t n) {
	char *b = malloc(n ? n : 1);
	if (!b) abort();
	memcpy(b, src, n);
	return b;
}

static void expect_same(const struct ward_gate *in, const struct ward_gate *out, int landlock_fd) {
	EXPECT(out->stdio[0] == in->stdio[0] && out->stdio[2] == in->stdio[2], "stdio");
	EXPECT(out->setpgid == in->setpgid, "setpgid %d", out->setpgid);
	EXPECT(out->ncgroup == 0 && out->wait_fd == -1 && out->report_fd == -1, "ncgroup %d wait %d report %d", out->ncgroup,
	       out->wait_fd, out->report_fd);
	EXPECT(out->nofile == in->nofile && out->nofile_hard == in->nofile_hard, "nofile");
	EXPECT(out->cpu_seconds == in->cpu_seconds && out->file_size == in->file_size, "cpu, fsize");
	EXPECT(out->ignore_xfsz == in->ignore_xfsz, "ignore_xfsz");
	EXPECT(out->uid == in->uid && out->gid == in->gid, "uid %d gid %d", out->uid, out->gid);
	EXPECT(out->keep_groups == in->keep_groups && out->nest_userns == in->nest_userns, "groups, userns");
	EXPECT(out->nproc == in->nproc && out->data == in->data, "nproc, data");
	EXPECT(out->landlock_fd == landlock_fd, "landlock_fd %d", out->landlock_fd);
	EXPECT(out->notify == in->notify, "notify");
	EXPECT(out->oci_nnp_off == in->oci_nnp_off && out->set_umask == in->set_umask && out->umask == in->umask, "nnp, umask");
	EXPECT(out->set_oom == in->set_oom && out->oom_score_adj == in->oom_score_adj, "oom %d", out->oom_score_adj);
	EXPECT(out->oci_proc == in->oci_proc && out->ngroups == in->ngroups, "ngroups %d", out->ngroups);
	for (int i = 0; i < in->ngroups && i < out->ngroups; i++) EXPECT(out->groups[i] == in->groups[i], "groups[%d]", i);
	EXPECT(out->nrlimits == in->nrlimits, "nrlimits %d", out->nrlimits);
	for (int i = 0; i < in->nrlimits && i < out->nrlimits; i++)
		EXPECT(out->rlimits[i].resource == in->rlimits[i].resource && out->rlimits[i].cur == in->rlimits[i].cur &&
			   out->rlimits[i].max == in->rlimits[i].max,
		       "rlimits[%d]", i);
	int k = 0;
	for (; in->sysctl && in->sysctl[k]; k++) EXPECT(out->sysctl && out->sysctl[k] && strcmp(out->sysctl[k], in->sysctl[k]) == 0, "sysctl[%d]", k);
	EXPECT(k ? out->sysctl && out->sysctl[k] == NULL : out->sysctl == NULL, "sysctl not NULL-terminated at %d", k);
	EXPECT(out->nfilters == in->nfilters, "nfilters %d", out->nfilters);
	for (int i = 0; i < in->nfilters && i < out->nfilters; i++) {
		EXPECT(out->filter_len[i] == in->filter_len[i], "filter_len[%d]", i);
		EXPECT(memcmp(out->filters[i], in->filters[i], in->filter_len[i] * 8) == 0, "filter %d", i);
	}
	EXPECT(strcmp(out->dir, in->dir) == 0, "dir %s", out->dir);
	EXPECT(strcmp(out->file, in->file) == 0, "file %s", out->file);
	EXPECT(strcmp(out->path, in->path) == 0, "path %s", out->path);
	int i = 0;
	for (; in->argv[i]; i++) EXPECT(out->argv[i] && strcmp(out->argv[i], in->argv[i]) == 0, "argv[%d]", i);
	EXPECT(out->argv[i] == NULL, "argv not NULL-terminated at %d", i);
	for (i = 0; in->envp[i]; i++) EXPECT(out->envp[i] && strcmp(out->envp[i], in->envp[i]) == 0, "envp[%d]", i);
	EXPECT(out->envp[i] == NULL, "envp not NULL-terminated at %d", i);
}

static void test_round_trip(void) {
	struct ward_gate in = sample();
	size_t n;
	char *msg = ward_pack_gate(&in, &n);
	EXPECT(n == HEADER + 3 * 8 + 8 + 10 + 5 + 14 + 5 + 1 + 5 + 4 + 10, "size %zu", n);
	struct ward_gate out;
	long detail;
	EXPECT(ward_unpack_gate(msg, n, -1, &out, &detail) == 0, "unpack: detail %ld", detail);
	expect_same(&in, &out, -1);
	ward_unpack_free(&out);
	free(msg);

	// A Landlock ruleset: the fd that came with the message replaces the
	// sender's number. No environment, no filter.
	in.landlock_fd = 5;
	in.envp = no_env;
	in.nfilters = 0;
	msg = ward_pack_gate(&in, &n);
	EXPECT(ward_unpack_gate(msg, n, 9, &out, &detail) == 0, "unpack: detail %ld", detail);
	expect_same(&in, &out, 9);
	ward_unpack_free(&out);

	// Any alignment: the header is copied out, never read in place.
	char *odd = malloc(n + 1);
	memcpy(odd + 1, msg, n);
	EXPECT(ward_unpack_gate(odd + 1, n, 9, &out, &detail) == 0, "unaligned: detail %ld", detail);
	expect_same(&in, &out, 9);
	ward_unpack_free(&out);
	free(odd);
	free(msg);
}

// The sysctls travel after the environment, each "key=value".
static char *const test_sysctl[] = {"net.ipv4.ip_forward=1", "kernel.domainname=a=b", NULL};

static void test_sysctl_round_trip(void) {
	struct ward_gate in = sample();
	in.sysctl = test_sysctl;
	size_t n;
	char *msg = ward_pack_gate(&in, &n);
	EXPECT(n == HEADER + 3 * 8 + 8 + 10 + 5 + 14 + 5 + 1 + 5 + 4 + 10 + 22 + 22, "size %zu", n);
	struct ward_gate out;
	long detail;
	char *b = exact(msg, n);
	EXPECT(ward_unpack_gate(b, n, -1, &out, &detail) == 0, "unpack: detail %ld", detail);
	expect_same(&in, &out, -1);
	ward_unpack_free(&out);
	EXPECT(out.sysctl == NULL, "sysctl not freed");
	free(b);
	// Cut short, or a sysctl without "=": detail 9.
	for (size_t k = n - 22 - 22 + 1; k < n; k++) {
		b = exact(msg, k);
		int e = ward_unpack_gate(b, k, -1, &out, &detail);
		EXPECT(e == -EBADMSG && detail == 9, "truncated to %zu: %d detail %ld", k, e, detail);
		EXPECT(out.argv == NULL && out.sysctl == NULL, "truncated to %zu: arrays left set", k);
		free(b);
	}
	b = exact(msg, n);
	memcpy(b + n - 22 - 22 + 19, ":", 1); // net.ipv4.ip_forward:1
	EXPECT(ward_unpack_gate(b, n, -1, &out, &detail) == -EBADMSG && detail == 9, "no =: detail %ld", detail);
	free(b);
	free(msg);
}

// expect_bad unpacks msg (n bytes, copied to a buffer of exactly that
// size) and expects it refused with err and detail.
static void expect_bad(const char *what, const char *msg, size_t n, int landlock_fd, int err, long want) {
	char *b = exact(msg, n);
	struct ward_gate out;
	long detail = -99;
	int e = ward_unpack_gate(b, n, landlock_fd, &out, &detail);
	EXPECT(e == err && detail == want, "%s: got %d detail %ld, want %d detail %ld", what, e, detail, err, want);
	EXPECT(out.argv == NULL && out.envp == NULL, "%s: arrays left set", what);
	free(b);
}

// set_i32 writes v at off in msg (which need not be aligned there).
static void set_i32(char *msg, size_t off, int32_t v) { memcpy(msg + off, &v, sizeof(v)); }

static void test_malformed(void) {
	struct ward_gate in = sample();
	size_t n;
	char *msg = ward_pack_gate(&in, &n);
	size_t argc_off = sizeof(struct ward_gate), envc_off = argc_off + 4;
	size_t nfilters_off = offsetof(struct ward_gate, nfilters), flen_off = offsetof(struct ward_gate, filter_len);
	size_t sysctlc_off = envc_off + 4, ngroups_off = offsetof(struct ward_gate, ngroups);
	size_t nrlimits_off = offsetof(struct ward_gate, nrlimits);

	// Every truncation: short of the header, the size; else some string
	// (or a filter) runs past the end.
	for (size_t k = 0; k < n; k++) {
		char *b = exact(msg, k);
		struct ward_gate out;
		long detail;
		int e = ward_unpack_gate(b, k, -1, &out, &detail);
		EXPECT(e == -EBADMSG, "truncated to %zu: %d", k, e);
		if (k < HEADER) EXPECT(detail == (long)k, "truncated to %zu: detail %ld", k, detail);
		else EXPECT(detail >= 2 && detail <= 6, "truncated to %zu: detail %ld", k, detail);
		free(b);
	}

	// Bytes after the last variable.
	char *more = malloc(n + 3);
	memcpy(more, msg, n);
	memcpy(more + n, "x\0y", 3);
	expect_bad("trailing bytes", more, n + 3, -1, -EBADMSG, 7);
	free(more);

	// The last NUL missing: the last variable runs to the end.
	char *b = exact(msg, n);
	b[n - 1] = 'x';
	expect_bad("no NUL", b, n, -1, -EBADMSG, 6);
	free(b);

	// Counts out of range.
	const struct {
		const char *what;
		size_t off;
		int32_t v;
	} counts[] = {
	    {"argc 0", argc_off, 0},
	    {"argc -1", argc_off, -1},
	    {"argc INT32_MIN", argc_off, INT32_MIN},
	    {"argc 2^20+1", argc_off, (1 << 20) + 1},
	    {"envc -1", envc_off, -1},
	    {"envc INT32_MAX", envc_off, INT32_MAX},
	    {"nfilters -1", nfilters_off, -1},
	    {"nfilters 5", nfilters_off, WARD_MAX_FILTERS + 1},
	    {"sysctlc -1", sysctlc_off, -1},
	    {"sysctlc 2^20+1", sysctlc_off, (1 << 20) + 1},
	    {"ngroups -1", ngroups_off, -1},
	    {"ngroups 65", ngroups_off, WARD_MAX_GROUPS + 1},
	    {"nrlimits -1", nrlimits_off, -1},
	    {"nrlimits 17", nrlimits_off, WARD_MAX_RLIMITS + 1},
	};
	for (size_t i = 0; i < sizeof(counts) / sizeof(counts[0]); i++) {
		b = exact(msg, n);
		set_i32(b, counts[i].off, counts[i].v);
		expect_bad(counts[i].what, b, n, -1, -EBADMSG, 1);
		free(b);
	}
	// Counts in range that the bytes do not hold: the arrays are
	// allocated, then freed.
	b = exact(msg, n);
	set_i32(b, argc_off, 1 << 20);
	expect_bad("argc 2^20", b, n, -1, -EBADMSG, 5);
	set_i32(b, argc_off, 3);
	set_i32(b, envc_off, 3);
	expect_bad("envc 3", b, n, -1, -EBADMSG, 6);
	set_i32(b, envc_off, 1);
	expect_bad("envc 1 (one string left over)", b, n, -1, -EBADMSG, 7);
	free(b);

	// Filter lengths: empty, or past the end.
	uint16_t lens[][2] = {{0, 1}, {3, 0}, {0xffff, 1}, {3, 0xffff}};
	for (size_t i = 0; i < sizeof(lens) / sizeof(lens[0]); i++) {
		b = exact(msg, n);
		memcpy(b + flen_off, lens[i], sizeof(lens[i]));
		char what[64];
		snprintf(what, sizeof(what), "filter_len %u, %u", lens[i][0], lens[i][1]);
		expect_bad(what, b, n, -1, -EBADMSG, 2);
		free(b);
	}

	// The Landlock fd: said and not sent, or sent and not said.
	expect_bad("landlock fd not said", msg, n, 9, -EBADMSG, 8);
	free(msg);
	in.landlock_fd = 5;
	msg = ward_pack_gate(&in, &n);
	expect_bad("landlock fd not sent", msg, n, -1, -EBADMSG, 8);

	// Pointers in the header mean nothing: whatever they hold is replaced.
	b = exact(msg, n);
	memset(b + offsetof(struct ward_gate, filters), 0xa5, sizeof(in) - offsetof(struct ward_gate, filters));
	struct ward_gate out;
	long detail;
	EXPECT(ward_unpack_gate(b, n, 9, &out, &detail) == 0, "pointers in the header: detail %ld", detail);
	expect_same(&in, &out, 9);
	ward_unpack_free(&out);
	free(b);
	free(msg);
}

// expect_run reads g's reports on fd until EOF and waits for pid: want
// says what the last report must be (timings: the program ran), status
// its exit status.
static void expect_run(const char *what, int fd, int pid, int want, int step, int err, int status) {
	struct ward_report r, last;
	memset(&last, 0, sizeof(last));
	ssize_t n;
	while ((n = read(fd, &r, sizeof(r))) == sizeof(r)) last = r;
	EXPECT(n == 0, "%s: read %zd", what, n);
	EXPECT(last.kind == want, "%s: last report %d (step %d, errno %d, detail %lld), want %d", what, last.kind, last.step,
	       last.err, (long long)last.detail, want);
	if (want != WARD_REPORT_TIMINGS) EXPECT(last.step == step && last.err == err, "%s: step %d errno %d", what, last.step, last.err);
	int ws;
	EXPECT(waitpid(pid, &ws, 0) == pid, "%s: waitpid", what);
	EXPECT(WIFEXITED(ws) && WEXITSTATUS(ws) == status, "%s: status %#x, want exit %d", what, ws, status);
	close(fd);
}

// true_gate runs file (/bin/true) as nobody, in /, with no cgroup, no
// filter, no namespace (a cgroup namespace of its own only).
static struct ward_gate true_gate(const char *file) {
	static char *const argv[] = {"true", NULL};
	struct ward_gate g;
	memset(&g, 0, sizeof(g));
	g.stdio[0] = g.stdio[1] = g.stdio[2] = -1;
	g.setpgid = 1;
	g.wait_fd = g.report_fd = g.landlock_fd = g.start_fd = -1;
	g.nofile = 256;
	g.uid = g.gid = 65534;
	g.dir = "/";
	g.file = file;
	g.path = "/nonexistent:/usr/bin:/bin";
	g.argv = argv;
	g.envp = no_env;
	return g;
}

static void test_spawn(void) {
	const struct {
		const char *file;
		int want, status;
	} cases[] = {
	    {"/bin/true", WARD_REPORT_TIMINGS, 0},
	    {"true", WARD_REPORT_TIMINGS, 0}, // found on PATH
	    {"no-such-program", WARD_REPORT_EXEC_ERROR, 127},
	};
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		struct ward_gate g = true_gate(cases[i].file);
		int sv[2];
		if (socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, sv) < 0) abort();
		g.report_fd = sv[1];
		int pid = ward_spawn(&g);
		close(sv[1]);
		EXPECT(pid > 0, "ward_spawn %s: %d", cases[i].file, pid);
		if (pid > 0) expect_run(cases[i].file, sv[0], pid, cases[i].want, WARD_STEP_EXEC, ENOENT, cases[i].status);
	}
}

// test_console: with console, the program's process sends a pty master
// up first ("console", SCM_RIGHTS, detail its number), and runs with the
// slave as stdin, stdout and stderr and as its controlling terminal (a
// session of its own), owned by its user. The host's devpts here.
static void test_console(void) {
	static char *const argv[] = {"sh", "-c", "tty; [ -t 0 ] && [ -t 2 ] && echo isatty; echo ctty >/dev/tty; stty size", NULL};
	struct ward_gate g = true_gate("/bin/sh");
	g.argv = argv;
	g.console = 1;
	g.console_rows = 21;
	g.console_cols = 77;
	int sv[2];
	if (socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, sv) < 0) abort();
	g.report_fd = sv[1];
	int pid = ward_spawn(&g);
	close(sv[1]);
	EXPECT(pid > 0, "ward_spawn: %d", pid);
	if (pid <= 0) return;
	struct ward_report r;
	union ward_cmsg_fd ctl;
	struct iovec iov = {.iov_base = &r, .iov_len = sizeof(r)};
	struct msghdr mh = {.msg_iov = &iov, .msg_iovlen = 1, .msg_control = ctl.b, .msg_controllen = sizeof(ctl.b)};
	ssize_t n = recvmsg(sv[0], &mh, MSG_CMSG_CLOEXEC);
	int m = -1;
	struct cmsghdr *c = CMSG_FIRSTHDR(&mh);
	if (n == sizeof(r) && c && c->cmsg_type == SCM_RIGHTS && c->cmsg_len == CMSG_LEN(sizeof(int))) memcpy(&m, CMSG_DATA(c), sizeof(int));
	EXPECT(n == sizeof(r) && r.kind == WARD_REPORT_CONSOLE && m >= 0, "first report: %zd bytes, kind %d, fd %d", n, r.kind, m);
	if (m < 0) {
		kill(pid, SIGKILL);
		waitpid(pid, NULL, 0);
		return;
	}
	char want[128], path[32];
	snprintf(path, sizeof(path), "/dev/pts/%lld", (long long)r.detail);
	snprintf(want, sizeof(want), "%s\r\nisatty\r\nctty\r\n21 77\r\n", path);
	expect_run("console", sv[0], pid, WARD_REPORT_TIMINGS, 0, 0, 0);
	char out[256];
	size_t got = 0;
	ssize_t k;
	while (got < sizeof(out) - 1 && (k = read(m, out + got, sizeof(out) - 1 - got)) > 0) got += (size_t)k; // EIO at the end
	out[got] = 0;
	EXPECT(strcmp(out, want) == 0, "the program wrote %s, want %s", out, want);
	close(m);
}

// early forks an early child on a new socket pair (our end in *fd).
static int early(int *fd) {
	int sv[2];
	if (socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, sv) < 0) abort();
	int pid = fork();
	if (pid == 0) {
		close(sv[0]);
		ward_early_child(sv[1], 0);
	}
	close(sv[1]);
	*fd = sv[0];
	return pid;
}

static void test_early_child(void) {
	// A config: the program runs.
	int fd, pid = early(&fd);
	struct ward_gate g = true_gate("true");
	EXPECT(ward_send_gate_to(&g, fd) == 0, "send");
	expect_run("early child", fd, pid, WARD_REPORT_TIMINGS, 0, 0, 0);

	// A malformed one: reported (step fork-program), exit 71.
	pid = early(&fd);
	size_t n;
	char *msg = ward_pack_gate(&g, &n);
	EXPECT(send(fd, msg, n - 1, 0) == (ssize_t)n - 1, "send");
	free(msg);
	expect_run("early child, truncated config", fd, pid, WARD_REPORT_ERROR, WARD_STEP_FORK, EBADMSG, WARD_EXIT_SETUP);

	// None (EOF): it exits quietly.
	pid = early(&fd);
	shutdown(fd, SHUT_WR);
	expect_run("early child, no config", fd, pid, 0, 0, 0, 0);
}

// test_userns_child: the child is in a user namespace of its own, and it
// ends by itself at EOF on its pipe (as when ward dies before killing it).
static void test_userns_child(void) {
	int p[2];
	if (pipe2(p, O_CLOEXEC) < 0) abort();
	int pid = ward_userns_child(p[0]);
	close(p[0]);
	EXPECT(pid > 0, "ward_userns_child: %d", pid);
	if (pid <= 0) return;
	char path[64], ours[64] = "", theirs[64] = "";
	snprintf(path, sizeof(path), "/proc/%d/ns/user", pid);
	EXPECT(readlink("/proc/self/ns/user", ours, sizeof(ours) - 1) > 0, "readlink self");
	EXPECT(readlink(path, theirs, sizeof(theirs) - 1) > 0, "readlink %s", path);
	EXPECT(strcmp(ours, theirs) != 0, "the child is in our user namespace, %s", ours);
	close(p[1]);
	int ws;
	EXPECT(waitpid(pid, &ws, 0) == pid, "waitpid");
	EXPECT(WIFEXITED(ws) && WEXITSTATUS(ws) == 0, "status %#x, want exit 0", ws);
}

static void test_step_names(void) {
	EXPECT(strcmp(ward_step_name(WARD_STEP_STDIO), "set-stdio") == 0, "first");
	EXPECT(strcmp(ward_step_name(WARD_STEP_FORK), "fork-program") == 0, "fork");
	EXPECT(strcmp(ward_step_name(WARD_STEP_CONSOLE), "console") == 0, "last");
	EXPECT(ward_step_name(-1) == NULL && ward_step_name(WARD_NSTEPS) == NULL, "out of range");
}

// test_preserve_bounds: the preserved fds' count and first fd are checked
// (detail 10).
static void test_preserve_bounds(void) {
	const struct {
		int fd, n, ok;
	} cases[] = {{0, 0, 1}, {20, 2, 1}, {4, WARD_MAX_PRESERVE, 1}, {3, 1, 0}, {-1, 1, 0}, {20, -1, 0}, {20, WARD_MAX_PRESERVE + 1, 0}, {INT32_MAX - 1, 2, 0}};
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		struct ward_gate in = sample();
		in.preserve_fd = cases[i].fd;
		in.npreserve = cases[i].n;
		size_t n;
		char *msg = ward_pack_gate(&in, &n);
		if (!msg) abort();
		struct ward_gate out;
		long detail;
		int e = ward_unpack_gate(msg, n, -1, &out, &detail);
		if (cases[i].ok) {
			EXPECT(e == 0 && out.preserve_fd == cases[i].fd && out.npreserve == cases[i].n, "case %zu: %d (detail %ld)", i, e, detail);
			if (e == 0) ward_unpack_free(&out);
		} else {
			EXPECT(e == -EBADMSG && detail == 10, "case %zu: %d (detail %ld), want -EBADMSG, 10", i, e, detail);
		}
		free(msg);
	}
}

// test_preserve_fds: two pipes inherited at fds 20 and 21 become the
// program's 3 and 4, and nothing else stays open: not fd 5 (a decoy the
// process inherits), not the report socket.
static void test_preserve_fds(void) {
	static char *const argv[] = {"sh", "-c", "echo x >&3; echo y >&4; if [ -e /proc/self/fd/5 ]; then echo leak >&3; fi", NULL};
	struct ward_gate g = true_gate("/bin/sh");
	g.argv = argv;
	int p[2][2], sv[2];
	for (int i = 0; i < 2; i++) {
		if (pipe(p[i]) < 0 || dup2(p[i][1], 20 + i) < 0) abort();
		close(p[i][1]);
	}
	int decoy = open("/dev/null", O_RDONLY);
	if (decoy < 0 || dup2(decoy, 5) < 0) abort();
	if (socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, sv) < 0) abort();
	g.report_fd = sv[1];
	g.preserve_fd = 20;
	g.npreserve = 2;
	int pid = ward_spawn(&g);
	close(sv[1]);
	close(20);
	close(21);
	close(5);
	close(decoy);
	EXPECT(pid > 0, "ward_spawn: %d", pid);
	if (pid > 0) expect_run("preserve", sv[0], pid, WARD_REPORT_TIMINGS, WARD_STEP_EXEC, 0, 0);
	const char *want[2] = {"x\n", "y\n"};
	for (int i = 0; i < 2; i++) {
		char buf[64];
		ssize_t n = read(p[i][0], buf, sizeof(buf) - 1);
		buf[n < 0 ? 0 : n] = 0;
		EXPECT(strcmp(buf, want[i]) == 0, "fd %d got %s", 3 + i, buf);
		close(p[i][0]);
	}
}

int main(void) {
	test_step_names();
	test_round_trip();
	test_sysctl_round_trip();
	test_malformed();
	test_preserve_bounds();
	if (geteuid() == 0) {
		// The program's process drops root's privileges: as anyone else,
		// its first privileged step fails instead.
		test_spawn();
		test_console();
		test_preserve_fds();
		test_early_child();
		test_userns_child();
	} else {
		fprintf(stderr, "gate_test: not root: ward_spawn, the early child and the user namespace child not run\n");
	}
	if (failures) {
		fprintf(stderr, "gate_test: %d failures\n", failures);
		return 1;
	}
	printf("gate_test: ok\n");
	return 0;
}
