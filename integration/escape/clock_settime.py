# clock_settime(CLOCK_REALTIME, NULL): EFAULT if it reached the kernel.
expect_fail(sc("clock_settime", 0, None), "clock_settime")
