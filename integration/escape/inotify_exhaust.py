# ---- probe ----
# Take every inotify instance the kernel gives this user, hold them for
# ARGS[0] seconds, then release them: per-user counters are charged up the
# chain of user-namespace owners, so with a namespace owned by host root
# this left root unable to call inotify_init1. The test tries while they
# are held.
import time
NR["inotify_init1"] = 294
fds = []
while True:
    r, e = sc("inotify_init1", 0)
    if r < 0:
        break
    fds.append(r)
print("holding %d inotify instances (%s)" % (len(fds), ename(e)), flush=True)
time.sleep(float(ARGS[0]))
for fd in fds:
    os.close(fd)
report(True, "released %d" % len(fds))
