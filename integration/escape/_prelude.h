/* Prelude the test puts in front of every C probe. The probe is compiled
 * and run inside the sandbox only: /tmp/p CASE [ARG...]. */
#define _GNU_SOURCE
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

static const char *CASE = "?";

static void report(int ok, const char *how)
{
	printf("%s %s: %s\n", ok ? "CONTAINED" : "ESCAPED", CASE, how);
	fflush(stdout);
	_exit(0);
}

static const char *ename(int e)
{
	const char *n = strerrorname_np(e);
	return n ? n : "errno?";
}
/* ---- probe ---- */
