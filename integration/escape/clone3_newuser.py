# clone3(2) with CLONE_NEWUSER; a child, if any, exits at once. The policy must answer ENOSYS (glibc then falls back to clone).
args = ctypes.create_string_buffer(struct.pack("<11Q", CLONE_NEWUSER, 0, 0, 0, 17, 0, 0, 0, 0, 0, 0), 88)
r, e = sc("clone3", args, 88)
if r == 0:
    os._exit(0)
if r > 0:
    os.waitpid(r, 0)
expect_fail((r, e), "clone3(CLONE_NEWUSER)")
