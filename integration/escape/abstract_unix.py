# Connect to an abstract unix socket the test listens on in the host's network namespace (ARGS[0] = name).
s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
try:
    s.connect("\0" + ARGS[0])
except OSError as x:
    report(True, ename(x.errno))
report(False, "connected to host abstract socket @" + ARGS[0])
