# ---- probe ----
# Issue 13, finding 5: the stub DNS server in ward's init (outside the
# sandbox's cgroup) listened on an address per name asked, for good: 6,000
# names held 12,000 fds. Ask for 2,000 names, then connect to the first
# one's address on the allowed port (ARGS[0]): the init must have let its
# listener go. Only DNS to the stub and a connect to its fake addresses.
q = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
q.settimeout(2)
def resolve(name, qid):
    m = struct.pack(">HHHHHH", qid, 0x0100, 1, 0, 0, 0)
    m += b"".join(bytes([len(l)]) + l.encode() for l in name.split(".")) + b"\0" + struct.pack(">HH", 1, 1)
    q.sendto(m, ("127.0.0.1", 53))
    r = q.recv(512)
    if struct.unpack(">H", r[6:8])[0] != 1:
        report(False, "no answer for " + name)
    return socket.inet_ntoa(r[-4:])
first = resolve("n0.flood.test", 1)
for i in range(1, 2000):
    resolve("n%d.flood.test" % i, i)
c = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
c.settimeout(5)
try:
    c.connect((first, int(ARGS[0])))
except OSError as x:
    report(True, ename(x.errno) if x.errno else str(x))
report(False, "the first of 2,000 names still has a listener at %s:%s" % (first, ARGS[0]))
