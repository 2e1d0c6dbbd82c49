# Prelude the test puts in front of every Python probe (x86_64 only).
# Run as: python3 - CASE [ARG...] inside the sandbox, never on the host.
import ctypes, errno, os, socket, struct, sys
CASE, ARGS = sys.argv[1], sys.argv[2:]
libc = ctypes.CDLL(None, use_errno=True)
libc.syscall.restype = ctypes.c_long
NR = {"mount": 165, "umount2": 166, "pivot_root": 155, "chroot": 161, "setns": 308, "unshare": 272,
      "clone": 56, "clone3": 435, "keyctl": 250, "add_key": 248, "request_key": 249, "bpf": 321,
      "perf_event_open": 298, "ptrace": 101, "process_vm_readv": 310, "process_vm_writev": 311,
      "kexec_load": 246, "kexec_file_load": 320, "init_module": 175, "finit_module": 313,
      "delete_module": 176, "reboot": 169, "swapon": 167, "swapoff": 168, "acct": 163, "quotactl": 179,
      "clock_settime": 227, "settimeofday": 164, "adjtimex": 159, "syslog": 103,
      "open_by_handle_at": 304, "name_to_handle_at": 303, "personality": 135, "userfaultfd": 323,
      "io_uring_setup": 425, "io_uring_enter": 426, "io_uring_register": 427, "lookup_dcookie": 212,
      "fsopen": 430, "fsconfig": 431, "fsmount": 432, "fspick": 433, "open_tree": 428, "move_mount": 429,
      "mount_setattr": 442, "sethostname": 170, "setdomainname": 171, "socket": 41, "ioctl": 16,
      "mknodat": 259, "kill": 62, "getpid": 39, "shmget": 29, "capset": 126, "setuid": 105, "prctl": 157}
AT_FDCWD = -100
CLONE_NEWNS, CLONE_NEWCGROUP, CLONE_NEWUTS, CLONE_NEWIPC = 0x20000, 0x2000000, 0x4000000, 0x8000000
CLONE_NEWUSER, CLONE_NEWPID, CLONE_NEWNET = 0x10000000, 0x20000000, 0x40000000

def _arg(a):
    if a is None:
        return ctypes.c_void_p(0)
    if isinstance(a, bytes):
        return ctypes.c_char_p(a)
    if isinstance(a, int):
        return ctypes.c_long(a) if a < 1 << 63 else ctypes.c_ulong(a)
    return a  # a ctypes object: buffer, byref(...)

def sc(name, *args):
    """Raw syscall; returns (result, errno)."""
    ctypes.set_errno(0)
    r = libc.syscall(ctypes.c_long(NR[name]), *[_arg(a) for a in args])
    return r, ctypes.get_errno()

def ename(e):
    return errno.errorcode.get(e, "errno%d" % e)

def report(ok, how):
    """The probe's one line; the test reads it."""
    print("%s %s: %s" % ("CONTAINED" if ok else "ESCAPED", CASE, how), flush=True)
    os._exit(0)

def expect_fail(res, what="syscall"):
    r, e = res
    if r == -1:
        report(True, ename(e))
    report(False, "%s returned %d" % (what, r))

def open_only(path, flags):
    """Open, never write: CONTAINED with the errno if the open fails."""
    try:
        fd = os.open(path, flags)
    except OSError as x:
        report(True, ename(x.errno))
    os.close(fd)
    report(False, "opened %s with flags %#x" % (path, flags))
# ---- probe ----
