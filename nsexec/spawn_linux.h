// See spawn_linux.c.
#ifndef WARD_SPAWN_LINUX_H
#define WARD_SPAWN_LINUX_H
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <sys/socket.h>

// What Go and C must agree on, in one place (Go reads them through cgo).
#define WARD_ARGV0 "ward"     // argv[0] of the re-executed init
#define WARD_INIT_ARG "init"  // argv[1]: "ward init [N]" is the sandbox init
#define WARD_JOIN_ARG "join"  // argv[1]: "ward join N M" runs a command in an OCI container (ward-oci exec)
#define WARD_PROTO_FD 3       // the init's protocol socket (to the parent)
#define WARD_CGROUP_FD0 4     // the first of N cgroup.procs fds (ward init N)
#define WARD_MAX_PRESERVE 4096 // at most this many --preserve-fds
#define WARD_EXIT_SETUP 71    // a setup step failed

// The steps of the child, in order: X(id, name). The name is what the
// operator sees in "ward: <step>: <cause>" and a setup_ms key.
#define WARD_STEPS(X)                             \
	X(STDIO, "set-stdio")                     \
	X(SESSION, "new-process-group")           \
	X(CGROUP, "enter-cgroup")                 \
	X(USERNS, "enter-user-namespace")         \
	X(RLIMITS, "set-rlimits")                 \
	X(CGROUPNS, "enter-cgroup-namespace")     \
	X(OOM, "set-oom-score-adj") /* OCI */     \
	X(BOUNDING, "drop-bounding-set")          \
	X(SECUREBITS, "lock-securebits")          \
	X(USER, "set-user")                       \
	X(CAPS, "clear-capabilities")             \
	X(NNP, "no-new-privs")                    \
	X(LANDLOCK, "landlock")                   \
	X(WORKDIR, "enter-workdir")               \
	X(WAIT_START, "wait-start") /* OCI: the exec fifo */ \
	X(SECCOMP, "seccomp")                     \
	X(EXEC, "exec")                           \
	X(FORK, "fork-program") /* the early child could not take its config */ \
	X(CONSOLE, "console") /* OCI: after set-stdio; last, so not in a sandbox's steps */

enum {
#define WARD_STEP_ENUM(id, name) WARD_STEP_##id,
	WARD_STEPS(WARD_STEP_ENUM)
#undef WARD_STEP_ENUM
	WARD_NSTEPS
};

// ward_step_name is step's name, NULL for no step.
static inline const char *ward_step_name(int step) {
	static const char *const names[] = {
#define WARD_STEP_NAME(id, name) name,
		WARD_STEPS(WARD_STEP_NAME)
#undef WARD_STEP_NAME
	};
	return step >= 0 && step < WARD_NSTEPS ? names[step] : 0;
}

enum {
	WARD_REPORT_TIMINGS = 1,
	WARD_REPORT_ERROR,
	WARD_REPORT_EXEC_ERROR,
	WARD_REPORT_LISTENER,
	WARD_REPORT_WAITING, // OCI: set up, waiting on the exec fifo for start
	WARD_REPORT_CONSOLE, // OCI: the pty master (SCM_RIGHTS); detail N: it is /dev/pts/N
};

struct ward_report {
	int32_t kind, step, err;
	int32_t pad;
	int64_t detail;
	int64_t us[WARD_NSTEPS];
};

struct ward_hooks; // hooks_linux.h

#define WARD_MAX_CGROUPS 16
#define WARD_MAX_FILTERS 4
#define WARD_MAX_RLIMITS 16 // RLIM_NLIMITS
#define WARD_MAX_GROUPS 64  // process.user.additionalGids

struct ward_rlimit {
	int32_t resource, pad;
	uint64_t cur, max;
};

struct ward_gate {
	int stdio[3]; // dup'd to 0, 1, 2 (stdio[0] < 0: keep 0-2)
	int setpgid; // a process group of its own (not with --tty)
	int ncgroup;
	int cgroup_fds[WARD_MAX_CGROUPS];
	int wait_fd;   // read one byte here after entering the cgroup (-1: don't)
	int start_fd;  // OCI: an O_PATH fd on the exec fifo, opened for writing before seccomp (-1: none)
	const struct ward_hooks *start_hooks; // OCI: startContainer hooks, run once the fifo opened (NULL: none; not packed)
	int report_fd; // SOCK_SEQPACKET, CLOEXEC
	uint64_t nofile, nofile_hard, cpu_seconds, file_size; // nofile_hard 0: nofile
	int ignore_xfsz;
	int uid, gid;
	int keep_groups; // setgroups is denied here (an unprivileged caller's single mapping)
	int nest_userns; // enter a user namespace of the program's own (see enter-user-namespace)
	int keep_cgroupns; // OCI: the cgroup namespace was joined by path: no new one
	uint64_t nproc;  // RLIMIT_NPROC, soft and hard (0: leave it)
	uint64_t data;   // RLIMIT_DATA, soft and hard (0: leave it)
	int landlock_fd; // a Landlock ruleset to enforce after no_new_privs (-1: none)
	// OCI: keep config.json's capability sets (bit N: capability N) where
	// ward's program keeps none; root is then root within its namespaces.
	int oci_caps;
	uint64_t cap_bounding, cap_effective, cap_permitted, cap_inheritable, cap_ambient;
	// OCI: a terminal of the process's own (process.terminal, step_console),
	// of console_rows x console_cols (0: the kernel's size).
	int console;
	uint16_t console_rows, console_cols;
	// OCI: the process as config.json asks for it (ward's own program
	// leaves these 0: no_new_privs always, its own groups and limits).
	int oci_nnp_off; // no_new_privs stays unset; the seccomp filters then load before the capabilities go
	int set_umask;
	uint32_t umask;
	int set_oom; // write oom_score_adj before the privileges go
	int oom_score_adj;
	int oci_proc; // the groups are exactly groups[0..ngroups); no RLIMIT_CORE of ward's
	int ngroups;
	uint32_t groups[WARD_MAX_GROUPS];
	int nrlimits; // set after ward's own, in order
	struct ward_rlimit rlimits[WARD_MAX_RLIMITS];
	// OCI (--preserve-fds): the caller's fds, inherited at
	// preserve_fd..preserve_fd+npreserve-1, become the program's fds
	// 3..3+npreserve-1 (step_preserve_fds); npreserve 0: none.
	int preserve_fd, npreserve;
	int notify;      // load the one filter with a listener and send it
	int nfilters;
	uint16_t filter_len[WARD_MAX_FILTERS];
	const void *filters[WARD_MAX_FILTERS];
	const char *dir, *file, *path;
	char *const *argv;
	char *const *envp;
	// OCI: "key=value" sysctls, which the init writes before it builds
	// the root (ward_write_sysctls); NULL-terminated, NULL for none.
	char *const *sysctl;
};

// ward_cmsg_fd is the control buffer of a message that carries one fd.
union ward_cmsg_fd {
	struct cmsghdr h;
	char b[CMSG_SPACE(sizeof(int))];
};

// ward_attach_fd makes mh carry fd as SCM_RIGHTS, in ctl (fd < 0: none).
static inline void ward_attach_fd(struct msghdr *mh, union ward_cmsg_fd *ctl, int fd) {
	if (fd < 0) return;
	memset(ctl, 0, sizeof(*ctl));
	mh->msg_control = ctl->b;
	mh->msg_controllen = sizeof(ctl->b);
	struct cmsghdr *c = CMSG_FIRSTHDR(mh);
	c->cmsg_level = SOL_SOCKET;
	c->cmsg_type = SCM_RIGHTS;
	c->cmsg_len = CMSG_LEN(sizeof(int));
	memcpy(CMSG_DATA(c), &fd, sizeof(int));
}

int ward_spawn(struct ward_gate *g);
// ward_become runs g's steps in the calling process and execs (an OCI
// container's init becomes its program); it returns only by exiting.
void __attribute__((noreturn)) ward_become(struct ward_gate *g);
int ward_send_gate_to(struct ward_gate *g, int fd);
// ward_write_sysctls writes the "key=value" sysctls kv (an OCI
// container's, spawn_linux.c): 0, or a negative errno with *bad the index
// of the one that failed.
long ward_write_sysctls(char *const *kv, int *bad);
void __attribute__((noreturn)) ward_early_child(int fd, int ncg);
extern int ward_early_pid, ward_early_fd;

// The config of an early child, as one message (gate_linux.c).
char *ward_pack_gate(const struct ward_gate *g, size_t *n);
int ward_unpack_gate(char *buf, size_t n, int landlock_fd, struct ward_gate *g, long *detail);
void ward_unpack_free(struct ward_gate *g);

// A child in a new user namespace, for an idmapped mount (userns_linux.c).
int ward_userns_child(int rfd);

#endif
