# umount2(2) of a nonexistent path with invalid flags: the kernel rejects the flags first.
expect_fail(sc("umount2", b"/nonexistent-ward-mnt", 0x7ffffff0), "umount2")
