# io_uring_enter(2) on fd -1.
expect_fail(sc("io_uring_enter", -1, 0, 0, 0, None, 0), "io_uring_enter")
