# add_key(2) with a NULL type and description (EFAULT if it reached the kernel).
expect_fail(sc("add_key", None, None, None, 0, -2), "add_key")
