# fsconfig(2) on fd -1.
expect_fail(sc("fsconfig", -1, 0, b"ro", None, 0), "fsconfig")
