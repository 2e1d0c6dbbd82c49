# prctl(PR_CAP_AMBIENT, PR_CAP_AMBIENT_RAISE, CAP_SYS_ADMIN).
expect_fail(sc("prctl", 47, 2, 21, 0, 0), "prctl(PR_CAP_AMBIENT_RAISE)")
