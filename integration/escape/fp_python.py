# False-positive check: threads, a subprocess and a localhost TCP server and client, all inside the sandbox.
import socket, subprocess, threading

srv = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
srv.bind(("127.0.0.1", 0))
srv.listen(1)
port = srv.getsockname()[1]

def serve():
    c, _ = srv.accept()
    c.sendall(c.recv(64).upper())
    c.close()

t = threading.Thread(target=serve)
t.start()
cl = socket.create_connection(("127.0.0.1", port), timeout=10)
cl.sendall(b"ping")
got = cl.recv(64)
t.join()

results = [0] * 4
def work(i):
    results[i] = sum(range(i * 25, (i + 1) * 25))
ths = [threading.Thread(target=work, args=(i,)) for i in range(4)]
[x.start() for x in ths]
[x.join() for x in ths]

echo = subprocess.run(["echo", "x"], capture_output=True, text=True, check=True).stdout.strip()
print("tcp", got.decode(), "threads", sum(results), "subprocess", echo)
