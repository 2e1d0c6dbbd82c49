# ---- probe ----
# Setting a setuid or setgid bit on a file in a writable host directory
# (ARGS: the directory, then how). The files are empty and never run; the
# test removes the directory. Every way of setting a mode is tried by its
# own case: chmod, fchmod, fchmodat, fchmodat2, open/openat/creat with
# O_CREAT, mkdir, mknod.
d, how = ARGS[0].encode(), ARGS[1]
NR.update({"chmod": 90, "fchmod": 91, "fchmodat": 268, "fchmodat2": 452, "open": 2, "openat": 257,
           "creat": 85, "mkdir": 83, "mkdirat": 258, "mknod": 133})
f = d + b"/f-" + how.encode()
if how.startswith("ch") or how.startswith("fch"):
    fd = os.open(f, os.O_CREAT | os.O_WRONLY, 0o644)
    if how == "chmod":
        res = sc("chmod", f, 0o4755)
    elif how == "chmod-setgid":
        res = sc("chmod", f, 0o2755)
    elif how == "fchmod":
        res = sc("fchmod", fd, 0o6755)
    elif how == "fchmodat":
        res = sc("fchmodat", AT_FDCWD, f, 0o4755)
    else:
        res = sc("fchmodat2", AT_FDCWD, f, 0o4755, 0)
    os.close(fd)
elif how == "open":
    res = sc("open", f, os.O_CREAT | os.O_WRONLY, 0o6755)
elif how == "openat":
    res = sc("openat", AT_FDCWD, f, os.O_CREAT | os.O_WRONLY, 0o4755)
elif how == "openat-tmpfile":
    res = sc("openat", AT_FDCWD, d, 0o20000000 | 0o200000 | os.O_WRONLY, 0o4755)
elif how == "creat":
    res = sc("creat", f, 0o4755)
elif how == "mkdir":
    res = sc("mkdir", f, 0o7777)
elif how == "mkdirat":
    res = sc("mkdirat", AT_FDCWD, f, 0o2777)
elif how == "mknod":
    res = sc("mknod", f, 0o100000 | 0o4755, 0)
else:
    report(False, "unknown way " + how)
if res[0] >= 0 and how in ("open", "openat", "openat-tmpfile", "creat"):
    os.close(res[0])
expect_fail(res, how)
