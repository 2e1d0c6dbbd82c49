# io_uring_register(2) on fd -1.
expect_fail(sc("io_uring_register", -1, 0, None, 0), "io_uring_register")
