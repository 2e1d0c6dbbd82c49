# mount(2) of a nonexistent source on a nonexistent target, NULL fstype: does nothing even if allowed.
expect_fail(sc("mount", b"/nonexistent-ward-src", b"/nonexistent-ward-dst", None, 0, None), "mount")
