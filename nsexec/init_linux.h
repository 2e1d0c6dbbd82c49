// The sandbox init in C (init_linux.c) and its wire formats
// (initwire_linux.c): what Go and C agree on, in one place.
#ifndef WARD_INIT_LINUX_H
#define WARD_INIT_LINUX_H
#include <stddef.h>
#include <stdint.h>

#include "hooks_linux.h"
#include "root_linux.h"
#include "spawn_linux.h"

// The config, parent -> init on fd 3 (a stream socket): this header, then
// its sections, each starting on an 8-byte boundary (zero padding):
// the hostname (no NUL), the relay's arguments (relay_argc NUL-terminated
// strings), the root plan (Go's packRoot, ward_unpack_root) and the
// program's gate (ward_pack_gate; none in a long-lived sandbox) and, for
// an OCI container, the hooks it runs itself (hooks_linux.h).
#define WARD_INIT_MAGIC 0x494e4957u // "WINI", little-endian
#define WARD_INIT_VERSION 1
#define WARD_INIT_MAX (64u << 20) // no config is larger (the header's lengths are checked against it)
// The longest time limit (Go's longest Duration, in µs): the monotonic
// clock plus it cannot overflow the deadline.
#define WARD_INIT_MAX_TIME_LIMIT_US (INT64_MAX / 1000)
#define WARD_HOSTNAME_MAX 64      // HOST_NAME_MAX

enum {
	WARD_INIT_LOOPBACK = 1 << 0,    // bring lo up (the sandbox has a network namespace of its own)
	WARD_INIT_SESSION = 1 << 1,     // a long-lived sandbox: serve exec requests, no program of its own
	WARD_INIT_TTY = 1 << 2,         // the program shares the caller's terminal (signal rules)
	WARD_INIT_BECOME_ROOT = 1 << 3, // cloned unmapped: setresuid(0) once the parent mapped the ids
	WARD_INIT_OCI = 1 << 4,         // an OCI container: the init becomes the program itself (start_fd, report_fd)
	WARD_INIT_RUNTIME_HOOKS = 1 << 5, // OCI: "hooks" before the host's root is detached; wait for the parent's byte
	WARD_INIT_ALL_FLAGS = (1 << 6) - 1,
};

struct ward_init_hdr {
	uint32_t magic, version;
	uint32_t hdr_size; // sizeof(struct ward_init_hdr): a check of both sides' layout
	uint32_t flags;
	int64_t time_limit_us; // the program's wall-clock limit from its exec (0: none)
	int32_t ncgroup;       // cgroup.procs fds from WARD_CGROUP_FD0 the program's process writes
	int32_t exec_fd;       // a session's exec requests (SOCK_SEQPACKET; -1: none)
	int32_t relay_exe_fd;  // ward's own binary, for the proxy relay (-1: no relay)
	int32_t relay_fd;      // the fd the relay keeps open: the proxy's socket (-1: none)
	uint32_t relay_argc;   // the relay's arguments (0 with no relay)
	uint32_t hostname_len, relay_len, root_len, gate_len;
	int32_t start_fd;  // OCI: an O_PATH fd on the exec fifo the program waits on (-1: none)
	int32_t report_fd; // OCI: the gate's report socket, read by the parent itself (-1: none)
	uint32_t hooks_len, hooks_count; // OCI: the hooks section, hooks_count strings (0, 0: none)
	int32_t exit_fd; // OCI with ward.report: the init stays PID 1, forks the program and writes its exit record here (-1: none)
};

// A parsed config. hostname is a copy; relay_argv (NULL-terminated, malloc'd)
// and the root's and the gate's strings point into the buffer parsed.
struct ward_init_cfg {
	struct ward_init_hdr h;
	char hostname[WARD_HOSTNAME_MAX + 1];
	char **relay_argv; // NULL: no relay
	struct ward_root root;
	int has_gate;
	struct ward_gate gate;
	struct ward_hooks hooks;
};

// ward_init_parse checks and parses the config buf (n bytes, 8-aligned:
// malloc's): 0, or -EBADMSG (-ENOMEM) with *detail naming the check that
// failed (initwire_linux.c). ward_init_free frees what it allocated.
int ward_init_parse(char *buf, size_t n, struct ward_init_cfg *c, long *detail);
void ward_init_free(struct ward_init_cfg *c);

// An exec request, parent -> a long-lived sandbox's init over exec_fd
// (SOCK_SEQPACKET, one request per message): this header, then with kill
// 0 the command's packed gate (ward_pack_gate) and its stdin, stdout and
// stderr as SCM_RIGHTS; with kill a signal for command id's process group.
#define WARD_EXEC_MAGIC 0x58454957u // "WIEX"
#define WARD_EXEC_VERSION 1
struct ward_exec_hdr {
	uint32_t magic, version;
	int32_t id, kill;
};

// ward_exec_parse checks and parses an exec request (buf, n bytes, any
// alignment): 0, or -EBADMSG (-ENOMEM) with *detail. With h->kill 0, g is
// the command's gate (ward_unpack_free frees it).
int ward_exec_parse(char *buf, size_t n, struct ward_exec_hdr *h, struct ward_gate *g, long *detail);

// The init's messages to the parent are JSON lines (wire.go's Msg): built
// with these into a growing buffer. Strings are escaped (", \, control
// characters); other bytes pass as they are.
struct ward_json {
	char *buf;
	size_t len, cap;
	int oom;       // an allocation failed: the message is lost
	int depth;     // open objects and arrays
	int first[16]; // no member yet at that depth
};
void ward_json_begin(struct ward_json *j);               // {
void ward_json_str(struct ward_json *j, const char *key, const char *v);
void ward_json_int(struct ward_json *j, const char *key, int64_t v);
void ward_json_bool(struct ward_json *j, const char *key, int v);
void ward_json_open(struct ward_json *j, const char *key, char kind); // "key":{ or "key":[ (key NULL: in an array)
void ward_json_close(struct ward_json *j, char kind);    // } or ]
const char *ward_json_end(struct ward_json *j, size_t *n); // the line, with "}\n"; NULL when out of memory
void ward_json_free(struct ward_json *j);

// The init's main, from the constructor in spawn_linux.c.
void __attribute__((noreturn)) ward_init_main(int argc, char **argv);

#endif
