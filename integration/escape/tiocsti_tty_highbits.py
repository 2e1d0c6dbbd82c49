# ioctl(0, TIOCSTI | 1<<32, "#") on the inherited terminal: the kernel truncates the request to 32 bits.
tty = os.isatty(0)
r, e = sc("ioctl", 0, 0x100005412, b"#")
if r == 0:
    report(False, "pushed a byte into the terminal")
report(True, "%s (stdin is a tty: %s)" % (ename(e), tty))
