# ioctl(0, TIOCLINUX, subcode 0) on the inherited terminal (invalid subcode; a pty is no VT).
tty = os.isatty(0)
sub = ctypes.c_char(b"\0")
r, e = sc("ioctl", 0, 0x541C, ctypes.byref(sub))
if r == 0:
    report(False, "TIOCLINUX succeeded")
report(True, "%s (stdin is a tty: %s)" % (ename(e), tty))
