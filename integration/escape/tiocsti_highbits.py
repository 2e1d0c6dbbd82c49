# ioctl(TIOCSTI | 1<<32) on /dev/null: the kernel ignores the high bits, so the filter must too.
fd = os.open("/dev/null", os.O_RDONLY)
expect_fail(sc("ioctl", fd, 0x100005412, b"#"), "ioctl(TIOCSTI|1<<32)")
