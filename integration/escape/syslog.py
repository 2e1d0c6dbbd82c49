# syslog(SYSLOG_ACTION_SIZE_BUFFER): only asks the size of the kernel log buffer.
expect_fail(sc("syslog", 10, None, 0), "syslog")
