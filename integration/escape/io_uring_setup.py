# io_uring_setup(1, zeroed params): an empty ring, closed at once.
p = ctypes.create_string_buffer(120)
r, e = sc("io_uring_setup", 1, p)
if r >= 0:
    os.close(r)
expect_fail((r, e), "io_uring_setup")
