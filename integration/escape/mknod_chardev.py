# mknod of a char device (1,3 = /dev/null) in /tmp; removed at once if it was made.
path = "/tmp/ward-escape-mknod-%d" % os.getpid()
r, e = sc("mknodat", AT_FDCWD, path.encode(), 0o020000 | 0o600, (1 << 8) | 3)
if r == 0:
    os.unlink(path)
expect_fail((r, e), "mknod(S_IFCHR 1:3)")
