# mount_setattr(2) on fd -1 with a NULL attr of size 0.
expect_fail(sc("mount_setattr", -1, b"", 0x1000, None, 0), "mount_setattr")
