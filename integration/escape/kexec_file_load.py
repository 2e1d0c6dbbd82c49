# kexec_file_load(2) with bad fds and invalid flags (EINVAL even for root).
expect_fail(sc("kexec_file_load", -1, -1, 0, None, 0xdead0000), "kexec_file_load")
