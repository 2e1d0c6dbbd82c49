# capset(2) of the probe itself to every capability (v3 header).
hdr = ctypes.create_string_buffer(struct.pack("<Ii", 0x20080522, 0), 8)
data = ctypes.create_string_buffer(struct.pack("<6I", *([0xffffffff] * 6)), 24)
expect_fail(sc("capset", hdr, data), "capset")
