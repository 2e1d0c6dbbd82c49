# socket(AF_ALG, SOCK_SEQPACKET, 0): the kernel crypto API; closed at once.
r, e = sc("socket", 38, 5, 0)
if r >= 0:
    os.close(r)
expect_fail((r, e), "socket(AF_ALG)")
