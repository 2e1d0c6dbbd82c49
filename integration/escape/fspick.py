# fspick(2) of a nonexistent path.
expect_fail(sc("fspick", AT_FDCWD, b"/nonexistent-ward", 0), "fspick")
