# ptrace(PTRACE_SEIZE) of PID 1 (ward's init): SEIZE never stops the tracee; on success detach and exit.
r, e = sc("ptrace", 0x4206, 1, 0, 0)
if r == 0:
    sc("ptrace", 17, 1, 0, 0)
expect_fail((r, e), "ptrace(PTRACE_SEIZE, 1)")
