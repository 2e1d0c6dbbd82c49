# keyctl(2) with an invalid command.
expect_fail(sc("keyctl", 0x7fffdead, 0, 0, 0, 0), "keyctl")
