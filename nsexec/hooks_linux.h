// The OCI hooks that run in the container's namespaces (hooks_linux.c):
// createContainer, run by the init before the host's root is detached,
// and startContainer, run by the container's process once start opened
// the exec fifo. ward-oci runs the others itself, on the host (oci/hooks.go).
#ifndef WARD_HOOKS_LINUX_H
#define WARD_HOOKS_LINUX_H
#include <stddef.h>
#include <stdint.h>

enum {
	WARD_HOOK_CREATE_CONTAINER,
	WARD_HOOK_START_CONTAINER,
	WARD_HOOK_KINDS,
};

// The longest a hook's timeout may be (seconds); and how much of a failed
// hook's output its error keeps.
#define WARD_HOOK_MAX_TIMEOUT 86400
#define WARD_HOOK_OUTPUT_MAX 2048

struct ward_hook {
	const char *path;   // absolute
	char *const *argv;  // NULL-terminated, argv[0] first
	char *const *envp;  // NULL-terminated: the hook's environment, nothing else
	uint32_t timeout_s; // 0: none
};

// The hooks section of the init's config, parsed: the state JSON every
// hook gets on stdin, and each kind's hooks in order. Its strings point
// into the parsed buffer; all, vec and strs are malloc'd.
struct ward_hooks {
	const char *state;
	size_t state_len;
	uint32_t n[WARD_HOOK_KINDS];
	struct ward_hook *h[WARD_HOOK_KINDS];
	struct ward_hook *all;
	char **vec, **strs;
};

// ward_hooks_parse reads the section: count NUL-terminated strings that
// fill [p, p+len) exactly. The first is the state JSON; then each hook is
// its kind ("createContainer" or "startContainer", createContainer's
// first), its timeout, its argc and its envc (decimal), its path, then
// argc arguments (at least argv[0]) and envc "KEY=VALUE" strings. 0, or
// -EBADMSG (-ENOMEM); *hs is then empty. count 0 (and len 0): no hooks.
int ward_hooks_parse(char *p, size_t len, uint32_t count, struct ward_hooks *hs);
void ward_hooks_free(struct ward_hooks *hs);

// ward_hooks_run runs hs's hooks of kind in order, each forked from the
// caller (no malloc: a plain single-threaded process such as the init),
// with only its own environment, the state on stdin, its stdout and
// stderr captured, killed after its timeout. With root, each hook is
// chrooted there (its cwd stays the caller's). 0 when all succeeded; else
// -1, and msg (size bytes) names the first that failed, why, and what it
// wrote: "createContainer hook #0 (/path): exit status 1: output: ...".
int ward_hooks_run(const struct ward_hooks *hs, int kind, const char *root, char *msg, size_t size);

#endif
