# adjtimex(2) that modifies (ADJ_TICK) with an out-of-range tick: EINVAL even for root.
tx = ctypes.create_string_buffer(256)
struct.pack_into("<I", tx, 0, 0x4000)   # modes = ADJ_TICK
struct.pack_into("<q", tx, 88, 1)       # tick = 1, far below 900000/USER_HZ
expect_fail(sc("adjtimex", tx), "adjtimex(ADJ_TICK)")
