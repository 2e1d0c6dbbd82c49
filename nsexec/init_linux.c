// The sandbox init: PID 1 of the sandbox, in C, from its exec to its exit.
//
// ward (the parent) clones its own binary into new namespaces as
// "ward init [N]"; the constructor in spawn_linux.c sees that argv and
// calls ward_init_main, which never returns: the Go runtime never starts
// in the sandbox. The init
//
//   - reads its config on fd 3 (init_linux.h: the init's own part, the
//     root plan, the program's gate), checked by initwire_linux.c;
//   - runs its steps, in order, from one table: become-root,
//     close-inherited-fds, the root builder's (root_linux.c), set-hostname,
//     loopback-up, proxy-relay, non-dumpable; each is timed, and a failure
//     is reported ("error": the step, the operation, the path, the errno)
//     before the init exits 71;
//   - reports "ready" (the timings, the Landlock ABI; the overlay's upper
//     layers' fd for --overlay-keep goes along, SCM_RIGHTS);
//   - releases the program's process (the early child, or one it forks:
//     spawn_linux.c), relays its reports ("listener" passes the seccomp
//     listener up, SCM_RIGHTS; "gate_error", "exec_error", "started");
//   - supervises: it reaps every process (it is PID 1), relays the
//     forwarded signals, ends the sandbox at the time limit (a timerfd
//     from the program's exec), and reports the program's end ("exit"),
//     or exits when the parent closes fd 3;
//   - or, for an OCI container (ward-oci create), becomes the program
//     itself: the same steps, waiting on the exec fifo before exec;
//   - or, in a long-lived sandbox, runs the commands that come over the
//     exec socket, each from a gate the parent packed, and reports each
//     one's start and end by ID.
//
// Its messages are JSON lines (wire.go's Msg), written whole with one
// sendmsg each. It is single-threaded; it forks with raw clone.
//
// What needs Go stays out of it: the proxy relay and DNS stub run in
// "ward relay", ward's own binary exec'd from an fd the parent passes, only
// for --network=proxy; the seccomp listener and the copy of the overlay's
// changes run in the parent.

#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <linux/filter.h>
#include <linux/seccomp.h>
#include <net/if.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/signalfd.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/timerfd.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "init_linux.h"

#ifndef CLOSE_RANGE_CLOEXEC
#define CLOSE_RANGE_CLOEXEC (1U << 2)
#endif
#ifndef SYS_pidfd_open
#define SYS_pidfd_open 434
#endif
#ifndef SYS_pidfd_getfd
#define SYS_pidfd_getfd 438
#endif

extern char **environ;

// ---- the init's state ----

static struct ward_init_cfg cfg;     // the config, parsed
static struct ward_root_out out;     // what the root steps handed back
static int64_t start_us, config_us;  // the constructor's start; the config read
static int relay_pid = -1;           // ward relay (network=proxy), not a program's process
static int sig_fd = -1;              // SIGCHLD and the forwarded signals

#define MAX_STEPS 64
static struct {
	const char *name;
	int64_t us;
} steps[MAX_STEPS];
static int nsteps;

// An exit's figures, of one process or summed over those reaped.
struct figs {
	int64_t code, signal, user_us, sys_us, maxrss_kb, nvcsw, nivcsw, reaped;
};

// A program's process, from its fork to its end: the one program, or a
// command of a long-lived sandbox (id > 0).
struct cmd {
	int id, pid;
	int report;                // its report socket (-1: it exec'd, or failed)
	int timed;                 // "timings" came: EOF now means exec
	int reaped;                // it ended before its exec was seen (in ex)
	struct ward_report timing; // its steps' times
	struct figs ex;
	char *file; // what it execs, for "exec_error"
};

static int64_t mono_us(void) {
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000000 + ts.tv_nsec / 1000;
}

// ---- messages to the parent ----

// send_up writes one message (n bytes) to the parent, with fd (-1: none)
// as SCM_RIGHTS. A parent that is gone leaves nothing to report to.
static void send_up(const char *s, size_t n, int fd) {
	union ward_cmsg_fd ctl;
	struct iovec iov = {.iov_base = (void *)s, .iov_len = n};
	struct msghdr mh = {.msg_iov = &iov, .msg_iovlen = 1};
	ward_attach_fd(&mh, &ctl, fd);
	while (iov.iov_len > 0) {
		ssize_t w = sendmsg(WARD_PROTO_FD, &mh, MSG_NOSIGNAL);
		if (w < 0 && errno == EINTR) continue;
		if (w <= 0) _exit(137);
		iov.iov_base = (char *)iov.iov_base + w;
		iov.iov_len -= (size_t)w;
		mh.msg_control = NULL; // the fd went with the first bytes
		mh.msg_controllen = 0;
	}
}

// send_json ends j's message, sends it (with fd) and frees it.
static void send_json(struct ward_json *j, int fd) {
	size_t n;
	const char *line = ward_json_end(j, &n);
	if (!line) _exit(137); // out of memory: the parent sees the init die
	send_up(line, n, fd);
	ward_json_free(j);
}

// msg_begin starts a message of type, about command id (0: none).
static void msg_begin(struct ward_json *j, const char *type, int id) {
	ward_json_begin(j);
	ward_json_str(j, "type", type);
	if (id) ward_json_int(j, "id", id);
}

// send_error reports that step (of command id) failed (err a positive
// errno, or 0) doing what on path; the parent words it (Msg.setupError).
static void send_error(int id, const char *step, int err, const char *what, const char *path) {
	struct ward_json j;
	msg_begin(&j, "error", id);
	ward_json_str(&j, "step", step);
	ward_json_str(&j, "what", what);
	if (path && *path) ward_json_str(&j, "path", path);
	if (err) ward_json_int(&j, "errno", err);
	send_json(&j, -1);
}

// fail_step reports a failed step and exits: the parent prints
// "ward: <step>: ..." and exits 71.
static void __attribute__((noreturn)) fail_step(const char *step, int err, const char *what, const char *path) {
	send_error(0, step, err, what, path);
	_exit(WARD_EXIT_SETUP);
}

// steps_json adds the steps array: the init's (side "init"), or with
// rep the program's process's (side "program").
static void steps_json(struct ward_json *j, const struct ward_report *rep) {
	ward_json_open(j, "steps", '[');
	int n = rep ? WARD_STEP_EXEC : nsteps;
	for (int i = 0; i < n; i++) {
		// untimed, or only an OCI container's
		if (rep && (i == WARD_STEP_WAIT_START || i == WARD_STEP_OOM)) continue;
		ward_json_open(j, NULL, '{');
		ward_json_str(j, "step", rep ? ward_step_name(i) : steps[i].name);
		ward_json_int(j, "us", rep ? rep->us[i] : steps[i].us);
		ward_json_str(j, "side", rep ? "program" : "init");
		ward_json_close(j, '}');
	}
	ward_json_close(j, ']');
}

// ---- the config ----

// read_full reads exactly n bytes from fd: 0, or -1 (EOF or an error).
static int read_full(int fd, char *p, size_t n) {
	while (n > 0) {
		ssize_t r = read(fd, p, n);
		if (r < 0 && errno == EINTR) continue;
		if (r <= 0) return -1;
		p += r;
		n -= (size_t)r;
	}
	return 0;
}

// usage is the end of an init started by anything but ward's parent.
static void __attribute__((noreturn)) usage(const char *why, long detail) {
	fprintf(stderr, "ward init: internal command, started by ward run (config on fd %d: %s, detail %ld)\n", WARD_PROTO_FD, why,
		detail);
	_exit(2);
}

// receive_config reads the header, then as many bytes as it announces
// (bounded), and parses the whole (ward_init_parse checks it again).
static void receive_config(void) {
	struct ward_init_hdr h;
	if (read_full(WARD_PROTO_FD, (char *)&h, sizeof(h))) usage("no config", 0);
	if (h.magic != WARD_INIT_MAGIC || h.version != WARD_INIT_VERSION || h.hdr_size != sizeof(h))
		usage("not a config of this version", h.version);
	size_t total = sizeof(h);
	const uint32_t lens[5] = {h.hostname_len, h.relay_len, h.root_len, h.gate_len, h.hooks_len};
	for (int i = 0; i < 5; i++) {
		if (lens[i] > WARD_INIT_MAX || total > WARD_INIT_MAX) usage("too large", lens[i]);
		total += ((size_t)lens[i] + 7) & ~(size_t)7;
	}
	if (total > WARD_INIT_MAX) usage("too large", (long)total);
	char *buf = malloc(total); // freed never: the config lives as long as the init
	if (!buf) usage("out of memory", (long)total);
	memcpy(buf, &h, sizeof(h));
	if (read_full(WARD_PROTO_FD, buf + sizeof(h), total - sizeof(h))) usage("cut short", (long)total);
	long detail;
	int e = ward_init_parse(buf, total, &cfg, &detail);
	if (e) usage(strerror(-e), detail);
}

// ---- signals ----

static void on_signal(int sig) { (void)sig; }

// forwarded are relayed from the parent to the program (wire.go).
static const int forwarded[] = {SIGINT, SIGTERM, SIGHUP, SIGQUIT, SIGUSR1, SIGUSR2};

// signals_setup blocks SIGCHLD and the signals it relays and reads them
// from a signalfd. They get a handler, or PID 1 would never see them (the
// kernel drops a signal with the default action sent to a namespace's
// init). With --tty the program shares the terminal's foreground group
// with ward and the init: ^C and ^\ reach it from the terminal itself
// (ignored here), and the program may not stop the init through the
// terminal. Every child resets all of this before it execs.
static void signals_setup(void) {
	int tty = cfg.h.flags & WARD_INIT_TTY;
	struct sigaction handle = {.sa_handler = on_signal}, ignore = {.sa_handler = SIG_IGN};
	sigset_t set;
	sigemptyset(&set);
	for (size_t i = 0; i < sizeof(forwarded) / sizeof(forwarded[0]); i++) {
		int s = forwarded[i];
		if (tty && (s == SIGINT || s == SIGQUIT)) {
			sigaction(s, &ignore, NULL);
			continue;
		}
		sigaction(s, &handle, NULL);
		sigaddset(&set, s);
	}
	sigaction(SIGCHLD, &handle, NULL);
	sigaddset(&set, SIGCHLD);
	if (tty) {
		sigaction(SIGTTOU, &ignore, NULL);
		sigaction(SIGTTIN, &ignore, NULL);
	}
	sigaction(SIGPIPE, &ignore, NULL);
	sigprocmask(SIG_BLOCK, &set, NULL);
	sig_fd = signalfd(-1, &set, SFD_CLOEXEC | SFD_NONBLOCK);
	if (sig_fd < 0) fail_step("init", errno, "signalfd", "");
}

// ---- the init's own steps (ward_root_step's shape; r is unused) ----

static int when_become_root(const struct ward_root *r) {
	(void)r;
	return cfg.h.flags & WARD_INIT_BECOME_ROOT;
}

// become-root: the init was cloned unmapped (an ordinary user's full
// range, mapped by newuidmap before the config came): root of its user
// namespace, with no supplementary groups.
static int step_become_root(const struct ward_root *r, struct ward_root_out *o) {
	(void)r;
	const char *what = "setgroups";
	if (syscall(SYS_setgroups, 0, NULL) == 0) {
		what = "setresgid 0";
		if (syscall(SYS_setresgid, 0, 0, 0) == 0) {
			what = "setresuid 0";
			if (syscall(SYS_setresuid, 0, 0, 0) == 0) return 0;
		}
	}
	snprintf(o->what, sizeof(o->what), "%s", what);
	return errno;
}

// close-inherited-fds marks every fd above 2 close-on-exec, the protocol
// socket included: whatever the caller of ward left open (without
// O_CLOEXEC) never reaches the program (or the relay).
static int step_close_fds(const struct ward_root *r, struct ward_root_out *o) {
	(void)r;
	if (syscall(SYS_close_range, 3, ~0U, CLOSE_RANGE_CLOEXEC) == 0) return 0;
	snprintf(o->what, sizeof(o->what), "close_range");
	return errno;
}

// set-hostname: always for ward's sandboxes; for an OCI container only
// when config.json gives one (its UTS namespace may be a pod's, joined by
// path, which ward's user namespace may not change).
static int when_hostname(const struct ward_root *r) {
	(void)r;
	return !(cfg.h.flags & WARD_INIT_OCI) || cfg.hostname[0];
}

static int step_hostname(const struct ward_root *r, struct ward_root_out *o) {
	(void)r;
	if (sethostname(cfg.hostname, strlen(cfg.hostname)) == 0) return 0;
	snprintf(o->what, sizeof(o->what), "sethostname");
	return errno;
}

static int when_loopback(const struct ward_root *r) {
	(void)r;
	return cfg.h.flags & WARD_INIT_LOOPBACK;
}

// loopback-up: lo, the only interface of a sandbox's own network
// namespace, up (SIOCSIFFLAGS: the kernel then gives it 127.0.0.1 and ::1).
static int step_loopback(const struct ward_root *r, struct ward_root_out *o) {
	(void)r;
	struct ifreq ifr;
	memset(&ifr, 0, sizeof(ifr));
	strcpy(ifr.ifr_name, "lo");
	int s = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0), e = 0;
	const char *what = "socket";
	if (s >= 0) {
		what = "find lo (SIOCGIFFLAGS)";
		if (ioctl(s, SIOCGIFFLAGS, &ifr) == 0) {
			what = "set lo up (SIOCSIFFLAGS)";
			ifr.ifr_flags |= IFF_UP;
			if (ioctl(s, SIOCSIFFLAGS, &ifr) == 0) what = NULL;
		}
	}
	e = errno;
	if (s >= 0) close(s);
	if (!what) return 0;
	snprintf(o->what, sizeof(o->what), "%s", what);
	return e;
}

static int when_relay(const struct ward_root *r) {
	(void)r;
	return cfg.relay_argv != NULL;
}

// relay_child becomes "ward relay": the init's credentials and
// namespaces, outside the program's cgroup, in a process group of its own
// (^C at a terminal is not for it). It reports on fd 3 (w) and keeps the
// proxy's socket; everything else of the init's closes on exec. Its 0-2
// are the sandbox's /dev/null, not the caller's stdio, which it would
// otherwise hold open for as long as the sandbox lives.
static void __attribute__((noreturn)) relay_child(int w) {
	sigset_t none;
	sigemptyset(&none);
	struct sigaction dfl = {.sa_handler = SIG_DFL};
	const int ignored[] = {SIGINT, SIGQUIT, SIGTTOU, SIGTTIN, SIGPIPE};
	for (size_t i = 0; i < sizeof(ignored) / sizeof(ignored[0]); i++) sigaction(ignored[i], &dfl, NULL);
	sigprocmask(SIG_SETMASK, &none, NULL);
	setpgid(0, 0);
	if (dup2(w, WARD_PROTO_FD) < 0 || fcntl(cfg.h.relay_fd, F_SETFD, 0) < 0) _exit(WARD_EXIT_SETUP);
	int null = open("/dev/null", O_RDWR | O_CLOEXEC);
	for (int fd = 0; fd < 3; fd++)
		if (null < 0 || dup2(null, fd) < 0) _exit(WARD_EXIT_SETUP);
	syscall(SYS_execveat, cfg.h.relay_exe_fd, "", cfg.relay_argv, environ, AT_EMPTY_PATH);
	_exit(127);
}

// proxy-relay (network=proxy): the relay listens on the proxy's inside
// addresses and serves the DNS stub (netns.StartRelay, StartDirect), in
// Go: ward's binary, exec'd from the fd the parent passed. It answers
// "ok\n" once it listens, or the error message (a JSON line, relayed as
// it is) before it exits.
static int step_relay(const struct ward_root *r, struct ward_root_out *o) {
	(void)r;
	int p[2];
	if (pipe2(p, O_CLOEXEC)) {
		snprintf(o->what, sizeof(o->what), "pipe");
		return errno;
	}
	long pid = syscall(SYS_clone, SIGCHLD, 0, 0, 0, 0);
	if (pid == 0) relay_child(p[1]);
	int e = errno;
	close(p[1]);
	if (pid < 0) {
		close(p[0]);
		snprintf(o->what, sizeof(o->what), "clone");
		return e;
	}
	relay_pid = (int)pid;
	char buf[4096];
	size_t got = 0;
	while (got < sizeof(buf) && !(got == 3 && memcmp(buf, "ok\n", 3) == 0)) {
		ssize_t n = read(p[0], buf + got, sizeof(buf) - got);
		if (n < 0 && errno == EINTR) continue;
		if (n <= 0) break;
		got += (size_t)n;
	}
	close(p[0]);
	if (got == 3 && memcmp(buf, "ok\n", 3) == 0) return 0;
	if (got > 1 && buf[0] == '{' && buf[got - 1] == '\n') {
		send_up(buf, got, -1); // the relay's own "error", with its step
		_exit(WARD_EXIT_SETUP);
	}
	int st = 0;
	while (waitpid(relay_pid, &st, 0) < 0 && errno == EINTR) {
	}
	relay_pid = -1;
	snprintf(o->what, sizeof(o->what), "ward relay ended before it was ready (%s %d)", WIFSIGNALED(st) ? "signal" : "exit",
		 WIFSIGNALED(st) ? WTERMSIG(st) : WEXITSTATUS(st));
	return -1;
}

static int when_sysctl(const struct ward_root *r) {
	(void)r;
	return (cfg.h.flags & WARD_INIT_OCI) && cfg.has_gate && cfg.gate.sysctl;
}

// set-sysctl (an OCI container): linux.sysctl, before the root is built
// (ward_write_sysctls says why then).
static int step_sysctl(const struct ward_root *r, struct ward_root_out *o) {
	(void)r;
	int bad = 0;
	long e = ward_write_sysctls(cfg.gate.sysctl, &bad);
	if (e == 0) return 0;
	snprintf(o->what, sizeof(o->what), "sysctl %s", cfg.gate.sysctl[bad]);
	return (int)-e;
}

// non-dumpable: nobody inside may ptrace the init or read its memory
// through /proc.
static int step_nondumpable(const struct ward_root *r, struct ward_root_out *o) {
	(void)r;
	if (prctl(PR_SET_DUMPABLE, 0, 0, 0, 0) == 0) return 0;
	snprintf(o->what, sizeof(o->what), "PR_SET_DUMPABLE");
	return errno;
}

// ---- an OCI container's hooks (before the host's root is detached) ----
//
// runtime-spec runs prestart, createRuntime and createContainer hooks
// "after the runtime environment has been created but before pivot_root".
// ward's equivalent of runc's pivot_root into the rootfs is
// detach-host-root: the init runs these two steps right before it, with
// the container's root built and the host's still at WARD_OLD_ROOT (with
// the rootfs as the root: after leave-rootfs-chroot, before
// pivot-into-rootfs, the rootfs the working directory).
//
//   step                    | init -> ward-oci (fd 3)  | ward-oci -> init (fd 3)
//   runtime-hooks           | {"type":"hooks"}         | one byte 1: go on (prestart and createRuntime ran)
//                           |                          | or nothing: a hook failed, ward-oci kills the init
//   create-container-hooks  | "error" if a hook failed | (nothing)

static int when_runtime_hooks(const struct ward_root *r) {
	(void)r;
	return cfg.h.flags & WARD_INIT_RUNTIME_HOOKS;
}

// runtime-hooks: ward-oci runs the prestart and createRuntime hooks on
// the host while the init waits: the container's namespaces exist, its
// root is built, it is not in its cgroup yet.
static int step_runtime_hooks(const struct ward_root *r, struct ward_root_out *o) {
	(void)r;
	struct ward_json j;
	msg_begin(&j, "hooks", 0);
	send_json(&j, -1);
	char b = 0;
	ssize_t n;
	for (;;) {
		n = read(WARD_PROTO_FD, &b, 1);
		if (n < 0 && errno == EAGAIN) {
			struct pollfd p = {.fd = WARD_PROTO_FD, .events = POLLIN};
			poll(&p, 1, -1);
			continue;
		}
		if (n >= 0 || errno != EINTR) break;
	}
	if (n == 1 && b == 1) return 0;
	if (n == 0) _exit(WARD_EXIT_SETUP); // ward-oci gave up: it says why
	snprintf(o->what, sizeof(o->what), "wait for ward-oci's hooks (read %zd: byte %d)", n, b);
	return n < 0 ? errno : -1;
}

static int when_create_hooks(const struct ward_root *r) {
	(void)r;
	return cfg.hooks.n[WARD_HOOK_CREATE_CONTAINER] > 0;
}

// create-container-hooks: config.json's createContainer hooks, in the
// container's namespaces; each is chrooted into the host's root (its path
// resolves there) and works in the container's root.
static int step_create_hooks(const struct ward_root *r, struct ward_root_out *o) {
	(void)r;
	return ward_hooks_run(&cfg.hooks, WARD_HOOK_CREATE_CONTAINER, WARD_OLD_ROOT, o->what, sizeof(o->what)) ? -1 : 0;
}

static const struct ward_root_step oci_hook_steps[] = {
	{"runtime-hooks", when_runtime_hooks, step_runtime_hooks},
	{"create-container-hooks", when_create_hooks, step_create_hooks},
};

// The init's steps around the root builder's (ward_root_steps), in order.
static const struct ward_root_step steps_before_root[] = {
	{"become-root", when_become_root, step_become_root},
	{"close-inherited-fds", NULL, step_close_fds},
	{"set-sysctl", when_sysctl, step_sysctl},
};
static const struct ward_root_step steps_after_root[] = {
	{"set-hostname", when_hostname, step_hostname},
	{"loopback-up", when_loopback, step_loopback},
	{"proxy-relay", when_relay, step_relay},
	{"non-dumpable", NULL, step_nondumpable},
};

// run_steps runs the steps that apply, timing each; the first that fails
// ends the init (its return: a positive errno, or negative for none).
static void run_steps(const struct ward_root_step *s, int n) {
	for (int i = 0; i < n; i++) {
		if (s[i].when && !s[i].when(&cfg.root)) continue;
		out.what[0] = out.path[0] = 0;
		int64_t t = mono_us();
		int e = s[i].run(&cfg.root, &out);
		if (e) fail_step(s[i].name, e > 0 ? e : 0, out.what, out.path);
		if (nsteps < MAX_STEPS) {
			steps[nsteps].name = s[i].name;
			steps[nsteps++].us = mono_us() - t;
		}
	}
}

// run_root_steps runs the root builder's steps, with the OCI hooks'
// before detach-host-root.
static void run_root_steps(void) {
	int k = 0;
	while (k < ward_root_nsteps && strcmp(ward_root_steps[k].name, "detach-host-root") != 0) k++;
	run_steps(ward_root_steps, k);
	run_steps(oci_hook_steps, sizeof(oci_hook_steps) / sizeof(oci_hook_steps[0]));
	run_steps(ward_root_steps + k, ward_root_nsteps - k);
}

// send_ready reports the steps' times and the Landlock ABI, with the
// upper layers' fd for --overlay-keep (the parent copies them out at the
// end), which the init then no longer needs.
static void send_ready(void) {
	struct ward_json j;
	msg_begin(&j, "ready", 0);
	steps_json(&j, NULL);
	ward_json_int(&j, "start_us", start_us);
	ward_json_int(&j, "config_us", config_us);
	if (out.landlock_abi) ward_json_int(&j, "landlock", out.landlock_abi);
	if (out.landlock_note[0]) ward_json_str(&j, "landlock_note", out.landlock_note);
	if (out.upper_fd >= 0) ward_json_int(&j, "fds", 1);
	send_json(&j, out.upper_fd);
	if (out.upper_fd >= 0) close(out.upper_fd);
	out.upper_fd = -1;
}

// ---- the program's processes ----

// gate_for fills what the gate needs from the init: its report socket,
// the cgroups to enter, the Landlock ruleset.
static void gate_for(struct ward_gate *g, int report_fd) {
	g->report_fd = report_fd;
	g->wait_fd = -1;
	g->start_fd = -1;
	g->ncgroup = cfg.h.ncgroup;
	for (int i = 0; i < cfg.h.ncgroup; i++) g->cgroup_fds[i] = WARD_CGROUP_FD0 + i;
	g->landlock_fd = out.landlock_fd;
}

// spawn forks the program's process for g (spawn_linux.c) into c: 0, or
// a positive errno with *what.
static int spawn(struct ward_gate *g, struct cmd *c, const char **what) {
	int sv[2];
	if (socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, sv)) {
		*what = "socketpair";
		return errno;
	}
	gate_for(g, sv[1]);
	int pid = ward_spawn(g);
	close(sv[1]);
	if (pid < 0) {
		close(sv[0]);
		*what = "clone";
		return -pid;
	}
	c->pid = pid;
	c->report = sv[0];
	return 0;
}

// pass_listener takes the seccomp listener out of c's process (it waits
// for the answer: 1 when the init has it), and sends it up: the parent
// serves it. pidfd_getfd: the init holds CAP_SYS_PTRACE over it.
static void pass_listener(struct cmd *c, int fd) {
	char ok = 0;
	int pidfd = (int)syscall(SYS_pidfd_open, c->pid, 0), l = -1;
	if (pidfd >= 0) {
		l = (int)syscall(SYS_pidfd_getfd, pidfd, fd, 0);
		close(pidfd);
	}
	if (l >= 0) {
		struct ward_json j;
		msg_begin(&j, "listener", c->id);
		ward_json_int(&j, "fds", 1);
		send_json(&j, l);
		close(l);
		ok = 1;
	}
	while (write(c->report, &ok, 1) < 0 && errno == EINTR) {
	}
}

// send_gate_error relays a failed step of c's process (spawn_linux.h's
// step number, errno, detail): the parent words it (gateError).
static void send_gate_error(struct cmd *c, int step, int err, int64_t detail) {
	struct ward_json j;
	msg_begin(&j, "gate_error", c->id);
	ward_json_int(&j, "gate_step", step);
	if (err) ward_json_int(&j, "errno", err);
	ward_json_int(&j, "detail", detail);
	send_json(&j, -1);
}

// gate_report reads one report of c's process: 0 while it goes on, 1 once
// it exec'd, -1 when it failed (reported).
static int gate_report(struct cmd *c) {
	struct ward_report rep;
	ssize_t n;
	do n = read(c->report, &rep, sizeof(rep));
	while (n < 0 && errno == EINTR);
	if (n == 0 && c->timed) return 1; // exec closed the socket
	if (n != (ssize_t)sizeof(rep)) {
		// It died before exec without a word: killed, most likely.
		send_gate_error(c, WARD_STEP_EXEC, n < 0 ? errno : 0, -1);
		return -1;
	}
	switch (rep.kind) {
	case WARD_REPORT_LISTENER:
		pass_listener(c, (int)rep.detail);
		return 0;
	case WARD_REPORT_TIMINGS:
		c->timing = rep;
		c->timed = 1;
		return 0;
	case WARD_REPORT_EXEC_ERROR: {
		struct ward_json j;
		msg_begin(&j, "exec_error", c->id);
		ward_json_str(&j, "path", c->file ? c->file : "");
		ward_json_int(&j, "errno", rep.err);
		send_json(&j, -1);
		return -1;
	}
	case WARD_REPORT_ERROR:
		send_gate_error(c, rep.step, rep.err, rep.detail);
		return -1;
	}
	return 0;
}

// reap_one reaps one ended child without blocking: its pid and figures,
// or 0 when none is left to reap.
static int reap_one(struct figs *f) {
	int st;
	struct rusage ru;
	int r;
	do r = wait4(-1, &st, WNOHANG, &ru);
	while (r < 0 && errno == EINTR);
	if (r <= 0) return 0;
	memset(f, 0, sizeof(*f));
	f->code = WIFEXITED(st) ? WEXITSTATUS(st) : -1;
	f->signal = WIFSIGNALED(st) ? WTERMSIG(st) : 0;
	f->user_us = (int64_t)ru.ru_utime.tv_sec * 1000000 + ru.ru_utime.tv_usec;
	f->sys_us = (int64_t)ru.ru_stime.tv_sec * 1000000 + ru.ru_stime.tv_usec;
	f->maxrss_kb = ru.ru_maxrss;
	f->nvcsw = ru.ru_nvcsw;
	f->nivcsw = ru.ru_nivcsw;
	f->reaped = 1;
	return r;
}

// send_exit reports how command id (0: the program) ended: wire.go's Exit.
static void send_exit(int id, const struct figs *f, int64_t wall_us, int timed_out) {
	struct ward_json j;
	msg_begin(&j, "exit", id);
	ward_json_open(&j, "exit", '{');
	ward_json_int(&j, "code", f->code);
	ward_json_int(&j, "signal", f->signal);
	ward_json_int(&j, "user_us", f->user_us);
	ward_json_int(&j, "sys_us", f->sys_us);
	ward_json_int(&j, "maxrss_kb", f->maxrss_kb);
	ward_json_int(&j, "nvcsw", f->nvcsw);
	ward_json_int(&j, "nivcsw", f->nivcsw);
	ward_json_int(&j, "reaped", f->reaped);
	if (wall_us > 0) ward_json_int(&j, "wall_us", wall_us);
	if (timed_out) ward_json_bool(&j, "timed_out", 1);
	ward_json_close(&j, '}');
	send_json(&j, -1);
}

// parent_gone reads what is readable on fd 3: 1 when the parent closed
// its end (it sends nothing after the config).
static int parent_gone(void) {
	char b[256];
	ssize_t n = read(WARD_PROTO_FD, b, sizeof(b));
	return n == 0 || (n < 0 && errno != EINTR && errno != EAGAIN);
}

// drain_signals reads the pending signals and relays the forwarded ones
// to target (0: none; SIGCHLD is the caller's to act on: it reaps).
static void drain_signals(int target) {
	struct signalfd_siginfo si;
	while (read(sig_fd, &si, sizeof(si)) == (ssize_t)sizeof(si))
		if (si.ssi_signo != SIGCHLD && target) kill(target, (int)si.ssi_signo);
}

// ---- one program ----

// release lets the program's process go on: the early child gets its
// gate (the config the parent packed), or one is forked now.
static void release(struct cmd *c) {
	struct ward_gate *g = &cfg.gate;
	g->setpgid = !(cfg.h.flags & WARD_INIT_TTY);
	c->file = (char *)g->file;
	if (ward_early_pid > 0) {
		gate_for(g, -1);
		int e = ward_send_gate_to(g, ward_early_fd);
		if (e == 0) {
			c->pid = ward_early_pid;
			c->report = ward_early_fd;
			return;
		}
		// It cannot take it (a config larger than the socket's buffer):
		// it ends, and a process forked now takes its place.
		kill(ward_early_pid, SIGKILL);
		close(ward_early_fd);
	}
	const char *what;
	int e = spawn(g, c, &what);
	if (e) fail_step(ward_step_name(WARD_STEP_FORK), e, what, "");
}

// run_program releases the program, reports its start and supervises it:
// it reaps every process, relays the forwarded signals, and ends the
// sandbox at the time limit. It exits when the program ended (reported)
// or the parent is gone.
static void __attribute__((noreturn)) run_program(void) {
	struct cmd c = {.report = -1};
	// The timer is made before the program is let go: its failure is a
	// setup error, not one after "started".
	int tfd = -1;
	if (cfg.h.time_limit_us > 0 && (tfd = timerfd_create(CLOCK_MONOTONIC, TFD_CLOEXEC | TFD_NONBLOCK)) < 0)
		fail_step("time-limit", errno, "timerfd", "");
	release(&c);
	int r;
	while ((r = gate_report(&c)) == 0) {
	}
	if (r < 0) _exit(WARD_EXIT_SETUP);
	close(c.report);
	// From the program's exec (its process's clock, the same
	// CLOCK_MONOTONIC), or from now if that is missing or in the future.
	int64_t started = mono_us();
	if (c.timing.detail > 0 && c.timing.detail < started) started = c.timing.detail;
	struct ward_json j;
	msg_begin(&j, "started", 0);
	ward_json_int(&j, "pid", c.pid);
	ward_json_int(&j, "start_us", started);
	steps_json(&j, &c.timing);
	send_json(&j, -1);

	// The program leads its own process group, but with --tty.
	int target = (cfg.h.flags & WARD_INIT_TTY) ? c.pid : -c.pid;
	if (tfd >= 0) {
		int64_t at = started + cfg.h.time_limit_us; // bounded by the config's parser
		struct itimerspec its = {.it_value = {.tv_sec = at / 1000000, .tv_nsec = (at % 1000000) * 1000}};
		if (timerfd_settime(tfd, TFD_TIMER_ABSTIME, &its, NULL)) fail_step("time-limit", errno, "timerfd_settime", "");
	}
	struct figs sum = {0}, one;
	int timed_out = 0;
	for (;;) {
		struct pollfd p[3] = {{.fd = sig_fd, .events = POLLIN}, {.fd = WARD_PROTO_FD, .events = POLLIN}, {.fd = tfd, .events = POLLIN}};
		if (poll(p, tfd >= 0 ? 3 : 2, -1) < 0) continue;
		if (p[1].revents && parent_gone()) _exit(137);
		drain_signals(target);
		int time_up = 0;
		if (tfd >= 0 && p[2].revents) {
			// Reap first: a program that ended in time is not late
			// because its SIGCHLD had not been read yet.
			close(tfd);
			tfd = -1;
			time_up = 1;
		}
		int pid;
		while ((pid = reap_one(&one)) > 0) {
			if (pid == relay_pid) continue;
			sum.reaped++;
			sum.user_us += one.user_us;
			sum.sys_us += one.sys_us;
			sum.maxrss_kb = one.maxrss_kb > sum.maxrss_kb ? one.maxrss_kb : sum.maxrss_kb;
			sum.nvcsw += one.nvcsw;
			sum.nivcsw += one.nivcsw;
			if (pid == c.pid) {
				sum.code = one.code;
				sum.signal = one.signal;
				send_exit(0, &sum, mono_us() - started, timed_out);
				_exit(0); // the kernel ends whatever is left in the namespace
			}
		}
		if (time_up) {
			// PID 1 kills every other process of its namespace; the
			// program's end comes as a SIGCHLD.
			timed_out = 1;
			kill(-1, SIGKILL);
		}
	}
}

// ---- an OCI container ----

// become_container: the init of an OCI container turns into its program
// (ward-oci create leaves no process of ward's behind: the pid the caller
// holds, and reaps, is the program's). It runs the program's process's
// steps itself (spawn_linux.c, the same ones), reporting on the parent's
// report socket, and waits on the exec fifo before seccomp and exec. It
// already leads its session (no process group of its own to make).
static void __attribute__((noreturn)) become_container(void) {
	struct ward_gate *g = &cfg.gate;
	gate_for(g, cfg.h.report_fd);
	g->start_fd = cfg.h.start_fd;
	if (cfg.hooks.n[WARD_HOOK_START_CONTAINER]) g->start_hooks = &cfg.hooks;
	g->setpgid = 0;
	ward_become(g);
}

// ---- an OCI container with ward.report ----

// bpf_run is the verdict of the classic BPF program f (n instructions: the
// profile's exact seccomp filter, which Go compiled with libseccomp) for d,
// as the kernel computes it; SECCOMP_RET_KILL_PROCESS for what it cannot
// run (the kernel's checker would have refused it).
static uint32_t bpf_run(const struct sock_filter *f, int n, const struct seccomp_data *d) {
	uint32_t a = 0, x = 0, m[BPF_MEMWORDS] = {0};
	for (int64_t pc = 0; pc >= 0 && pc < n; pc++) {
		const struct sock_filter *in = &f[pc];
		uint32_t k = in->k, v = 0, s = BPF_SRC(in->code) == BPF_X ? x : k;
		switch (BPF_CLASS(in->code)) {
		case BPF_LD:
		case BPF_LDX:
			switch (BPF_MODE(in->code)) {
			case BPF_ABS:
				if (BPF_SIZE(in->code) != BPF_W || (k & 3) || k > sizeof(*d) - 4) return SECCOMP_RET_KILL_PROCESS;
				memcpy(&v, (const char *)d + k, 4);
				break;
			case BPF_IMM: v = k; break;
			case BPF_MEM:
				if (k >= BPF_MEMWORDS) return SECCOMP_RET_KILL_PROCESS;
				v = m[k];
				break;
			case BPF_LEN: v = sizeof(*d); break;
			default: return SECCOMP_RET_KILL_PROCESS;
			}
			if (BPF_CLASS(in->code) == BPF_LD) a = v;
			else x = v;
			break;
		case BPF_ST:
		case BPF_STX:
			if (k >= BPF_MEMWORDS) return SECCOMP_RET_KILL_PROCESS;
			m[k] = BPF_CLASS(in->code) == BPF_ST ? a : x;
			break;
		case BPF_ALU:
			switch (BPF_OP(in->code)) {
			case BPF_ADD: a += s; break;
			case BPF_SUB: a -= s; break;
			case BPF_MUL: a *= s; break;
			case BPF_DIV:
				if (!s) return 0; // as the kernel: the filter returns 0
				a /= s;
				break;
			case BPF_MOD:
				if (!s) return 0;
				a %= s;
				break;
			case BPF_AND: a &= s; break;
			case BPF_OR: a |= s; break;
			case BPF_XOR: a ^= s; break;
			case BPF_LSH: a = s < 32 ? a << s : 0; break;
			case BPF_RSH: a = s < 32 ? a >> s : 0; break;
			case BPF_NEG: a = -a; break;
			default: return SECCOMP_RET_KILL_PROCESS;
			}
			break;
		case BPF_JMP:
			if (BPF_OP(in->code) == BPF_JA) {
				pc += k;
				break;
			}
			int t;
			switch (BPF_OP(in->code)) {
			case BPF_JEQ: t = a == s; break;
			case BPF_JGT: t = a > s; break;
			case BPF_JGE: t = a >= s; break;
			case BPF_JSET: t = (a & s) != 0; break;
			default: return SECCOMP_RET_KILL_PROCESS;
			}
			pc += t ? in->jt : in->jf;
			break;
		case BPF_RET: return BPF_RVAL(in->code) == BPF_A ? a : k;
		case BPF_MISC:
			if (BPF_MISCOP(in->code) == BPF_TAX) x = a;
			else a = x;
			break;
		}
	}
	return SECCOMP_RET_KILL_PROCESS;
}

// The denials counted: (syscall number, errno), at most WARD_MAX_DENIALS
// kinds; the rest only counted in denials_omitted.
#define WARD_MAX_DENIALS 64
static struct {
	int32_t nr, err;
	int64_t count;
} denials[WARD_MAX_DENIALS];
static int ndenials;
static int64_t denials_omitted;

static void count_denial(int32_t nr, int32_t err) {
	for (int i = 0; i < ndenials; i++)
		if (denials[i].nr == nr && denials[i].err == err) {
			denials[i].count++;
			return;
		}
	if (ndenials == WARD_MAX_DENIALS) {
		denials_omitted++;
		return;
	}
	denials[ndenials].nr = nr;
	denials[ndenials].err = err;
	denials[ndenials++].count = 1;
}

// serve_notification answers one notification of the program's filter
// (the profile with SCMP_ACT_ERRNO as notifications) with the exact
// filter's verdict: the errno it gives (counted), or, should it allow the
// call, the call itself. The arguments are register values, which the
// program cannot change between this check and the call.
static void serve_notification(int listener, const struct ward_gate *g) {
	struct seccomp_notif req;
	struct seccomp_notif_resp resp;
	memset(&req, 0, sizeof(req));
	if (ioctl(listener, SECCOMP_IOCTL_NOTIF_RECV, &req) < 0) return;
	memset(&resp, 0, sizeof(resp));
	resp.id = req.id;
	uint32_t v = bpf_run((const struct sock_filter *)g->filters[1], (int)g->filter_len[1], &req.data);
	if ((v & SECCOMP_RET_ACTION_FULL) == SECCOMP_RET_ALLOW) {
		resp.flags = SECCOMP_USER_NOTIF_FLAG_CONTINUE;
	} else if ((v & SECCOMP_RET_ACTION_FULL) == SECCOMP_RET_ERRNO) {
		resp.error = -(int32_t)(v & SECCOMP_RET_DATA);
		count_denial(req.data.nr, (int32_t)(v & SECCOMP_RET_DATA));
	} else {
		resp.error = -ENOSYS; // only ERRNO was made a notification
	}
	ioctl(listener, SECCOMP_IOCTL_NOTIF_SEND, &resp); // the caller may be gone
}

// relay_report reads one report of the program's process on rs: the
// listener it loaded is taken (pidfd_getfd) into *listener and answered;
// the exec's timings give *exec_us; the others go on to create (*create
// until "waiting", then closed), with the fd one carries (the console's
// pty master). 0 while the socket is open.
static int relay_report(int rs, int pid, int *create, int *listener, int64_t *exec_us) {
	struct ward_report rep;
	union ward_cmsg_fd ctl;
	struct iovec iov = {.iov_base = &rep, .iov_len = sizeof(rep)};
	struct msghdr mh = {.msg_iov = &iov, .msg_iovlen = 1, .msg_control = ctl.b, .msg_controllen = sizeof(ctl.b)};
	ssize_t n;
	do n = recvmsg(rs, &mh, MSG_CMSG_CLOEXEC);
	while (n < 0 && errno == EINTR);
	int fd = -1;
	struct cmsghdr *cm = n > 0 ? CMSG_FIRSTHDR(&mh) : NULL;
	if (cm && cm->cmsg_level == SOL_SOCKET && cm->cmsg_type == SCM_RIGHTS && cm->cmsg_len == CMSG_LEN(sizeof(int)))
		memcpy(&fd, CMSG_DATA(cm), sizeof(int));
	if (n != (ssize_t)sizeof(rep)) {
		if (fd >= 0) close(fd);
		return -1; // exec closed it, or the process ended
	}
	if (fd >= 0 && (rep.kind == WARD_REPORT_LISTENER || rep.kind == WARD_REPORT_TIMINGS)) close(fd), fd = -1; // none comes with them
	if (rep.kind == WARD_REPORT_LISTENER) {
		char ok = 0;
		int pidfd = (int)syscall(SYS_pidfd_open, pid, 0);
		if (pidfd >= 0 && *listener < 0) *listener = (int)syscall(SYS_pidfd_getfd, pidfd, (int)rep.detail, 0);
		if (pidfd >= 0) close(pidfd);
		ok = *listener >= 0;
		while (write(rs, &ok, 1) < 0 && errno == EINTR) {
		}
		return 0;
	}
	if (rep.kind == WARD_REPORT_TIMINGS) {
		*exec_us = rep.detail;
		return 0;
	}
	if (*create >= 0) {
		struct msghdr out = {.msg_iov = &iov, .msg_iovlen = 1};
		ward_attach_fd(&out, &ctl, fd);
		while (sendmsg(*create, &out, MSG_NOSIGNAL) < 0 && errno == EINTR) {
		}
		if (rep.kind == WARD_REPORT_WAITING) close(*create), *create = -1;
	}
	if (fd >= 0) close(fd);
	return 0;
}

// write_exit_record writes the program's end to exit_fd: one JSON line
// (oci.ExitRecord), with the denials when the init served the listener.
static void write_exit_record(const struct figs *f, int64_t wall_us, int counted) {
	struct timespec ts;
	clock_gettime(CLOCK_REALTIME, &ts);
	char b[256 + WARD_MAX_DENIALS * 64];
	int n = snprintf(b, sizeof(b), "{\"code\":%lld,\"signal\":%lld,\"user_us\":%lld,\"sys_us\":%lld,\"maxrss_kb\":%lld,\"wall_us\":%lld,\"end_unix_ns\":%lld",
	                 (long long)f->code, (long long)f->signal, (long long)f->user_us, (long long)f->sys_us, (long long)f->maxrss_kb, (long long)wall_us,
	                 (long long)ts.tv_sec * 1000000000LL + ts.tv_nsec);
	if (counted) {
		n += snprintf(b + n, sizeof(b) - (size_t)n, ",\"denied\":[");
		for (int i = 0; i < ndenials; i++)
			n += snprintf(b + n, sizeof(b) - (size_t)n, "%s[%d,%d,%lld]", i ? "," : "", denials[i].nr, denials[i].err, (long long)denials[i].count);
		n += snprintf(b + n, sizeof(b) - (size_t)n, "],\"denied_omitted\":%lld", (long long)denials_omitted);
	}
	n += snprintf(b + n, sizeof(b) - (size_t)n, "}\n");
	if (n > 0 && n < (int)sizeof(b) && write(cfg.h.exit_fd, b, (size_t)n) < 0) {
	} // nothing to tell: delete reports a missing record
}

// supervise_container (ward.report, exit_fd set): the init stays as the
// container's PID 1 instead of becoming the program, so that the program's
// end is recorded. It enters the cgroup itself first (the caller reads
// /proc/PID/cgroup of the pid it holds, this one) and forks the program's
// process, which runs become_container's steps in a session of its own
// and reports to the init, which relays its reports to create until
// "waiting". Then the init relays the signals it is sent (SIGKILL cannot
// be caught: it ends the namespace with no record), reaps every process of
// the namespace, serves the seccomp listener of a profile (the gate's
// notify: filters[0] is loaded, filters[1] is the exact one the init
// decides with), and once the program is reaped writes its exit record to
// exit_fd, a file in ward-oci's state directory, and exits with the
// program's status: 128+N for signal N (the kernel never lets a
// namespace's init die of its own signal).
static void __attribute__((noreturn)) supervise_container(void) {
	struct ward_gate *g = &cfg.gate;
	int counted = g->notify && g->nfilters == 2;
	if (g->notify && !counted) fail_step("seccomp-listener", EINVAL, "want the notify filter and the exact one", "");
	for (int i = 0; i < cfg.h.ncgroup; i++)
		if (write(WARD_CGROUP_FD0 + i, "0", 1) != 1) fail_step(ward_step_name(WARD_STEP_CGROUP), errno, "cgroup.procs", "");
	int sv[2];
	if (socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, sv)) fail_step(ward_step_name(WARD_STEP_FORK), errno, "socketpair", "");
	long pid = syscall(SYS_clone, SIGCHLD, 0, 0, 0, 0);
	if (pid < 0) fail_step(ward_step_name(WARD_STEP_FORK), errno, "clone", "");
	if (pid == 0) {
		close(cfg.h.exit_fd);
		close(sv[0]);
		close(cfg.h.report_fd);
		cfg.h.report_fd = sv[1];
		if (counted) g->nfilters = 1; // the exact filter is the init's
		setsid();                     // as the init it replaces: it leads its own session
		become_container();
	}
	close(sv[1]);
	close(cfg.h.start_fd); // the child's open of the fifo pairs with start's
	int rs = sv[0], create = cfg.h.report_fd, listener = -1;
	int64_t exec_us = 0;
	for (;;) {
		struct pollfd p[3] = {{.fd = sig_fd, .events = POLLIN}, {.fd = rs, .events = POLLIN}, {.fd = listener, .events = POLLIN}};
		if (poll(p, 3, -1) < 0) continue;
		if (rs >= 0 && p[1].revents && relay_report(rs, (int)pid, &create, &listener, &exec_us)) {
			close(rs), rs = -1;
			if (create >= 0) close(create), create = -1; // create sees the process end
		}
		if (listener >= 0 && (p[2].revents & POLLIN)) serve_notification(listener, g);
		if (listener >= 0 && (p[2].revents & (POLLHUP | POLLERR))) close(listener), listener = -1; // no process uses the filter
		drain_signals((int)pid);
		struct figs f;
		int r;
		while ((r = reap_one(&f)) > 0) {
			if (r != pid) continue; // an orphan of the namespace
			write_exit_record(&f, exec_us > 0 ? mono_us() - exec_us : 0, counted);
			_exit(f.signal ? 128 + (int)f.signal : (int)f.code);
		}
	}
}

// ---- a long-lived sandbox ----

static struct cmd *cmds; // the commands not yet ended, or not yet exec'd
static int ncmds, capcmds;

static void cmd_drop(int i) {
	if (cmds[i].report >= 0) close(cmds[i].report);
	free(cmds[i].file);
	cmds[i] = cmds[--ncmds];
}

// recv_exec takes one exec request: a kill goes to the command's process
// group; a command's process is forked from its gate with the three fds
// that came as its stdio. Malformed requests are dropped.
static void recv_exec(void) {
	char probe;
	ssize_t n;
	do n = recv(cfg.h.exec_fd, &probe, 1, MSG_PEEK | MSG_TRUNC);
	while (n < 0 && errno == EINTR);
	if (n == 0 || (n < 0 && errno != EAGAIN)) _exit(0); // the parent is gone
	if (n < 0) return;
	char *buf = malloc((size_t)n);
	char head[sizeof(struct ward_exec_hdr)]; // without buf: enough for the ID to answer
	union {
		struct cmsghdr h;
		char b[CMSG_SPACE(3 * sizeof(int))];
	} ctl;
	struct iovec iov = {.iov_base = buf ? buf : head, .iov_len = buf ? (size_t)n : sizeof(head)};
	struct msghdr mh = {.msg_iov = &iov, .msg_iovlen = 1, .msg_control = ctl.b, .msg_controllen = sizeof(ctl.b)};
	ssize_t got;
	do got = recvmsg(cfg.h.exec_fd, &mh, MSG_CMSG_CLOEXEC);
	while (got < 0 && errno == EINTR);
	int fds[3] = {-1, -1, -1}, nfds = 0, extra = 0;
	struct cmsghdr *cm = got > 0 ? CMSG_FIRSTHDR(&mh) : NULL;
	if (cm && cm->cmsg_level == SOL_SOCKET && cm->cmsg_type == SCM_RIGHTS) {
		// ctl has room for a fourth (CMSG_SPACE rounds up): closed; past
		// that MSG_CTRUNC closed the rest.
		int k = (int)((cm->cmsg_len - CMSG_LEN(0)) / sizeof(int));
		for (int i = 0; i < k; i++) {
			int fd;
			memcpy(&fd, CMSG_DATA(cm) + (size_t)i * sizeof(int), sizeof(fd));
			if (i < 3) fds[nfds++] = fd;
			else close(fd), extra = 1;
		}
	}
	struct ward_exec_hdr h = {0};
	struct ward_gate g;
	long detail;
	// A request that cannot be taken is answered, with its ID when its
	// header came whole: ward exec would otherwise wait for ever.
	const char *bad = NULL;
	int bad_errno = EBADMSG;
	if (got >= (ssize_t)sizeof(h)) memcpy(&h, buf ? buf : head, sizeof(h));
	if (!buf) bad = "no memory for the request", bad_errno = ENOMEM;
	else if (got != n || (mh.msg_flags & MSG_TRUNC)) bad = "request cut short";
	else if ((mh.msg_flags & MSG_CTRUNC) || extra) bad = "more fds than the 3 stdio fds", bad_errno = EINVAL;
	else if (ward_exec_parse(buf, (size_t)n, &h, &g, &detail)) bad = "malformed request";
	if (bad) {
		if (got >= (ssize_t)sizeof(h) && h.magic == WARD_EXEC_MAGIC && h.id > 0 && !h.kill) send_error(h.id, "exec", bad_errno, bad, "");
	} else {
		if (h.kill) {
			// Only a command that runs: before its exec its process group
			// may not be its own yet (ward signals again once it started).
			for (int i = 0; i < ncmds; i++)
				if (cmds[i].id == h.id && cmds[i].report < 0) kill(-cmds[i].pid, h.kill);
		} else if (nfds != 3) {
			send_error(h.id, "exec", 0, "want 3 stdio fds", "");
			ward_unpack_free(&g);
		} else {
			struct cmd c = {.id = h.id, .report = -1};
			const char *what;
			memcpy(g.stdio, fds, sizeof(fds));
			g.setpgid = 1;
			int e = spawn(&g, &c, &what);
			if (!e && ncmds == capcmds) {
				struct cmd *m = realloc(cmds, (size_t)(capcmds ? capcmds * 2 : 16) * sizeof(*cmds));
				if (m) {
					cmds = m;
					capcmds = capcmds ? capcmds * 2 : 16;
				}
			}
			if (e) {
				send_gate_error(&c, WARD_STEP_FORK, e, 0);
			} else if (ncmds == capcmds) {
				kill(c.pid, SIGKILL);
				close(c.report);
				send_gate_error(&c, WARD_STEP_FORK, ENOMEM, 0);
			} else {
				c.file = strdup(g.file);
				cmds[ncmds++] = c;
			}
			ward_unpack_free(&g);
		}
	}
	for (int i = 0; i < nfds; i++) close(fds[i]);
	free(buf);
}

// session_reaped matches an ended process with its command: reported if
// it exec'd, kept until its report socket says how far it got if not.
static void session_reaped(int pid, const struct figs *f) {
	for (int i = 0; i < ncmds; i++) {
		if (cmds[i].pid != pid) continue;
		if (cmds[i].report < 0) {
			send_exit(cmds[i].id, f, 0, 0);
			cmd_drop(i);
		} else {
			cmds[i].reaped = 1;
			cmds[i].ex = *f;
		}
		return;
	} // an orphan, or a process that failed before exec: nothing to say
}

// session_report handles a readable report socket of command i.
static void session_report(int i) {
	struct cmd *c = &cmds[i];
	int r = gate_report(c);
	if (r == 0) return;
	if (r < 0) {
		cmd_drop(i);
		return;
	}
	close(c->report);
	c->report = -1;
	struct ward_json j;
	msg_begin(&j, "started", c->id);
	ward_json_int(&j, "pid", c->pid);
	send_json(&j, -1);
	if (c->reaped) {
		send_exit(c->id, &c->ex, 0, 0);
		cmd_drop(i);
	}
}

// serve_session runs a long-lived sandbox until its parent is gone (EOF
// on fd 3 or on the exec socket).
static void __attribute__((noreturn)) serve_session(void) {
	struct pollfd *p = NULL;
	int *pids = NULL;
	for (;;) {
		struct pollfd *np = realloc(p, (size_t)(3 + ncmds) * sizeof(*p));
		if (np) p = np;
		int *npids = np ? realloc(pids, (size_t)(ncmds + 1) * sizeof(*pids)) : NULL;
		if (!npids) _exit(137); // out of memory: the parent sees the sandbox end
		pids = npids;
		p[0] = (struct pollfd){.fd = WARD_PROTO_FD, .events = POLLIN};
		p[1] = (struct pollfd){.fd = cfg.h.exec_fd, .events = POLLIN};
		p[2] = (struct pollfd){.fd = sig_fd, .events = POLLIN};
		int n = ncmds; // the commands polled: recv_exec may add more
		for (int i = 0; i < n; i++) {
			p[3 + i] = (struct pollfd){.fd = cmds[i].report, .events = POLLIN};
			pids[i] = cmds[i].pid;
		}
		if (poll(p, (nfds_t)(3 + n), -1) < 0) continue;
		if (p[0].revents && parent_gone()) _exit(0);
		// Reports first (a command's "started" before its "exit"), by
		// pid: dropping one moves another into its slot.
		for (int k = 0; k < n; k++) {
			if (!p[3 + k].revents || p[3 + k].fd < 0) continue;
			for (int i = 0; i < ncmds; i++)
				if (cmds[i].pid == pids[k] && cmds[i].report >= 0) {
					session_report(i);
					break;
				}
		}
		if (p[1].revents) recv_exec();
		drain_signals(0);
		struct figs f;
		int pid;
		while ((pid = reap_one(&f)) > 0)
			if (pid != relay_pid) session_reaped(pid, &f);
	}
}

// ---- main ----

void ward_init_main(int argc, char **argv) {
	(void)argc;
	(void)argv;
	start_us = mono_us();
	// Named for ps inside and on the host ("exe" otherwise).
	prctl(PR_SET_NAME, "ward-init", 0, 0, 0);
	receive_config();
	config_us = mono_us();
	ward_root_out_init(&out);
	signals_setup();
	run_steps(steps_before_root, sizeof(steps_before_root) / sizeof(steps_before_root[0]));
	run_root_steps();
	run_steps(steps_after_root, sizeof(steps_after_root) / sizeof(steps_after_root[0]));
	send_ready();
	if (cfg.h.flags & WARD_INIT_SESSION) serve_session();
	if ((cfg.h.flags & WARD_INIT_OCI) && cfg.h.exit_fd >= 0) supervise_container();
	if (cfg.h.flags & WARD_INIT_OCI) become_container();
	run_program();
}
