# socket(AF_INET, SOCK_RAW, IPPROTO_ICMP): closed at once, nothing sent.
r, e = sc("socket", 2, 3, 1)
if r >= 0:
    os.close(r)
expect_fail((r, e), "socket(AF_INET, SOCK_RAW)")
