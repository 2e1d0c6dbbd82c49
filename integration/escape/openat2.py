# ---- probe ----
# openat2(2) carries its mode in a struct no seccomp filter can read, so it
# must not be usable: ENOSYS (libc falls back to openat). Opens /dev/null
# read-only if it got through.
NR["openat2"] = 437
how = struct.pack("QQQ", os.O_RDONLY, 0, 0)
buf = ctypes.create_string_buffer(how)
r, e = sc("openat2", AT_FDCWD, b"/dev/null", buf, len(how))
if r >= 0:
    os.close(r)
expect_fail((r, e), "openat2")
