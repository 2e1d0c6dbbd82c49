# ioctl(0, TIOCSTI, "#") on the terminal ward inherited as stdin (CVE-2017-5226 class): "#" would land in the test's own pty.
tty = os.isatty(0)
r, e = sc("ioctl", 0, 0x5412, b"#")
if r == 0:
    report(False, "pushed a byte into the terminal")
report(True, "%s (stdin is a tty: %s)" % (ename(e), tty))
