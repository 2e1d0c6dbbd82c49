# move_mount(2) from fd -1 onto a nonexistent path.
expect_fail(sc("move_mount", -1, b"", AT_FDCWD, b"/nonexistent-ward", 4), "move_mount")
