# getpid through the x32 ABI (nr | 0x40000000) in a forked child: a filter that only knows x86_64 numbers would let x32 ones by.
pid = os.fork()
if pid == 0:
    ctypes.set_errno(0)
    r = libc.syscall(ctypes.c_long(0x40000000 | 39))
    os._exit(42 if r > 0 else min(ctypes.get_errno(), 41))
_, st = os.waitpid(pid, 0)
if os.WIFSIGNALED(st):
    report(True, "killed by signal %d" % os.WTERMSIG(st))
if os.WEXITSTATUS(st) == 42:
    report(False, "x32 getpid succeeded")
report(True, ename(os.WEXITSTATUS(st)))
