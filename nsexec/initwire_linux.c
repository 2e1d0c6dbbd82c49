// The sandbox init's wire formats (init_linux.h): the config it reads on
// fd 3, the exec requests of a long-lived sandbox, and the JSON lines it
// writes back. Pure functions (but for malloc), so that the
// sanitizer-built unit tests (ctest/init_test.c) and the Go fuzz target
// (initwire_fuzz_linux.go) can run them on any bytes.
//
// The parsers trust nothing in the message: every length and count is
// checked against the message's size before anything is read, every
// string must end with its NUL inside its section, and bytes left over
// are an error.

#define _GNU_SOURCE
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "init_linux.h"

// pad8 is n rounded up to a multiple of 8 (n <= WARD_INIT_MAX: no overflow).
static size_t pad8(size_t n) { return (n + 7) & ~(size_t)7; }

// take_strings reads count NUL-terminated strings that fill exactly
// [p, p+len) into a new NULL-terminated array (*out; NULL for count 0).
static int take_strings(char *p, size_t len, uint32_t count, char ***out) {
	*out = NULL;
	if (count == 0) return len == 0 ? 0 : -EBADMSG;
	if (count > len) return -EBADMSG; // each string takes at least its NUL
	char **v = calloc((size_t)count + 1, sizeof(char *));
	if (!v) return -ENOMEM;
	char *end = p + len;
	for (uint32_t i = 0; i < count; i++) {
		char *nul = p < end ? memchr(p, 0, end - p) : NULL;
		if (!nul) {
			free(v);
			return -EBADMSG;
		}
		v[i] = p;
		p = nul + 1;
	}
	if (p != end) {
		free(v);
		return -EBADMSG;
	}
	*out = v;
	return 0;
}

// ward_init_parse: *detail says which check failed: the size (n itself),
// 1 magic, 2 version, 3 header size, 4 flags, 5 fds or cgroup count, 6
// section lengths (against n), 7 hostname, 8 relay arguments, 9 root plan,
// 10 gate, 11 the gate's presence (one without a session, none in one),
// 12 padding that is not zero, 13 the hooks (only an OCI container's).
int ward_init_parse(char *buf, size_t n, struct ward_init_cfg *c, long *detail) {
	memset(c, 0, sizeof(*c));
	*detail = (long)n;
	if (n < sizeof(c->h) || n > WARD_INIT_MAX) return -EBADMSG;
	memcpy(&c->h, buf, sizeof(c->h));
	const struct ward_init_hdr *h = &c->h;
	*detail = 1;
	if (h->magic != WARD_INIT_MAGIC) return -EBADMSG;
	*detail = 2;
	if (h->version != WARD_INIT_VERSION) return -EBADMSG;
	*detail = 3;
	if (h->hdr_size != sizeof(*h)) return -EBADMSG;
	*detail = 4;
	if (h->flags & ~(uint32_t)WARD_INIT_ALL_FLAGS || h->time_limit_us < 0 || h->time_limit_us > WARD_INIT_MAX_TIME_LIMIT_US ||
	    (h->time_limit_us && (h->flags & WARD_INIT_SESSION)) ||
	    ((h->flags & WARD_INIT_RUNTIME_HOOKS) && !(h->flags & WARD_INIT_OCI)))
		return -EBADMSG;
	*detail = 5;
	// An fd is -1 (none) or above the protocol socket; the relay needs
	// both of its fds or neither.
	const int32_t fds[6] = {h->exec_fd, h->relay_exe_fd, h->relay_fd, h->start_fd, h->report_fd, h->exit_fd};
	for (int i = 0; i < 6; i++)
		if (fds[i] < -1 || (fds[i] >= 0 && fds[i] <= WARD_PROTO_FD)) return -EBADMSG;
	// An OCI container has both the exec fifo and the report socket, and
	// is not a long-lived sandbox; anything else has neither.
	int oci = !!(h->flags & WARD_INIT_OCI);
	if ((h->start_fd >= 0) != oci || (h->report_fd >= 0) != oci || (oci && (h->flags & WARD_INIT_SESSION))) return -EBADMSG;
	if (h->exit_fd >= 0 && !oci) return -EBADMSG; // the exit record is only an OCI container's
	if (h->ncgroup < 0 || h->ncgroup > WARD_MAX_CGROUPS || (h->relay_exe_fd < 0) != (h->relay_fd < 0) ||
	    (h->relay_exe_fd < 0) != (h->relay_argc == 0) || (h->exec_fd >= 0) != !!(h->flags & WARD_INIT_SESSION))
		return -EBADMSG;
	*detail = 6;
	const uint32_t lens[5] = {h->hostname_len, h->relay_len, h->root_len, h->gate_len, h->hooks_len};
	size_t want = sizeof(*h);
	for (int i = 0; i < 5; i++) {
		if (lens[i] > WARD_INIT_MAX) return -EBADMSG;
		want += pad8(lens[i]);
		if (want > n) return -EBADMSG;
	}
	if (want != n) return -EBADMSG;
	*detail = 12;
	char *p = buf + sizeof(*h);
	for (int i = 0; i < 5; i++) {
		for (size_t k = lens[i]; k < pad8(lens[i]); k++)
			if (p[k]) return -EBADMSG;
		p += pad8(lens[i]);
	}
	p = buf + sizeof(*h);
	*detail = 7;
	if (h->hostname_len > WARD_HOSTNAME_MAX || memchr(p, 0, h->hostname_len)) return -EBADMSG;
	memcpy(c->hostname, p, h->hostname_len);
	p += pad8(h->hostname_len);
	*detail = 8;
	int e = take_strings(p, h->relay_len, h->relay_argc, &c->relay_argv);
	if (e) return e;
	p += pad8(h->relay_len);
	*detail = 9;
	if ((e = ward_unpack_root(p, h->root_len, &c->root))) {
		ward_init_free(c);
		return -EBADMSG;
	}
	p += pad8(h->root_len);
	*detail = 11;
	if ((h->gate_len == 0) != !!(h->flags & WARD_INIT_SESSION)) {
		ward_init_free(c);
		return -EBADMSG;
	}
	if (h->gate_len) {
		long gd;
		if ((e = ward_unpack_gate(p, h->gate_len, -1, &c->gate, &gd))) {
			ward_init_free(c);
			*detail = 10;
			return e;
		}
		c->has_gate = 1;
	}
	p += pad8(h->gate_len);
	*detail = 13;
	if ((h->hooks_len && !oci) || (e = ward_hooks_parse(p, h->hooks_len, h->hooks_count, &c->hooks))) {
		ward_init_free(c);
		return e == -ENOMEM ? e : -EBADMSG;
	}
	*detail = 0;
	return 0;
}

void ward_init_free(struct ward_init_cfg *c) {
	free(c->relay_argv);
	c->relay_argv = NULL;
	if (c->has_gate) ward_unpack_free(&c->gate);
	c->has_gate = 0;
	ward_hooks_free(&c->hooks);
}

// ward_exec_parse: *detail is the size (n), 1 magic or version, 2 the
// signal, 3 the gate (its own detail then in the errno's place is lost:
// the gate's parser is tested on its own).
int ward_exec_parse(char *buf, size_t n, struct ward_exec_hdr *h, struct ward_gate *g, long *detail) {
	memset(g, 0, sizeof(*g));
	*detail = (long)n;
	if (n < sizeof(*h)) return -EBADMSG;
	memcpy(h, buf, sizeof(*h));
	*detail = 1;
	if (h->magic != WARD_EXEC_MAGIC || h->version != WARD_EXEC_VERSION) return -EBADMSG;
	*detail = 2;
	if (h->kill < 0 || h->kill > 64) return -EBADMSG;
	if (h->kill) {
		if (n != sizeof(*h)) return -EBADMSG;
		*detail = 0;
		return 0;
	}
	*detail = 3;
	long gd;
	int e = ward_unpack_gate(buf + sizeof(*h), n - sizeof(*h), -1, g, &gd);
	if (e) return e;
	*detail = 0;
	return 0;
}

// ---- JSON lines ----

// put appends n bytes; on a failed allocation the message is marked lost.
static void put(struct ward_json *j, const char *s, size_t n) {
	if (j->oom) return;
	if (j->len + n + 2 > j->cap) { // room for the final "}\n"
		size_t cap = j->cap ? j->cap : 256;
		while (j->len + n + 2 > cap) cap *= 2;
		char *b = realloc(j->buf, cap);
		if (!b) {
			j->oom = 1;
			return;
		}
		j->buf = b;
		j->cap = cap;
	}
	memcpy(j->buf + j->len, s, n);
	j->len += n;
}

// quoted appends s as a JSON string.
static void quoted(struct ward_json *j, const char *s) {
	put(j, "\"", 1);
	for (const unsigned char *p = (const unsigned char *)s; *p; p++) {
		char esc[8];
		if (*p == '"' || *p == '\\') {
			esc[0] = '\\';
			esc[1] = (char)*p;
			put(j, esc, 2);
		} else if (*p < 0x20) {
			snprintf(esc, sizeof(esc), "\\u%04x", *p);
			put(j, esc, 6);
		} else {
			put(j, (const char *)p, 1);
		}
	}
	put(j, "\"", 1);
}

// member starts a member (key NULL: an array's element).
static void member(struct ward_json *j, const char *key) {
	if (!j->first[j->depth]) put(j, ",", 1);
	j->first[j->depth] = 0;
	if (key) {
		quoted(j, key);
		put(j, ":", 1);
	}
}

void ward_json_begin(struct ward_json *j) {
	memset(j, 0, sizeof(*j));
	j->first[0] = 1;
	put(j, "{", 1);
}

void ward_json_str(struct ward_json *j, const char *key, const char *v) {
	member(j, key);
	quoted(j, v);
}

void ward_json_int(struct ward_json *j, const char *key, int64_t v) {
	char num[24];
	member(j, key);
	put(j, num, (size_t)snprintf(num, sizeof(num), "%lld", (long long)v));
}

void ward_json_bool(struct ward_json *j, const char *key, int v) {
	member(j, key);
	put(j, v ? "true" : "false", v ? 4 : 5);
}

void ward_json_open(struct ward_json *j, const char *key, char kind) {
	member(j, key);
	put(j, &kind, 1);
	if (j->depth + 1 < (int)(sizeof(j->first) / sizeof(j->first[0]))) j->depth++;
	j->first[j->depth] = 1;
}

void ward_json_close(struct ward_json *j, char kind) {
	put(j, &kind, 1);
	if (j->depth > 0) j->depth--;
}

const char *ward_json_end(struct ward_json *j, size_t *n) {
	put(j, "}\n", 2);
	if (j->oom) return NULL;
	*n = j->len;
	return j->buf;
}

void ward_json_free(struct ward_json *j) {
	free(j->buf);
	j->buf = NULL;
	j->len = j->cap = 0;
}
