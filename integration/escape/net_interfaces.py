# The network namespace has only lo.
names = sorted(n for _, n in socket.if_nameindex())
if names == ["lo"]:
    report(True, "only lo")
report(False, "interfaces " + ",".join(names))
