# Connect to a TCP listener the test opened on the host's 127.0.0.1 (ARGS[0] = port).
s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
s.settimeout(5)
try:
    s.connect(("127.0.0.1", int(ARGS[0])))
except OSError as x:
    report(True, ename(x.errno) if x.errno else str(x))
report(False, "connected to host 127.0.0.1:" + ARGS[0])
