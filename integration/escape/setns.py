# setns(2) into the probe's own UTS namespace: a no-op if allowed.
fd = os.open("/proc/self/ns/uts", os.O_RDONLY)
expect_fail(sc("setns", fd, CLONE_NEWUTS), "setns")
