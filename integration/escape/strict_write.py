# ---- probe ----
# Under --seccomp=strict nothing may write to a file: ARGS are an existing
# file the sandbox could write, and the way: the legacy open(2) with
# O_WRONLY or O_RDWR, or openat/open with O_RDONLY|O_TRUNC (which empties
# it). Nothing is written if the open succeeds; the test checks the file.
NR.update({"open": 2, "openat": 257})
f, how = ARGS[0].encode(), ARGS[1]
if how == "open-wronly":
    res = sc("open", f, os.O_WRONLY)
elif how == "open-rdwr":
    res = sc("open", f, os.O_RDWR)
elif how == "openat-trunc":
    res = sc("openat", AT_FDCWD, f, os.O_RDONLY | os.O_TRUNC)
else:
    res = sc("open", f, os.O_RDONLY | os.O_TRUNC)
if res[0] >= 0:
    os.close(res[0])
expect_fail(res, how)
