# ioctl on a device opened inside (TCGETS on /dev/null: harmless either way).
# Landlock ABI 5+ refuses any ioctl on a device but the terminals (EACCES);
# below it the device itself answers ENOTTY.
import fcntl, termios
fd = os.open("/dev/null", os.O_RDONLY)
try:
    fcntl.ioctl(fd, termios.TCGETS, bytes(64))
except OSError as x:
    report(True, ename(x.errno))
report(False, "TCGETS on /dev/null succeeded")
