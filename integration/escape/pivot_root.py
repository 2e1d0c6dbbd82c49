# pivot_root(2) between two nonexistent directories.
expect_fail(sc("pivot_root", b"/nonexistent-ward-new", b"/nonexistent-ward-old"), "pivot_root")
