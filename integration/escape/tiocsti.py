# ioctl(TIOCSTI) on /dev/null (ENOTTY if it reached the kernel): the policy must deny the request itself.
fd = os.open("/dev/null", os.O_RDONLY)
expect_fail(sc("ioctl", fd, 0x5412, b"#"), "ioctl(TIOCSTI)")
