# finit_module(2) of fd -1.
expect_fail(sc("finit_module", -1, b"", 0), "finit_module")
