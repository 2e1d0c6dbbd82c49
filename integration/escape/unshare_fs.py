# unshare(CLONE_FS), no namespace flag: the policy denies unshare whatever the flags.
expect_fail(sc("unshare", 0x200), "unshare")
