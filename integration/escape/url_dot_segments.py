# ---- probe ----
# Issue 13, finding 7: with --allow-network=http://NAME:PORT/public/* (ARGS[0]
# = NAME:PORT), ask ward's HTTP proxy for the private file through dot
# segments, plain and encoded. Only GETs of a file the test made.
def get(path):
    s = socket.create_connection(("127.0.0.1", 3128), timeout=10)
    s.sendall(("GET http://%s%s HTTP/1.1\r\nHost: %s\r\nConnection: close\r\n\r\n" % (ARGS[0], path, ARGS[0])).encode())
    data = b""
    while True:
        b = s.recv(4096)
        if not b:
            break
        data += b
    s.close()
    return data
codes = set()
for p in ["/public/../private/secret.txt", "/public/%2e%2e/private/secret.txt", "/public/%2E%2E/private/secret.txt",
          "/public/.%2e/private/secret.txt", "/public/..%2fprivate/secret.txt", "/public/..%2Fprivate/secret.txt",
          "/public/..%5cprivate/secret.txt", "/public/..\\private/secret.txt", "/public/..;/private/secret.txt",
          "/public/%c0%ae%c0%ae/private/secret.txt", "/public//../../private/secret.txt"]:
    data = get(p)
    if b"SECRET" in data:
        report(False, "got the private file through " + p)
    codes.add(data.split(b" ", 2)[1].decode() if data.startswith(b"HTTP/") else "closed")
if get("/public/ok.txt").find(b"public-ok") < 0:
    report(False, "the allowed path does not work either: the probe proves nothing")
report(True, " ".join(sorted(codes)))
