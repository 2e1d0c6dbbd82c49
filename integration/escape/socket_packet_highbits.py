# socket(AF_PACKET | 1<<32, SOCK_RAW, 0): the kernel reads the family as an int, so a filter comparing 64 bits is bypassed.
r, e = sc("socket", 17 | 1 << 32, 3, 0)
if r >= 0:
    os.close(r)
expect_fail((r, e), "socket(AF_PACKET|1<<32)")
