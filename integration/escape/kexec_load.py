# kexec_load(2) with 0 segments, NULL segments and an invalid arch/flags word (EINVAL even for root).
expect_fail(sc("kexec_load", 0, 0, None, 0xdead0100), "kexec_load")
