# socket(AF_VSOCK | 1<<32, SOCK_STREAM, 0): the kernel truncates the family to 32 bits; closed at once.
r, e = sc("socket", 40 | 1 << 32, 1, 0)
if r >= 0:
    os.close(r)
expect_fail((r, e), "socket(AF_VSOCK|1<<32)")
