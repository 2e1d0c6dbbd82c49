# unshare(CLONE_NEWUSER): a new user namespace for the probe process only (the usual first step of kernel exploits).
expect_fail(sc("unshare", CLONE_NEWUSER), "unshare")
