# fsmount(2) of fd -1.
expect_fail(sc("fsmount", -1, 0, 0), "fsmount")
