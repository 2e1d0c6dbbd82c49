# process_vm_readv(2) of 8 bytes at an unmapped address of PID 1 (read only, EFAULT at worst).
buf = ctypes.create_string_buffer(8)
local = struct.pack("<QQ", ctypes.addressof(buf), 8)
remote = struct.pack("<QQ", 0x8, 8)
expect_fail(sc("process_vm_readv", 1, ctypes.c_char_p(local), 1, ctypes.c_char_p(remote), 1, 0), "process_vm_readv")
