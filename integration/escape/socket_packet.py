# socket(AF_PACKET, SOCK_RAW, 0): protocol 0 receives nothing; closed at once.
r, e = sc("socket", 17, 3, 0)
if r >= 0:
    os.close(r)
expect_fail((r, e), "socket(AF_PACKET)")
