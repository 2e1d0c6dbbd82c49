# clone(2) with CLONE_NEWUSER|SIGCHLD and no new stack (fork-like); a child, if any, exits at once.
r, e = sc("clone", CLONE_NEWUSER | 17, 0, 0, 0, 0)
if r == 0:
    os._exit(0)
if r > 0:
    os.waitpid(r, 0)
expect_fail((r, e), "clone(CLONE_NEWUSER)")
