# swapoff(2) of a nonexistent path.
expect_fail(sc("swapoff", b"/nonexistent-ward-swap"), "swapoff")
