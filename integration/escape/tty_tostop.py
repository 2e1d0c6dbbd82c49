# ---- probe ----
# With --tty the program shares the caller's terminal. It takes the
# terminal's foreground for a process group of its own, ignoring SIGTTOU,
# and sets TOSTOP: a background writer to the terminal (ward, printing its
# time-limit line) would then be stopped. Then it outlives the time limit.
# Harmless: it only changes its own terminal's mode (the test's pty).
import signal, termios, time
signal.signal(signal.SIGTTOU, signal.SIG_IGN)
os.setpgid(0, 0)
os.tcsetpgrp(0, os.getpgrp())
attrs = termios.tcgetattr(0)
attrs[3] |= termios.TOSTOP
termios.tcsetattr(0, termios.TCSANOW, attrs)
print("foreground taken, TOSTOP set", flush=True)
time.sleep(30)
report(False, "outlived the time limit")
