# name_to_handle_at(2) of "/": only reads a handle (the first half of the "Shocker" breakout).
h = ctypes.create_string_buffer(struct.pack("<I", 120), 128)
mid = ctypes.c_int(0)
expect_fail(sc("name_to_handle_at", AT_FDCWD, b"/", h, ctypes.byref(mid), 0), "name_to_handle_at")
