// mask-denied: every visible path a deny pattern matches is hidden, with
// Go's path/filepath semantics that the user was promised (docs): Glob
// (Match's syntax, matches in lexical order per directory, all found before
// any is masked), EvalSymlinks and Clean, ported as they are. No malloc:
// the lists of names live in mmap'd memory (struct ward_strs).

#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "root_impl_linux.h"

// grow makes room for n more bytes in l.
static int grow(struct ward_strs *l, size_t n) {
	if (l->len + n <= l->cap) return 0;
	size_t cap = l->cap ? l->cap : 1 << 16;
	while (cap < l->len + n) cap *= 2;
	void *p = l->p ? mremap(l->p, l->cap, cap, MREMAP_MAYMOVE) : mmap(NULL, cap, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (p == MAP_FAILED) return -ENOMEM;
	l->p = p;
	l->cap = cap;
	return 0;
}

int ward_strs_add(struct ward_strs *l, const char *s, size_t n) {
	if (grow(l, n + 1)) return -ENOMEM;
	memcpy(l->p + l->len, s, n);
	l->p[l->len + n] = 0;
	l->len += n + 1;
	l->n++;
	return 0;
}

// add_offset appends at to idx, an array of offsets (not strings): mmap'd
// memory is page-aligned, so each is aligned.
static int add_offset(struct ward_strs *idx, size_t at) {
	if (grow(idx, sizeof(at))) return -ENOMEM;
	memcpy(idx->p + idx->len, &at, sizeof(at));
	idx->len += sizeof(at);
	idx->n++;
	return 0;
}

void ward_strs_free(struct ward_strs *l) {
	if (l->p) munmap(l->p, l->cap);
	memset(l, 0, sizeof(*l));
}

const char *ward_strs_next(const struct ward_strs *l, const char *prev) {
	const char *p = prev ? prev + strlen(prev) + 1 : l->p;
	return p && p < l->p + l->len ? p : NULL;
}

// ward_clean is Go's filepath.Clean of in[:n] into out (n+2 bytes).
size_t ward_clean(const char *in, size_t n, char *out) {
	size_t w = 0, r = 0, dotdot = 0;
	int rooted = n > 0 && in[0] == '/';
	if (n == 0) {
		memcpy(out, ".", 2);
		return 1;
	}
	if (rooted) out[w++] = '/', r = dotdot = 1;
	while (r < n) {
		if (in[r] == '/') r++;
		else if (in[r] == '.' && (r + 1 == n || in[r + 1] == '/')) r++;
		else if (in[r] == '.' && in[r + 1] == '.' && (r + 2 == n || in[r + 2] == '/')) {
			r += 2;
			if (w > dotdot) {
				w--;
				while (w > dotdot && out[w] != '/') w--;
			} else if (!rooted) {
				if (w > 0) out[w++] = '/';
				out[w++] = '.';
				out[w++] = '.';
				dotdot = w;
			}
		} else {
			if ((rooted && w != 1) || (!rooted && w != 0)) out[w++] = '/';
			for (; r < n && in[r] != '/'; r++) out[w++] = in[r];
		}
	}
	if (w == 0) out[w++] = '.';
	out[w] = 0;
	return w;
}

// rune is Go's utf8.DecodeRuneInString of s[:n]: the code point and its
// width; 0xFFFD and 1 for an invalid byte, 0xFFFD and 0 for nothing.
static int32_t rune(const unsigned char *s, size_t n, size_t *w) {
	*w = n ? 1 : 0;
	if (!n) return 0xFFFD;
	unsigned c = s[0];
	if (c < 0x80) return (int32_t)c;
	size_t need;
	unsigned lo = 0x80, hi = 0xBF;
	int32_t r;
	if (c >= 0xC2 && c <= 0xDF) need = 2, r = c & 0x1F;
	else if (c >= 0xE0 && c <= 0xEF) need = 3, r = c & 0x0F, lo = c == 0xE0 ? 0xA0 : 0x80, hi = c == 0xED ? 0x9F : 0xBF;
	else if (c >= 0xF0 && c <= 0xF4) need = 4, r = c & 0x07, lo = c == 0xF0 ? 0x90 : 0x80, hi = c == 0xF4 ? 0x8F : 0xBF;
	else return 0xFFFD;
	if (n < need || s[1] < lo || s[1] > hi) return 0xFFFD;
	for (size_t i = 1; i < need; i++) {
		if (i > 1 && (s[i] < 0x80 || s[i] > 0xBF)) return 0xFFFD;
		r = (r << 6) | (s[i] & 0x3F);
	}
	*w = need;
	return r;
}

// A string as Go slices it.
struct str {
	const char *p;
	size_t n;
};

static struct str skip(struct str s, size_t k) {
	return (struct str){s.p + k, s.n - k};
}

// get_esc is Go's getEsc: a possibly escaped character of a class.
static int get_esc(struct str *chunk, int32_t *r) {
	int bad = 0;
	if (chunk->n == 0 || chunk->p[0] == '-' || chunk->p[0] == ']') return -EINVAL;
	if (chunk->p[0] == '\\') {
		*chunk = skip(*chunk, 1);
		if (chunk->n == 0) return -EINVAL;
	}
	size_t w;
	*r = rune((const unsigned char *)chunk->p, chunk->n, &w);
	if (*r == 0xFFFD && w == 1) bad = 1;
	*chunk = skip(*chunk, w);
	return bad || chunk->n == 0 ? -EINVAL : 0;
}

// match_chunk is Go's matchChunk: whether chunk (no star) matches the
// start of s, and what is left of s. After a mismatch it goes on checking
// that the chunk is well formed, no longer reading s. 1, 0 or -EINVAL.
static int match_chunk(struct str chunk, struct str s, struct str *rest) {
	int failed = 0;
	while (chunk.n > 0) {
		failed = failed || s.n == 0;
		char c = chunk.p[0];
		if (c == '[') {
			int32_t r = 0, lo, hi;
			if (!failed) {
				size_t w;
				r = rune((const unsigned char *)s.p, s.n, &w);
				s = skip(s, w);
			}
			chunk = skip(chunk, 1);
			int negated = chunk.n > 0 && chunk.p[0] == '^', match = 0, nrange = 0;
			if (negated) chunk = skip(chunk, 1);
			for (;;) {
				if (chunk.n > 0 && chunk.p[0] == ']' && nrange > 0) {
					chunk = skip(chunk, 1);
					break;
				}
				if (get_esc(&chunk, &lo)) return -EINVAL;
				hi = lo;
				if (chunk.p[0] == '-') {
					chunk = skip(chunk, 1);
					if (get_esc(&chunk, &hi)) return -EINVAL;
				}
				match = match || (lo <= r && r <= hi);
				nrange++;
			}
			failed = failed || match == negated;
			continue;
		}
		if (c == '?') {
			if (!failed) {
				size_t w;
				failed = s.p[0] == '/';
				rune((const unsigned char *)s.p, s.n, &w);
				s = skip(s, w);
			}
			chunk = skip(chunk, 1);
			continue;
		}
		if (c == '\\') {
			chunk = skip(chunk, 1);
			if (chunk.n == 0) return -EINVAL;
		}
		if (!failed) {
			failed = chunk.p[0] != s.p[0];
			s = skip(s, 1);
		}
		chunk = skip(chunk, 1);
	}
	if (failed) return 0;
	*rest = s;
	return 1;
}

// scan_chunk is Go's scanChunk: the next run of non-star pattern, and
// whether stars came before it.
static int scan_chunk(struct str *pattern, struct str *chunk) {
	int star = 0, inrange = 0;
	while (pattern->n > 0 && pattern->p[0] == '*') *pattern = skip(*pattern, 1), star = 1;
	size_t i;
	for (i = 0; i < pattern->n; i++) {
		char c = pattern->p[i];
		if (c == '\\' && i + 1 < pattern->n) i++;
		else if (c == '[') inrange = 1;
		else if (c == ']') inrange = 0;
		else if (c == '*' && !inrange) break;
	}
	*chunk = (struct str){pattern->p, i};
	*pattern = skip(*pattern, i);
	return star;
}

// match is Go's filepath.Match: 1, 0 or -EINVAL (a malformed pattern).
static int match(struct str pattern, struct str name) {
	while (pattern.n > 0) {
		struct str chunk, t;
		int star = scan_chunk(&pattern, &chunk);
		if (star && chunk.n == 0) return memchr(name.p, '/', name.n) == NULL; // a trailing * matches the rest but a /
		int ok = match_chunk(chunk, name, &t);
		// The last chunk must use up the name, else a star may still match.
		if (ok == 1 && (t.n == 0 || pattern.n > 0)) {
			name = t;
			continue;
		}
		if (ok < 0) return ok;
		int found = 0;
		for (size_t i = 0; star && !found && i < name.n && name.p[i] != '/'; i++) {
			ok = match_chunk(chunk, skip(name, i + 1), &t);
			if (ok == 1) {
				if (pattern.n == 0 && t.n > 0) continue;
				name = t;
				found = 1;
			} else if (ok < 0) return ok;
		}
		if (!found) return 0;
	}
	return name.n == 0;
}

int ward_glob_match(const char *pattern, const char *name) {
	return match((struct str){pattern, strlen(pattern)}, (struct str){name, strlen(name)});
}

static int has_meta(const char *s, size_t n) {
	for (size_t i = 0; i < n; i++)
		if (strchr("*?[\\", s[i]) && s[i]) return 1;
	return 0;
}

#ifdef WARD_CTEST
size_t ward_sort_compares; // ctest: the comparisons ward_sort_names made
#define COUNT_COMPARE() (ward_sort_compares++)
#else
#define COUNT_COMPARE() ((void)0)
#endif

static int name_less(const size_t *idx, size_t a, size_t b, const char *base) {
	COUNT_COMPARE();
	return strcmp(base + idx[a], base + idx[b]) < 0;
}

// sift_down restores the max-heap below root in idx[0:n).
static void sift_down(size_t *idx, size_t root, size_t n, const char *base) {
	for (size_t child; (child = 2 * root + 1) < n; root = child) {
		if (child + 1 < n && name_less(idx, child, child + 1, base)) child++;
		if (!name_less(idx, root, child, base)) return;
		size_t x = idx[root];
		idx[root] = idx[child];
		idx[child] = x;
	}
}

// ward_sort_names sorts the n strings at idx (offsets into base)
// bytewise, as Go sorts strings. A heapsort: O(n log n) however the
// sandbox named a directory's entries (a shell sort's worst case is
// quadratic), with no malloc and no recursion.
void ward_sort_names(size_t *idx, size_t n, const char *base) {
	for (size_t i = n / 2; i > 0; i--) sift_down(idx, i - 1, n, base);
	for (size_t end = n; end > 1; end--) {
		size_t x = idx[0];
		idx[0] = idx[end - 1];
		idx[end - 1] = x;
		sift_down(idx, 0, end - 1, base);
	}
}

// read_names lists the directory fd's entries but . and .., and an index
// of them (offsets, in idx's own memory), sorted.
static int read_names(int fd, struct ward_strs *names, struct ward_strs *idx) {
	char buf[4096];
	for (;;) {
		long n = syscall(SYS_getdents64, fd, buf, sizeof(buf));
		if (n < 0 && errno == EINTR) continue;
		if (n <= 0) break; // the end, or an unreadable directory: nothing more of it
		for (long off = 0; off < n;) {
			unsigned short reclen;
			memcpy(&reclen, buf + off + 16, 2);
			const char *name = buf + off + 19;
			off += reclen;
			if (!strcmp(name, ".") || !strcmp(name, "..")) continue;
			size_t at = names->len;
			if (ward_strs_add(names, name, strlen(name)) || add_offset(idx, at)) return -ENOMEM;
		}
	}
	if (idx->n) ward_sort_names((size_t *)(void *)idx->p, idx->n, names->p);
	return 0;
}

// glob_dir is Go's glob: the names in dir that pat matches, joined to dir
// and cleaned, appended to out in lexical order. A dir that is not one, or
// cannot be read, adds nothing.
static int glob_dir(const char *dir, struct str pat, struct ward_strs *out) {
	struct stat st;
	if (stat(dir, &st) < 0 || !S_ISDIR(st.st_mode)) return 0;
	int fd = open(dir, O_RDONLY | O_CLOEXEC);
	if (fd < 0) return 0;
	struct ward_strs names = {0}, idx = {0};
	int e = read_names(fd, &names, &idx);
	close(fd);
	for (size_t i = 0; !e && i < names.n; i++) {
		const char *name = names.p + ((size_t *)(void *)idx.p)[i];
		int m = match(pat, (struct str){name, strlen(name)});
		if (m < 0) e = m;
		if (m != 1) continue;
		char joined[2 * WARD_ROOT_MAX_PATH + 2], clean[sizeof(joined) + 2];
		size_t dn = strlen(dir), nn = strlen(name);
		if (dn + nn + 2 > sizeof(joined)) continue; // longer than any path the kernel takes
		memcpy(joined, dir, dn);
		joined[dn] = '/';
		memcpy(joined + dn + 1, name, nn + 1);
		size_t cn = ward_clean(joined, dn + nn + 1, clean);
		e = ward_strs_add(out, clean, cn);
	}
	ward_strs_free(&names);
	ward_strs_free(&idx);
	return e;
}

// split_dir is Go's Split then cleanGlobPath: the directory part of
// p[:n] ("." for none, "/" kept, else without its trailing slash) into dir,
// and where the file part starts.
static size_t split_dir(const char *p, size_t n, char *dir) {
	size_t i = n;
	while (i > 0 && p[i - 1] != '/') i--;
	if (i == 0) memcpy(dir, ".", 2);
	else if (i == 1 && p[0] == '/') memcpy(dir, "/", 2);
	else memcpy(dir, p, i - 1), dir[i - 1] = 0;
	return i;
}

int ward_glob(const char *pattern, struct ward_strs *out) {
	size_t n = strlen(pattern);
	uint16_t ends[WARD_ROOT_MAX_PATH]; // per level: where its file part starts and ends
	char dir[WARD_ROOT_MAX_PATH];
	struct str whole = {pattern, n};
	if (n >= WARD_ROOT_MAX_PATH) return -EINVAL;
	if (match(whole, (struct str){"", 0}) < 0) return -EINVAL;
	if (!has_meta(pattern, n)) {
		struct stat st;
		return lstat(pattern, &st) == 0 ? ward_strs_add(out, pattern, n) : 0;
	}
	// Go recurses on the directory part while it has meta characters,
	// checking each such part as a pattern of its own; the file parts are
	// then matched from the outermost directory in.
	size_t levels = 0, cur = n;
	for (;;) {
		size_t file = split_dir(pattern, cur, dir);
		// Two entries a level, and a level per slash: "/*" and thousands of
		// slashes would write past ends. No path the kernel takes needs
		// that many levels; Go's side refuses such patterns first.
		if (levels + 2 > sizeof(ends) / sizeof(ends[0])) return -EINVAL;
		ends[levels++] = (uint16_t)file; // this level's file part is pattern[file:cur]
		ends[levels++] = (uint16_t)cur;
		if (!has_meta(dir, strlen(dir))) break;
		cur = strlen(dir); // dir is pattern[:cur]
		if (match((struct str){pattern, cur}, (struct str){"", 0}) < 0) return -EINVAL;
	}
	// dir is the outermost directory, without meta characters.
	struct ward_strs list = {0};
	int e = ward_strs_add(&list, dir, strlen(dir));
	for (size_t l = levels; !e && l > 0; l -= 2) {
		struct str pat = {pattern + ends[l - 2], ends[l - 1] - ends[l - 2]};
		struct ward_strs next = {0};
		for (const char *d = ward_strs_next(&list, NULL); !e && d; d = ward_strs_next(&list, d)) e = glob_dir(d, pat, &next);
		ward_strs_free(&list);
		list = next;
	}
	if (e) {
		ward_strs_free(&list);
		return e;
	}
	for (const char *m = ward_strs_next(&list, NULL); !e && m; m = ward_strs_next(&list, m)) e = ward_strs_add(out, m, strlen(m));
	ward_strs_free(&list);
	return e;
}

// ward_eval_symlinks is Go's filepath.EvalSymlinks of an absolute path:
// each component looked up (lstat) in turn, a symlink's target spliced in
// (at most 255 of them), ".." taken lexically on what is resolved so far.
int ward_eval_symlinks(const char *path, char *out, size_t size) {
	char buf[2][WARD_ROOT_MAX_PATH], dest[WARD_ROOT_MAX_PATH], link[WARD_ROOT_MAX_PATH];
	int cur = 0, links = 0;
	size_t n = strlen(path), d = 0, vol = 1;
	if (n >= sizeof(buf[0]) || path[0] != '/') return EINVAL;
	memcpy(buf[cur], path, n + 1);
	dest[d++] = '/';
	for (size_t start = 1, end = 1; start < n; start = end) {
		const char *p = buf[cur];
		while (start < n && p[start] == '/') start++;
		for (end = start; end < n && p[end] != '/';) end++;
		size_t cn = end - start;
		if (cn == 0) break;
		if (cn == 1 && p[start] == '.') continue;
		if (cn == 2 && p[start] == '.' && p[start + 1] == '.') {
			size_t r = d;
			while (r > vol && dest[r - 1] != '/') r--;
			// Rooted: dest never holds a ".." to keep; back up to the last slash.
			d = r > vol ? r - 1 : vol;
			continue;
		}
		if (d + 1 + cn >= sizeof(dest)) return ENAMETOOLONG;
		if (d > vol && dest[d - 1] != '/') dest[d++] = '/';
		memcpy(dest + d, p + start, cn);
		d += cn;
		dest[d] = 0;
		struct stat st;
		if (lstat(dest, &st) < 0) return errno;
		if (!S_ISLNK(st.st_mode)) {
			if (!S_ISDIR(st.st_mode) && end < n) return ENOTDIR;
			continue;
		}
		if (++links > 255) return ELOOP;
		ssize_t ln = readlink(dest, link, sizeof(link));
		if (ln < 0) return errno;
		if ((size_t)ln + (n - end) >= sizeof(buf[0])) return ENAMETOOLONG;
		// path = link + path[end:]
		memcpy(buf[!cur], link, (size_t)ln);
		memcpy(buf[!cur] + ln, p + end, n - end + 1);
		cur = !cur;
		n = (size_t)ln + (n - end);
		if (ln > 0 && link[0] == '/') {
			d = 1; // a link to an absolute path: start again from /
			end = 1;
		} else {
			// A relative link: replace the last component of dest.
			size_t r = d;
			while (r > vol && dest[r - 1] != '/') r--;
			d = r > vol ? r - 1 : vol;
			end = 0;
		}
	}
	if (d + 2 > size) return ENAMETOOLONG;
	ward_clean(dest, d, out);
	return 0;
}

// keep reports whether path is one a program needs to start (fs.MustKeep,
// in the plan), kept even when a deny pattern matches it.
static int keep(const struct ward_root *r, const char *path) {
	struct ward_root_cursor c = ward_root_list(r, r->keep);
	const char *k;
	for (uint32_t i = 0; i < r->nkeep; i++)
		if (ward_root_next_str(&c, &k) == 0 && !strcmp(k, path)) return 1;
	return 0;
}

// mask_matches masks what pattern matches: for a symlink what it points
// to (inside: the root is the sandbox's own by now). Names stay listed,
// contents go. What is dangling, needed, or the sandbox's own /proc and
// /dev is left.
static int mask_matches(const struct ward_root *r, const char *pattern, struct ward_root_out *out) {
	struct ward_strs matches = {0};
	int e = ward_glob(pattern, &matches);
	if (e) {
		ward_strs_free(&matches);
		return ward_root_fail(out, "deny pattern", pattern, -e);
	}
	for (const char *m = ward_strs_next(&matches, NULL); !e && m; m = ward_strs_next(&matches, m)) {
		char target[WARD_ROOT_MAX_PATH];
		if (keep(r, m) || ward_eval_symlinks(m, target, sizeof(target)) || keep(r, target) || !strncmp(target, "/proc/", 6) ||
		    !strncmp(target, "/dev/", 5))
			continue;
		e = ward_root_mask(target, out);
	}
	ward_strs_free(&matches);
	return e;
}

// ward_root_mask_denied (mask-denied) hides every visible path a deny
// pattern matches; it runs after every mount.
int ward_root_mask_denied(const struct ward_root *r, struct ward_root_out *out) {
	struct ward_root_cursor c = ward_root_list(r, r->deny);
	for (uint32_t i = 0; i < r->ndeny; i++) {
		const char *pattern;
		if (ward_root_next_str(&c, &pattern)) return ward_root_fail(out, "plan", "", EINVAL);
		int e = mask_matches(r, pattern, out);
		if (e) return e;
	}
	return 0;
}
