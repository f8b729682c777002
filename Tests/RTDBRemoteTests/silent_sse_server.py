# A Server-Sent Events server for RemoteStreamSilenceTests: one value then silence on the first
# connection, a new value and keep-alives on the next. Prints its port, stops after 8 s.
import socket, sys, time, threading
s = socket.socket(); s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1); s.bind(("127.0.0.1", 0)); s.listen(8)
print(s.getsockname()[1], flush=True)
def serve(c, n):
  try:
    c.recv(65536)
    c.sendall(b"HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nCache-Control: no-cache\r\n\r\n")
    c.sendall(b'event: put\ndata: {"path":"/","data":%d}\n\n' % n)
    if n == 1:
        time.sleep(8)
    else:
        for _ in range(50):
            c.sendall(b"event: keep-alive\ndata: null\n\n"); time.sleep(0.1)
  except OSError:
    pass      # the client hung up
  c.close()
n = 0
deadline = time.time() + 8
s.settimeout(1)
while time.time() < deadline:
    try: c, _ = s.accept()
    except socket.timeout: continue
    n += 1
    threading.Thread(target=serve, args=(c, n), daemon=True).start()
