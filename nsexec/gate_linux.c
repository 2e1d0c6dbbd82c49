// The config of the early child (spawn_linux.c) as one message, and back.
//
// The init packs a struct ward_gate into one SOCK_SEQPACKET message; the
// early child, a plain C process, unpacks it. Both are pure functions (but
// for malloc), apart from the socket code in spawn_linux.c, so that the
// sanitizer-built unit tests (ctest/gate_test.c) and the fuzz target
// (fuzz_test.go, through gate_fuzz_linux.go) can run them on any bytes.
//
// The message is the struct (pointers zeroed) and the counts of arguments,
// environment and sysctls, then the filters, dir, file, path, the
// arguments, the environment and the sysctls ("key=value"), each string
// NUL-terminated. Both sides are the same
// binary: the struct travels as it is laid out in memory.

#define _GNU_SOURCE
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "spawn_linux.h"

struct packed {
	struct ward_gate g;
	int32_t argc, envc, sysctlc, pad;
};

// No config has this many arguments or variables (the socket's buffer is
// far smaller): a bound that keeps the arrays' sizes from overflowing.
#define MAX_STRINGS (1 << 20)

// ward_pack_gate returns g as one message in a buffer of *n bytes (to be
// freed), or NULL when out of memory.
char *ward_pack_gate(const struct ward_gate *g, size_t *n) {
	size_t size = sizeof(struct packed);
	int argc = 0, envc = 0, sysctlc = 0;
	for (int i = 0; i < g->nfilters; i++) size += (size_t)g->filter_len[i] * 8;
	size += strlen(g->dir) + strlen(g->file) + strlen(g->path) + 3;
	for (; g->argv[argc]; argc++) size += strlen(g->argv[argc]) + 1;
	for (; g->envp[envc]; envc++) size += strlen(g->envp[envc]) + 1;
	for (; g->sysctl && g->sysctl[sysctlc]; sysctlc++) size += strlen(g->sysctl[sysctlc]) + 1;
	char *buf = calloc(1, size), *p = buf + sizeof(struct packed);
	if (!buf) return NULL;
	struct packed *pk = (struct packed *)buf;
	pk->g = *g;
	pk->argc = argc;
	pk->envc = envc;
	pk->sysctlc = sysctlc;
	for (int i = 0; i < WARD_MAX_FILTERS; i++) pk->g.filters[i] = NULL;
	pk->g.dir = pk->g.file = pk->g.path = NULL;
	pk->g.argv = pk->g.envp = pk->g.sysctl = NULL;
	for (int i = 0; i < g->nfilters; i++) {
		memcpy(p, g->filters[i], (size_t)g->filter_len[i] * 8);
		p += (size_t)g->filter_len[i] * 8;
	}
	const char *strs[3] = {g->dir, g->file, g->path};
	for (int i = 0; i < 3; i++) p = stpcpy(p, strs[i]) + 1;
	for (int i = 0; i < argc; i++) p = stpcpy(p, g->argv[i]) + 1;
	for (int i = 0; i < envc; i++) p = stpcpy(p, g->envp[i]) + 1;
	for (int i = 0; i < sysctlc; i++) p = stpcpy(p, g->sysctl[i]) + 1;
	*n = size;
	return buf;
}

// take_str returns the NUL-terminated string at *p and moves past it, or
// NULL when no NUL comes before end.
static const char *take_str(char **p, char *end) {
	if (*p >= end) return NULL;
	char *nul = memchr(*p, 0, end - *p);
	if (!nul) return NULL;
	const char *s = *p;
	*p = nul + 1;
	return s;
}

// ward_unpack_gate reads the message buf (n bytes, any alignment) into g,
// whose strings and filters then point into buf, and whose argv and envp
// ward_unpack_free frees. landlock_fd is the fd that came with the message
// (-1: none); report_fd and wait_fd are -1 and ncgroup 0 (the early child
// has entered its cgroups already). It returns 0, or -EBADMSG (-ENOMEM)
// with *detail saying which check failed: the size (n itself), 1 a count,
// 2 a filter, 3 dir, file or path, 4 (ENOMEM) the arrays, 5 an argument,
// 6 a variable, 7 bytes after the last, 8 the Landlock fd, 9 a sysctl (no
// "=" in it, or past the end), 10 the preserved fds. Everything the message says is checked
// against its size; the counts of groups and rlimits against their arrays
// (1).
int ward_unpack_gate(char *buf, size_t n, int landlock_fd, struct ward_gate *g, long *detail) {
	struct packed pk;
	memset(g, 0, sizeof(*g));
	*detail = (long)n;
	if (n < sizeof(pk)) return -EBADMSG;
	memcpy(&pk, buf, sizeof(pk));
	*g = pk.g;
	g->dir = g->file = g->path = NULL;
	g->argv = g->envp = g->sysctl = NULL;
	for (int i = 0; i < WARD_MAX_FILTERS; i++) g->filters[i] = NULL;
	g->report_fd = g->wait_fd = g->start_fd = -1;
	g->ncgroup = 0;
	// The config says whether a ruleset was sent: one must have come.
	*detail = 8;
	if ((g->landlock_fd >= 0) != (landlock_fd >= 0)) return -EBADMSG;
	g->landlock_fd = landlock_fd;
	char *p = buf + sizeof(pk), *end = buf + n;
	*detail = 1;
	if (g->nfilters < 0 || g->nfilters > WARD_MAX_FILTERS || pk.argc < 1 || pk.envc < 0 || pk.argc > MAX_STRINGS ||
	    pk.envc > MAX_STRINGS || pk.sysctlc < 0 || pk.sysctlc > MAX_STRINGS || g->ngroups < 0 ||
	    g->ngroups > WARD_MAX_GROUPS || g->nrlimits < 0 || g->nrlimits > WARD_MAX_RLIMITS)
		return -EBADMSG;
	// Preserved fds are above the protocol socket, and few.
	*detail = 10;
	if (g->npreserve < 0 || g->npreserve > WARD_MAX_PRESERVE ||
	    (g->npreserve > 0 && (g->preserve_fd <= WARD_PROTO_FD || g->preserve_fd > INT32_MAX - WARD_MAX_PRESERVE)))
		return -EBADMSG;
	*detail = 2;
	for (int i = 0; i < g->nfilters; i++) {
		size_t len = (size_t)g->filter_len[i] * 8;
		if (len == 0 || len > (size_t)(end - p)) return -EBADMSG;
		g->filters[i] = p;
		p += len;
	}
	*detail = 3;
	const char **strs[3] = {&g->dir, &g->file, &g->path};
	for (int i = 0; i < 3; i++)
		if (!(*strs[i] = take_str(&p, end))) return -EBADMSG;
	*detail = 4;
	char **argv = calloc((size_t)pk.argc + 1, sizeof(char *)), **envp = calloc((size_t)pk.envc + 1, sizeof(char *));
	char **sysctl = pk.sysctlc ? calloc((size_t)pk.sysctlc + 1, sizeof(char *)) : NULL;
	int e = 0;
	if (!argv || !envp || (pk.sysctlc && !sysctl)) e = -ENOMEM;
	for (int i = 0; !e && i < pk.argc; i++)
		if (!(argv[i] = (char *)take_str(&p, end))) *detail = 5, e = -EBADMSG;
	for (int i = 0; !e && i < pk.envc; i++)
		if (!(envp[i] = (char *)take_str(&p, end))) *detail = 6, e = -EBADMSG;
	for (int i = 0; !e && i < pk.sysctlc; i++)
		if (!(sysctl[i] = (char *)take_str(&p, end)) || !strchr(sysctl[i], '=')) *detail = 9, e = -EBADMSG;
	if (!e && p != end) *detail = 7, e = -EBADMSG;
	if (e) {
		free(argv);
		free(envp);
		free(sysctl);
		return e;
	}
	g->argv = argv;
	g->envp = envp;
	g->sysctl = sysctl;
	*detail = 0;
	return 0;
}

// ward_unpack_free frees what ward_unpack_gate allocated for g (not buf).
void ward_unpack_free(struct ward_gate *g) {
	free((void *)g->argv);
	free((void *)g->envp);
	free((void *)g->sysctl);
	g->argv = g->envp = g->sysctl = NULL;
}
