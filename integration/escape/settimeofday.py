# settimeofday(NULL, NULL): the kernel checks CAP_SYS_TIME and then changes nothing.
expect_fail(sc("settimeofday", None, None), "settimeofday")
