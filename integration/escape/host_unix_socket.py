# Connect to a unix socket the test listens on in a host directory given with
# --allow-read (ARGS[0] = its path): covered inside by an empty file.
s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
s.settimeout(5)
try:
    s.connect(ARGS[0])
except OSError as x:
    report(True, ename(x.errno) if x.errno else str(x))
report(False, "connected to the host socket " + ARGS[0])
