// Unit tests of the init's wire formats (initwire_linux.c), built with
// AddressSanitizer and UBSan (any finding aborts the test): `make csan`,
// part of `make unit`.
//
// The config (ward_init_parse) and the exec requests (ward_exec_parse):
// round trips, and every kind of malformed message, each in a buffer of
// exactly its size so that a read past the end is caught. The JSON lines
// the init writes: escaping, nesting, numbers.

#define _GNU_SOURCE
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "init_linux.h"
#include "root_test_plan.h"

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

static size_t pad8(size_t n) { return (n + 7) & ~(size_t)7; }

// A config's parts, to vary one at a time.
struct parts {
	struct ward_init_hdr h;
	const char *hostname;
	const char *relay; // relay_len bytes
	size_t relay_len;
	const char *root;
	size_t root_len;
	const char *gate;
	size_t gate_len;
	const char *hooks; // h.hooks_count strings
	size_t hooks_len;
};

static char *const gate_argv[] = {"prog", "-x", NULL};
static char *const gate_envp[] = {"A=1", NULL};

// program_gate is a small packed gate (*n bytes, to be freed).
static char *program_gate(size_t *n) {
	struct ward_gate g;
	memset(&g, 0, sizeof(g));
	g.stdio[0] = g.stdio[1] = g.stdio[2] = -1;
	g.setpgid = 1;
	g.wait_fd = g.report_fd = g.landlock_fd = g.start_fd = -1;
	g.uid = g.gid = 1000;
	g.nofile = 64;
	g.dir = "/home/sandbox";
	g.file = "prog";
	g.path = "/bin";
	g.argv = gate_argv;
	g.envp = gate_envp;
	return ward_pack_gate(&g, n);
}

// sample is a config with something in every part: a program, a relay.
static struct parts sample(char *gate, size_t gate_len) {
	static const char relay[] = "ward\0relay\0" "9\0" "80,443\0web.test";
	struct parts p;
	memset(&p, 0, sizeof(p));
	p.h.magic = WARD_INIT_MAGIC;
	p.h.version = WARD_INIT_VERSION;
	p.h.hdr_size = sizeof(p.h);
	p.h.flags = WARD_INIT_LOOPBACK | WARD_INIT_TTY;
	p.h.time_limit_us = 1500000;
	p.h.ncgroup = 2;
	p.h.exec_fd = -1;
	p.h.start_fd = p.h.report_fd = p.h.exit_fd = -1;
	p.h.relay_exe_fd = 10;
	p.h.relay_fd = 9;
	p.h.relay_argc = 5;
	p.hostname = "sandbox";
	p.relay = relay;
	p.relay_len = sizeof(relay);
	p.root = ward_test_root_plan(&p.root_len);
	p.gate = gate;
	p.gate_len = gate_len;
	return p;
}

// build lays p out as the parent does (its lengths from p), in a buffer
// of exactly *n bytes.
static char *build(struct parts p, size_t *n) {
	p.h.hostname_len = (uint32_t)strlen(p.hostname);
	p.h.relay_len = (uint32_t)p.relay_len;
	p.h.root_len = (uint32_t)p.root_len;
	p.h.gate_len = (uint32_t)p.gate_len;
	p.h.hooks_len = (uint32_t)p.hooks_len;
	*n = sizeof(p.h) + pad8(p.h.hostname_len) + pad8(p.relay_len) + pad8(p.root_len) + pad8(p.gate_len) + pad8(p.hooks_len);
	char *b = calloc(1, *n), *q = b + sizeof(p.h);
	memcpy(b, &p.h, sizeof(p.h));
	memcpy(q, p.hostname, p.h.hostname_len);
	q += pad8(p.h.hostname_len);
	memcpy(q, p.relay, p.relay_len);
	q += pad8(p.relay_len);
	memcpy(q, p.root, p.root_len);
	q += pad8(p.root_len);
	if (p.gate_len) memcpy(q, p.gate, p.gate_len);
	q += pad8(p.gate_len);
	if (p.hooks_len) memcpy(q, p.hooks, p.hooks_len);
	return b;
}

// join lays n strings out as a section (each with its NUL): *len bytes.
static char *join(const char *const *s, size_t n, size_t *len) {
	*len = 0;
	for (size_t i = 0; i < n; i++) *len += strlen(s[i]) + 1;
	char *b = malloc(*len ? *len : 1), *q = b;
	for (size_t i = 0; i < n; i++) q = stpcpy(q, s[i]) + 1;
	return b;
}

// A hooks section: the state, two createContainer hooks, a startContainer
// one.
static const char *const hook_strs[] = {
    "{\"id\":\"c\"}",
    "createContainer", "0", "2", "1", "/bin/sh", "sh", "-c", "K=v",
    "createContainer", "5", "1", "0", "/bin/true", "true",
    "startContainer", "0", "1", "0", "/bin/true", "true",
};
#define NHOOK_STRS (sizeof(hook_strs) / sizeof(hook_strs[0]))

static void expect_bad(const char *what, struct parts p, long want);

static void test_config_round_trip(void) {
	size_t glen, n;
	char *gate = program_gate(&glen);
	char *b = build(sample(gate, glen), &n);
	struct ward_init_cfg c;
	long detail;
	EXPECT(ward_init_parse(b, n, &c, &detail) == 0, "detail %ld", detail);
	EXPECT(strcmp(c.hostname, "sandbox") == 0, "hostname %s", c.hostname);
	EXPECT(c.h.flags == (WARD_INIT_LOOPBACK | WARD_INIT_TTY) && c.h.time_limit_us == 1500000 && c.h.ncgroup == 2,
	       "header %x %lld %d", c.h.flags, (long long)c.h.time_limit_us, c.h.ncgroup);
	EXPECT(c.relay_argv && strcmp(c.relay_argv[1], "relay") == 0 && strcmp(c.relay_argv[4], "web.test") == 0 && !c.relay_argv[5],
	       "relay arguments");
	EXPECT(c.has_gate && strcmp(c.gate.file, "prog") == 0 && strcmp(c.gate.argv[1], "-x") == 0 && !c.gate.argv[2] &&
		   c.gate.landlock_fd == -1,
	       "gate");
	ward_init_free(&c);
	free(b);

	// A long-lived sandbox: an exec socket, no gate, no relay, no limit.
	struct parts p = sample(NULL, 0);
	p.h.flags = WARD_INIT_SESSION;
	p.h.time_limit_us = 0;
	p.h.exec_fd = 7;
	p.h.relay_exe_fd = p.h.relay_fd = -1;
	p.h.relay_argc = 0;
	p.relay_len = 0;
	p.hostname = "";
	b = build(p, &n);
	EXPECT(ward_init_parse(b, n, &c, &detail) == 0, "session: detail %ld", detail);
	EXPECT(!c.has_gate && !c.relay_argv && c.hostname[0] == 0, "session: gate %d", c.has_gate);
	ward_init_free(&c);
	free(b);

	// An OCI container with hooks.
	p = sample(gate, glen);
	p.h.flags |= WARD_INIT_OCI | WARD_INIT_RUNTIME_HOOKS;
	p.h.start_fd = 11;
	p.h.report_fd = 12;
	char *hooks = join(hook_strs, NHOOK_STRS, &p.hooks_len);
	p.hooks = hooks;
	p.h.hooks_count = NHOOK_STRS;
	b = build(p, &n);
	EXPECT(ward_init_parse(b, n, &c, &detail) == 0, "OCI with hooks: detail %ld", detail);
	EXPECT(c.hooks.n[WARD_HOOK_CREATE_CONTAINER] == 2 && c.hooks.n[WARD_HOOK_START_CONTAINER] == 1 &&
		   strcmp(c.hooks.state, hook_strs[0]) == 0,
	       "hooks %u %u", c.hooks.n[0], c.hooks.n[1]);
	ward_init_free(&c);
	EXPECT(c.hooks.all == NULL && c.hooks.n[0] == 0, "hooks left after free");
	free(b);
	// ward.report: an exit record fd, only an OCI container's.
	p.h.exit_fd = 13;
	b = build(p, &n);
	EXPECT(ward_init_parse(b, n, &c, &detail) == 0 && c.h.exit_fd == 13, "OCI with an exit record: detail %ld", detail);
	ward_init_free(&c);
	free(b);
	p.h.exit_fd = 2;
	expect_bad("exit record fd at stderr", p, 5);
	p.h.exit_fd = -1;
	p.h.hooks_count--;
	expect_bad("hooks' count short", p, 13);
	p.h.hooks_count++;
	p.h.flags &= ~(uint32_t)WARD_INIT_OCI;
	p.h.start_fd = p.h.report_fd = -1;
	expect_bad("runtime hooks without OCI", p, 4);
	p.h.exit_fd = 13;
	p.h.flags &= ~(uint32_t)WARD_INIT_RUNTIME_HOOKS;
	expect_bad("exit record without OCI", p, 5);
	p.h.flags |= WARD_INIT_RUNTIME_HOOKS;
	p.h.exit_fd = -1;
	p.h.flags &= ~(uint32_t)WARD_INIT_RUNTIME_HOOKS;
	expect_bad("hooks without OCI", p, 13);
	free(hooks);
	free(gate);
}

// expect_bad parses p's config and expects it refused with detail.
static void expect_bad(const char *what, struct parts p, long want) {
	size_t n;
	char *b = build(p, &n);
	struct ward_init_cfg c;
	long detail = -99;
	int e = ward_init_parse(b, n, &c, &detail);
	EXPECT(e == -EBADMSG && detail == want, "%s: got %d detail %ld, want EBADMSG detail %ld", what, e, detail, want);
	EXPECT(c.relay_argv == NULL && !c.has_gate && c.hooks.all == NULL, "%s: left allocated", what);
	free(b);
}

static void test_config_malformed(void) {
	size_t glen, n;
	char *gate = program_gate(&glen);
	struct parts p;

	// Every truncation, and a byte more.
	char *full = build(sample(gate, glen), &n);
	for (size_t k = 0; k <= n + 1; k++) {
		if (k == n) continue;
		char *b = malloc(k ? k : 1);
		memcpy(b, full, k < n ? k : n);
		if (k > n) b[n] = 0;
		struct ward_init_cfg c;
		long detail;
		int e = ward_init_parse(b, k, &c, &detail);
		EXPECT(e == -EBADMSG, "truncated to %zu: %d", k, e);
		if (k < sizeof(struct ward_init_hdr)) EXPECT(detail == (long)k, "truncated to %zu: detail %ld", k, detail);
		else EXPECT(detail == 6, "truncated to %zu: detail %ld", k, detail);
		free(b);
	}
	free(full);

#define BAD(what, change, want)                \
	do {                                   \
		p = sample(gate, glen);        \
		change;                        \
		expect_bad(what, p, want);     \
	} while (0)
	BAD("magic", p.h.magic ^= 1, 1);
	BAD("version 0", p.h.version = 0, 2);
	BAD("version 2", p.h.version = 2, 2);
	BAD("header size", p.h.hdr_size += 8, 3);
	BAD("an unknown flag", p.h.flags |= 1u << 20, 4);
	BAD("a negative time limit", p.h.time_limit_us = -1, 4);
	BAD("a time limit the deadline overflows with", p.h.time_limit_us = INT64_MAX, 4);
	BAD("ncgroup -1", p.h.ncgroup = -1, 5);
	BAD("ncgroup 17", p.h.ncgroup = WARD_MAX_CGROUPS + 1, 5);
	BAD("relay fd 3 (the protocol socket)", p.h.relay_fd = 3, 5);
	BAD("relay exe fd -2", p.h.relay_exe_fd = -2, 5);
	BAD("relay fd without the binary", p.h.relay_exe_fd = -1, 5);
	BAD("relay arguments without fds", (p.h.relay_exe_fd = p.h.relay_fd = -1), 5);
	BAD("an exec socket without a session", p.h.exec_fd = 7, 5);
	BAD("a session without an exec socket", p.h.flags |= WARD_INIT_SESSION, 4); // with its time limit
	BAD("an OCI container without its fds", p.h.flags |= WARD_INIT_OCI, 5);
	BAD("an exec fifo without OCI", p.h.start_fd = 11, 5);
	BAD("an OCI report socket on fd 3", (p.h.flags |= WARD_INIT_OCI, p.h.start_fd = 11, p.h.report_fd = 3), 5);
	BAD("an OCI container's report socket alone", (p.h.flags |= WARD_INIT_OCI, p.h.report_fd = 12), 5);
	BAD("hostname of 65 bytes", p.hostname = "0123456789012345678901234567890123456789012345678901234567890123x", 7);
	BAD("relay strings short of argc", p.h.relay_argc = 6, 8);
	BAD("relay strings past argc", p.h.relay_argc = 4, 8);
	BAD("relay argc past the bytes", p.h.relay_argc = 1000, 8);
	BAD("relay's last NUL missing", p.relay_len -= 1, 8);
	BAD("a root plan cut short", p.root_len -= 1, 9);
	BAD("no gate", p.gate_len = 0, 11);
	BAD("a gate cut short", p.gate_len -= 1, 10);
#undef BAD

	// A NUL inside the hostname; a gate in a session.
	p = sample(gate, glen);
	char *b = build(p, &n);
	b[sizeof(struct ward_init_hdr) + 2] = 0;
	struct ward_init_cfg c;
	long detail;
	EXPECT(ward_init_parse(b, n, &c, &detail) == -EBADMSG && detail == 7, "NUL in the hostname: detail %ld", detail);
	free(b);
	p = sample(gate, glen);
	p.h.flags |= WARD_INIT_SESSION;
	p.h.time_limit_us = 0;
	p.h.exec_fd = 7;
	expect_bad("a gate in a session", p, 11);

	// Padding that is not zero (the hostname's: 7 bytes, 1 of padding).
	p = sample(gate, glen);
	b = build(p, &n);
	b[sizeof(struct ward_init_hdr) + 7] = 'x';
	EXPECT(ward_init_parse(b, n, &c, &detail) == -EBADMSG && detail == 12, "padding: detail %ld", detail);
	free(b);

	// Lengths that overflow, or say more than the message holds.
	p = sample(gate, glen);
	full = build(p, &n);
	uint32_t huge[] = {0xffffffffu, WARD_INIT_MAX + 1, (uint32_t)n};
	for (size_t i = 0; i < sizeof(huge) / sizeof(huge[0]); i++) {
		b = malloc(n);
		memcpy(b, full, n);
		memcpy(b + offsetof(struct ward_init_hdr, root_len), &huge[i], 4);
		EXPECT(ward_init_parse(b, n, &c, &detail) == -EBADMSG && detail == 6, "root_len %u: detail %ld", huge[i], detail);
		free(b);
	}
	free(full);
	free(gate);
}

static void test_exec_parse(void) {
	struct ward_exec_hdr h = {WARD_EXEC_MAGIC, WARD_EXEC_VERSION, 7, 9};
	struct ward_exec_hdr got;
	struct ward_gate g;
	long detail;
	char *b = malloc(sizeof(h));
	memcpy(b, &h, sizeof(h));
	EXPECT(ward_exec_parse(b, sizeof(h), &got, &g, &detail) == 0 && got.id == 7 && got.kill == 9, "kill: detail %ld", detail);
	free(b);

	size_t glen;
	char *gate = program_gate(&glen);
	size_t n = sizeof(h) + glen;
	h.kill = 0;
	b = malloc(n);
	memcpy(b, &h, sizeof(h));
	memcpy(b + sizeof(h), gate, glen);
	EXPECT(ward_exec_parse(b, n, &got, &g, &detail) == 0 && strcmp(g.argv[0], "prog") == 0, "exec: detail %ld", detail);
	ward_unpack_free(&g);
	for (size_t k = 0; k < n; k++) {
		char *t = malloc(k ? k : 1);
		memcpy(t, b, k);
		EXPECT(ward_exec_parse(t, k, &got, &g, &detail) == -EBADMSG, "truncated to %zu", k);
		EXPECT(g.argv == NULL, "truncated to %zu: arrays left set", k);
		free(t);
	}
	const struct {
		const char *what;
		size_t off;
		int32_t v;
		long want;
	} bad[] = {
	    {"magic", 0, 0, 1},
	    {"version", 4, 2, 1},
	    {"signal -1", 12, -1, 2},
	    {"signal 65", 12, 65, 2},
	    {"a kill with a gate after it", 12, 9, 2},
	};
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		char *t = malloc(n);
		memcpy(t, b, n);
		memcpy(t + bad[i].off, &bad[i].v, 4);
		EXPECT(ward_exec_parse(t, n, &got, &g, &detail) == -EBADMSG && detail == bad[i].want, "%s: detail %ld", bad[i].what,
		       detail);
		free(t);
	}
	free(b);
	free(gate);
}

// parse_hooks parses the n strings s as a hooks section (in *buf, to be
// freed): the parser's result.
static int parse_hooks(const char *const *s, size_t n, struct ward_hooks *hs, char **buf) {
	size_t len;
	*buf = join(s, n, &len);
	return ward_hooks_parse(*buf, len, (uint32_t)n, hs);
}

static void test_hooks_parse(void) {
	struct ward_hooks hs;
	char *b;
	EXPECT(parse_hooks(hook_strs, NHOOK_STRS, &hs, &b) == 0, "the sample");
	const struct ward_hook *h = hs.h[WARD_HOOK_CREATE_CONTAINER];
	EXPECT(hs.state_len == strlen(hook_strs[0]) && strcmp(h[0].path, "/bin/sh") == 0 && strcmp(h[0].argv[1], "-c") == 0 &&
		   !h[0].argv[2] && strcmp(h[0].envp[0], "K=v") == 0 && !h[0].envp[1] && h[1].timeout_s == 5 && !h[1].envp[0] &&
		   strcmp(hs.h[WARD_HOOK_START_CONTAINER][0].argv[0], "true") == 0,
	       "the sample's fields");
	ward_hooks_free(&hs);
	// Every truncation (the same count).
	size_t len;
	char *full = join(hook_strs, NHOOK_STRS, &len);
	for (size_t k = 0; k < len; k++) {
		char *t = malloc(k ? k : 1);
		memcpy(t, full, k);
		EXPECT(ward_hooks_parse(t, k, NHOOK_STRS, &hs) == -EBADMSG && hs.all == NULL, "truncated to %zu", k);
		free(t);
	}
	EXPECT(ward_hooks_parse(full, len, NHOOK_STRS - 1, &hs) == -EBADMSG, "a string past the count");
	EXPECT(ward_hooks_parse(full, len, NHOOK_STRS + 1, &hs) == -EBADMSG, "a count past the strings");
	EXPECT(ward_hooks_parse(full, 0, 0, &hs) == 0 && hs.n[0] == 0 && hs.n[1] == 0, "none");
	free(full);
	free(b);
	const struct {
		const char *what;
		size_t at;
		const char *v;
	} bad[] = {
	    {"an unknown kind", 1, "poststop"},
	    {"createContainer after startContainer", 1, "startContainer"},
	    {"a timeout past a day", 2, "86401"},
	    {"a timeout with a letter", 2, "1x"},
	    {"an empty timeout", 2, ""},
	    {"11 digits", 2, "00000000001"},
	    {"argc 0", 3, "0"},
	    {"argc past the strings", 3, "99"},
	    {"envc past the strings", 4, "99"},
	    {"a relative path", 5, "bin/sh"},
	    {"env without =", 8, "K"},
	};
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		const char *v[NHOOK_STRS];
		memcpy(v, hook_strs, sizeof(v));
		v[bad[i].at] = bad[i].v;
		EXPECT(parse_hooks(v, NHOOK_STRS, &hs, &b) == -EBADMSG && hs.all == NULL, "%s", bad[i].what);
		free(b);
	}
	// A hook's strings cut short of its argv.
	EXPECT(parse_hooks(hook_strs, 7, &hs, &b) == -EBADMSG, "a hook cut short");
	free(b);
}

// run_hooks parses the n strings s (state first) and runs their
// createContainer hooks: ward_hooks_run's result, its message in msg.
static int run_hooks(const char *const *s, size_t n, char *msg, size_t size) {
	struct ward_hooks hs;
	char *b;
	int r = -99;
	msg[0] = 0;
	if (parse_hooks(s, n, &hs, &b) == 0) r = ward_hooks_run(&hs, WARD_HOOK_CREATE_CONTAINER, NULL, msg, size);
	ward_hooks_free(&hs);
	free(b);
	return r;
}

static char *slurp(const char *dir, const char *name) {
	static char buf[4096];
	char path[512];
	snprintf(path, sizeof(path), "%s/%s", dir, name);
	FILE *f = fopen(path, "r");
	size_t n = f ? fread(buf, 1, sizeof(buf) - 1, f) : 0;
	if (f) fclose(f);
	buf[n] = 0;
	return buf;
}

// test_hooks_run runs real hooks (/bin/sh) in a temp dir: the state on
// stdin, only the hook's env, in order, the first failure with its
// output, the timeout, a path that does not exist.
static void test_hooks_run(void) {
	char dir[] = "/tmp/ward-hooks-test.XXXXXX", c1[600], c2[600], c3[600], msg[4096];
	if (!mkdtemp(dir)) {
		EXPECT(0, "mkdtemp: %s", strerror(errno));
		return;
	}
	snprintf(c1, sizeof(c1), "cat > %s/state; echo \"$K ${HOME:-nohome}\" > %s/env; echo 1 >> %s/order", dir, dir, dir);
	snprintf(c2, sizeof(c2), "echo 2 >> %s/order", dir);
	const char *ok[] = {"{\"id\":\"c\",\"pid\":1}", "createContainer", "0", "3", "1", "/bin/sh", "sh", "-c", c1, "K=v",
			    "createContainer", "0", "3", "0", "/bin/sh", "sh", "-c", c2};
	EXPECT(run_hooks(ok, sizeof(ok) / sizeof(ok[0]), msg, sizeof(msg)) == 0, "two hooks: %s", msg);
	EXPECT(strcmp(slurp(dir, "state"), ok[0]) == 0, "state on stdin: %s", slurp(dir, "state"));
	EXPECT(strcmp(slurp(dir, "env"), "v nohome\n") == 0, "env: %s", slurp(dir, "env"));
	EXPECT(strcmp(slurp(dir, "order"), "1\n2\n") == 0, "order: %s", slurp(dir, "order"));

	snprintf(c3, sizeof(c3), "echo 3 >> %s/order; echo; echo broken >&2; exit 3", dir);
	const char *fail[] = {"{}", "createContainer", "0", "3", "0", "/bin/sh", "sh", "-c", c3,
			      "createContainer", "0", "3", "0", "/bin/sh", "sh", "-c", c2};
	EXPECT(run_hooks(fail, sizeof(fail) / sizeof(fail[0]), msg, sizeof(msg)) == -1 &&
		   strcmp(msg, "createContainer hook #0 (/bin/sh): exit status 3: output: broken") == 0,
	       "a failing hook: %s", msg);
	EXPECT(strcmp(slurp(dir, "order"), "1\n2\n3\n") == 0, "the hook after a failure ran: %s", slurp(dir, "order"));

	const char *slow[] = {"{}", "createContainer", "1", "2", "0", "/bin/sleep", "sleep", "30"};
	EXPECT(run_hooks(slow, sizeof(slow) / sizeof(slow[0]), msg, sizeof(msg)) == -1 &&
		   strcmp(msg, "createContainer hook #0 (/bin/sleep): killed after its timeout of 1 s") == 0,
	       "timeout: %s", msg);
	const char *missing[] = {"{}", "createContainer", "0", "1", "0", "/nonexistent/hook", "hook"};
	EXPECT(run_hooks(missing, sizeof(missing) / sizeof(missing[0]), msg, sizeof(msg)) == -1 &&
		   strcmp(msg, "createContainer hook #0 (/nonexistent/hook): exit status 127: output: exec /nonexistent/hook: No such file or directory") == 0,
	       "no such hook: %s", msg);
	char cmd[700];
	snprintf(cmd, sizeof(cmd), "rm -rf %s", dir);
	EXPECT(system(cmd) == 0, "%s", cmd);
}

// expect_json ends j and compares its line with want.
static void expect_json(const char *what, struct ward_json *j, const char *want) {
	size_t n;
	const char *line = ward_json_end(j, &n);
	EXPECT(line && n == strlen(want) && memcmp(line, want, n) == 0, "%s: got %.*s want %s", what, (int)n, line ? line : "",
	       want);
	ward_json_free(j);
}

static void test_json(void) {
	struct ward_json j;
	ward_json_begin(&j);
	ward_json_str(&j, "type", "error");
	ward_json_str(&j, "path", "/a\"b\\c\n\x01\x1f\x7f\xc3\xa9");
	ward_json_int(&j, "errno", -2);
	ward_json_int(&j, "big", INT64_MIN);
	ward_json_bool(&j, "t", 1);
	ward_json_bool(&j, "f", 0);
	expect_json("escapes", &j,
		    "{\"type\":\"error\",\"path\":\"/a\\\"b\\\\c\\u000a\\u0001\\u001f\x7f\xc3\xa9\",\"errno\":-2,"
		    "\"big\":-9223372036854775808,\"t\":true,\"f\":false}\n");

	ward_json_begin(&j);
	ward_json_open(&j, "steps", '[');
	for (int i = 0; i < 2; i++) {
		ward_json_open(&j, NULL, '{');
		ward_json_str(&j, "step", i ? "b" : "a");
		ward_json_int(&j, "us", i);
		ward_json_close(&j, '}');
	}
	ward_json_close(&j, ']');
	ward_json_open(&j, "exit", '{');
	ward_json_close(&j, '}');
	ward_json_open(&j, "none", '[');
	ward_json_close(&j, ']');
	ward_json_int(&j, "n", 1);
	expect_json("nesting", &j, "{\"steps\":[{\"step\":\"a\",\"us\":0},{\"step\":\"b\",\"us\":1}],\"exit\":{},\"none\":[],\"n\":1}\n");

	// A long string grows the buffer many times.
	char *big = malloc(100001);
	memset(big, '"', 100000);
	big[100000] = 0;
	ward_json_begin(&j);
	ward_json_str(&j, "s", big);
	size_t n;
	const char *line = ward_json_end(&j, &n);
	EXPECT(line && n == 200000 + 9, "long string: %zu bytes", n);
	ward_json_free(&j);
	free(big);
}

int main(void) {
	test_config_round_trip();
	test_config_malformed();
	test_exec_parse();
	test_hooks_parse();
	test_hooks_run();
	test_json();
	if (failures) {
		fprintf(stderr, "%d failure(s)\n", failures);
		return 1;
	}
	printf("init wire tests: ok\n");
	return 0;
}
