# swapon(2) of a nonexistent path.
expect_fail(sc("swapon", b"/nonexistent-ward-swap", 0), "swapon")
