# In proxy mode, connect to a TCP listener the probe itself opens on the
# sandbox's loopback at a port that is not the proxy's (ARGS[0]): the kernel
# alone would connect; Landlock ABI 4+ allows connect only to the proxy, the
# stub and the direct ports (EACCES). Nothing leaves the sandbox either way.
srv = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
srv.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
srv.bind(("127.0.0.1", int(ARGS[0])))
srv.listen(1)
s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
s.settimeout(5)
try:
    s.connect(("127.0.0.1", int(ARGS[0])))
except OSError as x:
    report(True, ename(x.errno) if x.errno else str(x))
report(False, "connected to 127.0.0.1:" + ARGS[0] + " (not the proxy's)")
