# unshare(CLONE_NEWNS): a private mount namespace for the probe process only.
expect_fail(sc("unshare", CLONE_NEWNS), "unshare")
