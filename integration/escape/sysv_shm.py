# shmget of a SysV shared memory key the test created on the host (ARGS[0] = key), without IPC_CREAT.
libc.shmget.restype = ctypes.c_int
ctypes.set_errno(0)
r = libc.shmget(ctypes.c_int(int(ARGS[0])), ctypes.c_size_t(0), ctypes.c_int(0))
if r == -1:
    report(True, ename(ctypes.get_errno()))
report(False, "host shm segment visible, id %d" % r)
