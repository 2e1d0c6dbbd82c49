# ptrace(PTRACE_SEIZE) of the parent (same uid): a forked child seizes the probe; SEIZE never stops it.
pid = os.fork()
if pid == 0:
    ppid = os.getppid()
    r, e = sc("ptrace", 0x4206, ppid, 0, 0)
    if r == 0:
        sc("ptrace", 17, ppid, 0, 0)
    expect_fail((r, e), "ptrace(PTRACE_SEIZE, parent)")
os.waitpid(pid, 0)
os._exit(0)
