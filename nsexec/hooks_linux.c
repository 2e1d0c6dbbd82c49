// The OCI hooks that run in the container's namespaces (hooks_linux.h).
//
// runtime-spec's createContainer hooks run in the container's namespaces,
// "after the runtime environment has been created but before pivot_root":
// the init runs them once the root is built, before it detaches the host's
// root (ward's equivalent of runc's pivot_root), each chrooted into the
// host's root (their path resolves on the host, as the spec says) with the
// container's root as their working directory (runc's hooks run in the
// rootfs too). startContainer hooks run in the container's process once
// start opened the exec fifo, before the program's exec (spawn_linux.c's
// wait-start), with the process's credentials, as runc's do.
//
// Each hook gets the state JSON (made by ward-oci) on stdin, through a
// memfd: it is read at the hook's pace and never blocks the runner. Its
// stdout and stderr go to a pipe; the first WARD_HOOK_OUTPUT_MAX bytes are
// kept for the error. It is forked with a raw clone, as the init forks
// everything, and killed after its timeout; a hook that leaves a process
// behind holding the pipe does not hold the runner: the runner stops
// reading once the hook itself has exited (a pidfd says when).

#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "hooks_linux.h"

#ifndef SYS_pidfd_open
#define SYS_pidfd_open 434
#endif

static const char *const kind_names[WARD_HOOK_KINDS] = {"createContainer", "startContainer"};

// take_uint reads s: 1 to 10 decimal digits, a value at most max.
static int take_uint(const char *s, uint32_t max, uint32_t *v) {
	uint64_t x = 0;
	size_t i = 0;
	for (; s[i]; i++) {
		if (s[i] < '0' || s[i] > '9' || i >= 10) return -1;
		x = x * 10 + (uint64_t)(s[i] - '0');
	}
	if (i == 0 || x > max) return -1;
	*v = (uint32_t)x;
	return 0;
}

int ward_hooks_parse(char *p, size_t len, uint32_t count, struct ward_hooks *hs) {
	memset(hs, 0, sizeof(*hs));
	if (count == 0) return len == 0 ? 0 : -EBADMSG;
	if (count > len) return -EBADMSG; // each string takes at least its NUL
	// The strings (each hook takes at least 6 of them, the state 1), and
	// each hook's argv and envp, NULL after each (fewer than its strings).
	hs->strs = calloc((size_t)count + 1, sizeof(char *));
	hs->vec = calloc((size_t)count + 1, sizeof(char *));
	hs->all = calloc((size_t)count / 6 + 1, sizeof(struct ward_hook));
	if (!hs->strs || !hs->vec || !hs->all) {
		ward_hooks_free(hs);
		return -ENOMEM;
	}
	char **s = hs->strs, *end = p + len;
	for (uint32_t i = 0; i < count; i++) {
		char *nul = p < end ? memchr(p, 0, (size_t)(end - p)) : NULL;
		if (!nul) goto bad;
		s[i] = p;
		p = nul + 1;
	}
	if (p != end) goto bad;
	hs->state = s[0];
	hs->state_len = strlen(s[0]);
	uint32_t i = 1, nv = 0, nh = 0;
	int last = 0;
	while (i < count) {
		int kind = -1;
		uint32_t timeout, argc, envc;
		if (count - i < 6) goto bad;
		for (int k = 0; k < WARD_HOOK_KINDS; k++)
			if (strcmp(s[i], kind_names[k]) == 0) kind = k;
		// A kind's hooks together, createContainer's first.
		if (kind < last || take_uint(s[i + 1], WARD_HOOK_MAX_TIMEOUT, &timeout) || take_uint(s[i + 2], count, &argc) ||
		    take_uint(s[i + 3], count, &envc))
			goto bad;
		struct ward_hook *h = &hs->all[nh++];
		h->path = s[i + 4];
		h->timeout_s = timeout;
		i += 5;
		if (h->path[0] != '/' || argc == 0 || argc > count - i || envc > count - i - argc) goto bad;
		h->argv = &hs->vec[nv];
		for (uint32_t a = 0; a < argc; a++) hs->vec[nv++] = s[i++];
		hs->vec[nv++] = NULL;
		h->envp = &hs->vec[nv];
		for (uint32_t e = 0; e < envc; e++) {
			if (!strchr(s[i], '=')) goto bad;
			hs->vec[nv++] = s[i++];
		}
		hs->vec[nv++] = NULL;
		if (hs->n[kind]++ == 0) hs->h[kind] = h;
		last = kind;
	}
	return 0;
bad:
	ward_hooks_free(hs);
	return -EBADMSG;
}

void ward_hooks_free(struct ward_hooks *hs) {
	free(hs->strs);
	free(hs->vec);
	free(hs->all);
	memset(hs, 0, sizeof(*hs));
}

static int64_t mono_ms(void) {
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

// hook_child becomes hook h: default signals, nothing blocked (the
// caller's mask and handlers would survive exec), the state on stdin, the
// pipe as stdout and stderr, chrooted into root if given, then exec.
// Every other fd of the caller's closes on exec.
static void __attribute__((noreturn)) hook_child(const struct ward_hook *h, int in, int out, const char *root) {
	struct sigaction dfl = {.sa_handler = SIG_DFL};
	for (int s = 1; s < 65; s++)
		if (s != SIGKILL && s != SIGSTOP) sigaction(s, &dfl, NULL); // glibc's own (32, 33) refused: harmless
	sigset_t none;
	sigemptyset(&none);
	sigprocmask(SIG_SETMASK, &none, NULL);
	const char *what = "dup2";
	if (dup2(in, 0) >= 0 && dup2(out, 1) >= 0 && dup2(out, 2) >= 0) {
		what = "chroot";
		if (!root || chroot(root) == 0) {
			what = "exec";
			execve(h->path, h->argv, h->envp);
		}
	}
	// Its output is the error's: say what failed.
	dprintf(2, "%s %s: %s\n", what, what[0] == 'c' ? root : h->path, strerror(errno));
	_exit(127);
}

// state_fd is a memfd holding the state, at offset 0: -1 on failure.
static int state_fd(const struct ward_hooks *hs) {
	int fd = (int)syscall(SYS_memfd_create, "ward-hook-state", MFD_CLOEXEC);
	if (fd < 0) return -1;
	size_t done = 0;
	while (done < hs->state_len) {
		ssize_t w = write(fd, hs->state + done, hs->state_len - done);
		if (w < 0 && errno == EINTR) continue;
		if (w <= 0) {
			close(fd);
			return -1;
		}
		done += (size_t)w;
	}
	if (lseek(fd, 0, SEEK_SET) != 0) {
		close(fd);
		return -1;
	}
	return fd;
}

// collect reads the hook's output into out (*n bytes kept, of size) until
// the hook (pid, pidfd; -1: only the pipe's end tells) exits or its
// deadline (ms on the monotonic clock; 0: none) passes: 1 when it was
// killed for its timeout.
static int collect(int pid, int pidfd, int rd, int64_t deadline, char *out, size_t size, size_t *n) {
	int open = 1, timed_out = 0;
	for (;;) {
		struct pollfd p[2] = {{.fd = open ? rd : -1, .events = POLLIN}, {.fd = pidfd, .events = POLLIN}};
		int wait = -1;
		if (deadline) {
			int64_t left = deadline - mono_ms();
			wait = left > 0 ? (int)(left < 1000000 ? left : 1000000) : 0;
		}
		if (!open && pidfd < 0) return timed_out; // the caller's waitpid waits
		int r = poll(p, 2, wait);
		if (r < 0 && errno == EINTR) continue;
		if (r < 0) {
			kill(pid, SIGKILL); // nothing left to wait with: it ends
			return 0;
		}
		if (r == 0 && deadline && mono_ms() >= deadline) {
			kill(pid, SIGKILL);
			return 1;
		}
		if (open && p[0].revents) {
			char buf[512];
			ssize_t k = read(rd, buf, sizeof(buf));
			if (k < 0 && errno == EINTR) continue;
			if (k <= 0) open = 0;
			for (ssize_t j = 0; j < k && *n < size; j++) out[(*n)++] = buf[j];
		}
		if (pidfd >= 0 && p[1].revents) {
			// It exited: what it wrote is in the pipe already; whatever
			// it left behind may keep the pipe open, unread.
			int fl = fcntl(rd, F_GETFL);
			if (open && fl >= 0 && fcntl(rd, F_SETFL, fl | O_NONBLOCK) == 0) {
				char buf[512];
				ssize_t k;
				while ((k = read(rd, buf, sizeof(buf))) > 0)
					for (ssize_t j = 0; j < k && *n < size; j++) out[(*n)++] = buf[j];
			}
			return timed_out;
		}
	}
}

// run_one runs hook h: 0, or -1 with why (size bytes) saying how it
// failed and out (*n bytes) what it wrote.
static int run_one(const struct ward_hooks *hs, const struct ward_hook *h, const char *root, char *why, size_t size, char *out,
		   size_t *n) {
	int in = state_fd(hs), pp[2] = {-1, -1};
	if (in < 0 || pipe2(pp, O_CLOEXEC) < 0) {
		snprintf(why, size, "%s: %s", in < 0 ? "the state's memfd" : "pipe", strerror(errno));
		if (in >= 0) close(in);
		return -1;
	}
	int64_t deadline = h->timeout_s ? mono_ms() + (int64_t)h->timeout_s * 1000 : 0;
	long pid = syscall(SYS_clone, SIGCHLD, 0, 0, 0, 0);
	if (pid == 0) hook_child(h, in, pp[1], root);
	int e = errno;
	close(in);
	close(pp[1]);
	if (pid < 0) {
		close(pp[0]);
		snprintf(why, size, "fork: %s", strerror(e));
		return -1;
	}
	int pidfd = (int)syscall(SYS_pidfd_open, pid, 0);
	int timed_out = collect((int)pid, pidfd, pp[0], deadline, out, WARD_HOOK_OUTPUT_MAX, n);
	close(pp[0]);
	if (pidfd >= 0) close(pidfd);
	int st = 0;
	while (waitpid((int)pid, &st, 0) < 0 && errno == EINTR) {
	}
	if (timed_out) snprintf(why, size, "killed after its timeout of %u s", h->timeout_s);
	else if (WIFSIGNALED(st)) snprintf(why, size, "signal: %s", strsignal(WTERMSIG(st)));
	else if (WEXITSTATUS(st)) snprintf(why, size, "exit status %d", WEXITSTATUS(st));
	else return 0;
	return -1;
}

int ward_hooks_run(const struct ward_hooks *hs, int kind, const char *root, char *msg, size_t size) {
	if (kind < 0 || kind >= WARD_HOOK_KINDS) return 0;
	for (uint32_t i = 0; i < hs->n[kind]; i++) {
		const struct ward_hook *h = &hs->h[kind][i];
		char why[128], out[WARD_HOOK_OUTPUT_MAX + 1];
		size_t n = 0;
		if (run_one(hs, h, root, why, sizeof(why), out, &n) == 0) continue;
		// The output as Go's runner gives it: trimmed, on one line of the
		// message (newlines stay; the JSON line escapes them).
		while (n > 0 && (out[n - 1] == '\n' || out[n - 1] == ' ' || out[n - 1] == '\r' || out[n - 1] == '\t')) n--;
		size_t start = 0;
		while (start < n && (out[start] == '\n' || out[start] == ' ' || out[start] == '\t')) start++;
		for (size_t j = start; j < n; j++)
			if (out[j] == 0) out[j] = ' ';
		out[n] = 0;
		int k = snprintf(msg, size, "%s hook #%u (%s): %s", kind_names[kind], i, h->path, why);
		if (n > start && k >= 0 && (size_t)k < size) snprintf(msg + k, size - (size_t)k, ": output: %s", out + start);
		return -1;
	}
	return 0;
}
