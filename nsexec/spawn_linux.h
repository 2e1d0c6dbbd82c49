// See spawn_linux.c.
#include <stdint.h>

// Steps of the child, in order; spawn_linux.go names them.
enum {
	WARD_STEP_STDIO,
	WARD_STEP_SESSION,
	WARD_STEP_CGROUP,
	WARD_STEP_USERNS,
	WARD_STEP_RLIMITS,
	WARD_STEP_CGROUPNS,
	WARD_STEP_BOUNDING,
	WARD_STEP_SECUREBITS,
	WARD_STEP_USER,
	WARD_STEP_CAPS,
	WARD_STEP_NNP,
	WARD_STEP_LANDLOCK,
	WARD_STEP_WORKDIR,
	WARD_STEP_SECCOMP,
	WARD_STEP_EXEC,
	WARD_STEP_FORK, // the early child could not take its config
	WARD_NSTEPS
};

enum {
	WARD_REPORT_TIMINGS = 1,
	WARD_REPORT_ERROR,
	WARD_REPORT_EXEC_ERROR,
	WARD_REPORT_LISTENER,
};

struct ward_report {
	int32_t kind, step, err;
	int32_t pad;
	int64_t detail;
	int64_t us[WARD_NSTEPS];
};

#define WARD_MAX_CGROUPS 16
#define WARD_MAX_FILTERS 4

struct ward_gate {
	int stdio[3]; // dup'd to 0, 1, 2 (stdio[0] < 0: keep 0-2)
	int setpgid; // a process group of its own (not with --tty)
	int ncgroup;
	int cgroup_fds[WARD_MAX_CGROUPS];
	int wait_fd;   // read one byte here after entering the cgroup (-1: don't)
	int report_fd; // SOCK_SEQPACKET, CLOEXEC
	uint64_t nofile, nofile_hard, cpu_seconds, file_size; // nofile_hard 0: nofile
	int ignore_xfsz;
	int uid, gid;
	int keep_groups; // setgroups is denied here (an unprivileged caller's single mapping)
	int nest_userns; // enter a user namespace of the program's own (see enter-user-namespace)
	uint64_t nproc;  // RLIMIT_NPROC, soft and hard (0: leave it)
	uint64_t data;   // RLIMIT_DATA, soft and hard (0: leave it)
	int landlock_fd; // a Landlock ruleset to enforce after no_new_privs (-1: none)
	int notify;      // load the one filter with a listener and send it
	int nfilters;
	uint16_t filter_len[WARD_MAX_FILTERS];
	const void *filters[WARD_MAX_FILTERS];
	const char *dir, *file, *path;
	char *const *argv;
	char *const *envp;
};

int ward_spawn(struct ward_gate *g);
int ward_send_gate_to(struct ward_gate *g, int fd);
extern int ward_early_pid, ward_early_fd;
