# process_vm_writev(2) to address 0x8 of PID 1: below mmap_min_addr, never mapped, so nothing can be written.
buf = ctypes.create_string_buffer(8)
local = struct.pack("<QQ", ctypes.addressof(buf), 8)
remote = struct.pack("<QQ", 0x8, 8)
expect_fail(sc("process_vm_writev", 1, ctypes.c_char_p(local), 1, ctypes.c_char_p(remote), 1, 0), "process_vm_writev")
