# reboot(2) with invalid magic numbers (EINVAL even for root).
expect_fail(sc("reboot", 0, 0, 0, None), "reboot")
