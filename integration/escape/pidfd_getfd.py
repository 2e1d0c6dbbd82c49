# pidfd_getfd(2): a forked child copies the parent's stdin through a pidfd (fd theft needs ptrace rights).
NR.update({"pidfd_open": 434, "pidfd_getfd": 438})
pid = os.fork()
if pid == 0:
    pfd, e = sc("pidfd_open", os.getppid(), 0)
    if pfd < 0:
        report(True, "pidfd_open " + ename(e))
    r, e = sc("pidfd_getfd", pfd, 0, 0)
    if r >= 0:
        os.close(r)
    expect_fail((r, e), "pidfd_getfd(parent, 0)")
os.waitpid(pid, 0)
os._exit(0)
