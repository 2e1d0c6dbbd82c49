# CVE-2024-21626: no fd of ward beyond 0-2 leaks in, and the cwd is inside the sandbox root.
names = os.listdir("/proc/self/fd")
leaks = []
for n in names:
    if int(n) <= 2:
        continue
    try:
        leaks.append("%s->%s" % (n, os.readlink("/proc/self/fd/" + n)))
    except OSError:
        pass  # the directory fd of the listing itself, closed by now
cwd = os.readlink("/proc/self/cwd")
if leaks:
    report(False, "leaked fds " + " ".join(leaks))
if cwd != "/home/sandbox":
    report(False, "cwd is " + cwd)
report(True, "fds 0-2 only, cwd /home/sandbox")
