# init_module(2) with a NULL image of length 0.
expect_fail(sc("init_module", None, 0, b""), "init_module")
