# quotactl(2) with an invalid command and a NULL device.
expect_fail(sc("quotactl", 0xdead00, None, 0, None), "quotactl")
