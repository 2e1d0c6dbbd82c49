# userfaultfd(O_CLOEXEC|UFFD_USER_MODE_ONLY): an fd, closed at once.
r, e = sc("userfaultfd", 0x80000 | 1)
if r >= 0:
    os.close(r)
expect_fail((r, e), "userfaultfd")
