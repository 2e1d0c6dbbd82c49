# setuid(0).
expect_fail(sc("setuid", 0), "setuid(0)")
