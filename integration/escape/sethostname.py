# sethostname(NULL, 1): EFAULT even for root, after the capability check.
expect_fail(sc("sethostname", None, 1), "sethostname")
