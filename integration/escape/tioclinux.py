# ioctl(TIOCLINUX, subcode 0) on /dev/null (invalid subcode, not a VT).
fd = os.open("/dev/null", os.O_RDONLY)
sub = ctypes.c_char(b"\0")
expect_fail(sc("ioctl", fd, 0x541C, ctypes.byref(sub)), "ioctl(TIOCLINUX)")
