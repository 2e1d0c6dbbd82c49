# open_by_handle_at(2) with a zeroed inode handle on "/" (the "Shocker" breakout): ESTALE at worst, read-only.
mfd = os.open("/", os.O_RDONLY | os.O_DIRECTORY)
h = ctypes.create_string_buffer(struct.pack("<Ii8s", 8, 1, b"\0" * 8), 16)
expect_fail(sc("open_by_handle_at", mfd, h, os.O_RDONLY), "open_by_handle_at")
