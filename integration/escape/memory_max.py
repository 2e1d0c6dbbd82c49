# Open the memory limit of the root and of the own cgroup for writing (to raise it); open only.
cands = ["/sys/fs/cgroup/memory.max", "/sys/fs/cgroup/memory/memory.limit_in_bytes"]
for line in open("/proc/self/cgroup"):
    _, ctrl, path = line.rstrip("\n").split(":", 2)
    if ctrl == "":
        cands.append("/sys/fs/cgroup" + path.rstrip("/") + "/memory.max")
    elif "memory" in ctrl.split(","):
        cands.append("/sys/fs/cgroup/memory" + path.rstrip("/") + "/memory.limit_in_bytes")
first = None
for c in cands:
    try:
        fd = os.open(c, os.O_WRONLY)
    except OSError as x:
        first = first or x.errno
        continue
    os.close(fd)
    report(False, "opened %s for writing" % c)
report(True, ename(first))
