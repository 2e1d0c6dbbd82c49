# A program that looks around its sandbox. `make demo` feeds it to
# `python3 -` on stdin: nothing of the host, this file included, is visible
# inside unless allowed.
import os, socket, getpass

print(f"hello from {socket.gethostname()}: user {getpass.getuser()} (uid {os.getuid()}), cwd {os.getcwd()}")
print("/ holds:", " ".join(sorted(os.listdir("/"))))
print("processes I can see:", sorted(int(p) for p in os.listdir("/proc") if p.isdigit()))
for path in ["/etc/hello", os.path.expanduser("~/hello"), "/tmp/hello"]:
    try:
        with open(path, "w") as f:
            f.write("hi\n")
        print(f"write {path}: ok")
    except OSError as e:
        print(f"write {path}: {e.strerror}")
try:
    socket.create_connection(("127.0.0.1", 22), timeout=1)
    print("connect 127.0.0.1:22: connected")
except OSError as e:
    print(f"connect 127.0.0.1:22: {e.strerror or e}")
print("network interfaces:", [name for _, name in socket.if_nameindex()])
