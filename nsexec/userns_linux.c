// A user namespace for an idmapped mount, with no program in it.
//
// MOUNT_ATTR_IDMAP takes a user namespace's fd, and only a process can make
// a namespace (a multithreaded one, as Go is, cannot unshare one for
// itself). ward_userns_child clones a child into a new user namespace that
// only waits; the caller (userns_linux.go) writes its maps, opens
// /proc/PID/ns/user, then kills and reaps it. This replaces a re-execution
// of ward's whole binary ("ward-idmap") just to hold the namespace.
//
// The child is a fork of a multithreaded Go process: raw system calls only
// (no malloc, no lock another thread may have held), with every signal
// blocked from before the fork, so that no Go handler ever runs in it.

#define _GNU_SOURCE
#include <errno.h>
#include <linux/sched.h>
#include <pthread.h>
#include <signal.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "spawn_linux.h"

// ward_userns_child returns the pid of a child in a new user namespace
// (its parent's child, SIGCHLD at its end), or -errno. The child keeps only
// rfd, the read end of a pipe, and waits on it: SIGKILL ends it, and so
// does EOF (every write end closed: the caller died before it could kill
// it).
int ward_userns_child(int rfd) {
	sigset_t all, old;
	sigfillset(&all);
	pthread_sigmask(SIG_SETMASK, &all, &old);
	long pid = syscall(SYS_clone, CLONE_NEWUSER | SIGCHLD, 0, 0, 0, 0);
	if (pid == 0) {
		// Every other fd goes: the write end of the pipe among them, and
		// whatever else the caller had open (no copy of a socket or a
		// pipe of ward's lives on here).
		if (rfd > 0) syscall(SYS_close_range, 0, rfd - 1, 0);
		syscall(SYS_close_range, rfd + 1, ~0U, 0);
		char b;
		for (;;) {
			long n = syscall(SYS_read, rfd, &b, 1);
			if (n == 0 || (n < 0 && errno != EINTR)) break;
		}
		syscall(SYS_exit_group, 0);
	}
	int err = errno;
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	return pid < 0 ? -err : (int)pid;
}
