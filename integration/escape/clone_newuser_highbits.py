# clone(CLONE_NEWUSER|SIGCHLD | 1<<32): the kernel uses the low 32 bits of clone's flags; a child, if any, exits at once.
r, e = sc("clone", CLONE_NEWUSER | 17 | 1 << 32, 0, 0, 0, 0)
if r == 0:
    os._exit(0)
if r > 0:
    os.waitpid(r, 0)
expect_fail((r, e), "clone(CLONE_NEWUSER|1<<32)")
