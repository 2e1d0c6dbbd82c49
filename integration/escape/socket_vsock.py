# socket(AF_VSOCK, SOCK_STREAM, 0): host/VM sockets; closed at once.
r, e = sc("socket", 40, 1, 0)
if r >= 0:
    os.close(r)
expect_fail((r, e), "socket(AF_VSOCK)")
