// TEMPORARY STUB (branch c-init) of branch c-root's header, per
// /work/notes/c-interface.md: replaced by c-root's file at the merge.
#ifndef WARD_ROOT_LINUX_H
#define WARD_ROOT_LINUX_H
#include <stddef.h>

struct ward_root {
	const char *buf;
	size_t n;
};

int ward_unpack_root(const char *buf, size_t n, struct ward_root *r);

struct ward_root_out {
	int upper_fd;
	int landlock_fd;
	int landlock_abi;
	char landlock_note[256];
	char what[64];
	char path[4096];
};

struct ward_root_step {
	const char *name;
	int (*when)(const struct ward_root *r);
	int (*run)(const struct ward_root *r, struct ward_root_out *out);
};
extern const struct ward_root_step ward_root_steps[];
extern const int ward_root_nsteps;
#endif
