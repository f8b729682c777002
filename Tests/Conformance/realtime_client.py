"""A small client for Firebase's realtime protocol over RFC 6455 WebSockets, for the tests.

It speaks the protocol by hand so the tests see every frame: masking, lengths, control frames,
the count-then-pieces splitting of long messages. `WS` is the connection;
run as a script it is a client process that registers onDisconnect writes and then waits to be
killed (the presence tests kill it with SIGKILL):

    python realtime_client.py HOST PORT NS MESSAGE-JSON...

It connects, sends each message as a request (its "r" assigned in order), waits for every answer
and prints one line: {"ready": [answers…], "session": SID}; then it sleeps until killed.
"""

import base64
import hashlib
import json
import os
import socket
import struct
import sys
import time

GUID = b"258EAFA5-E914-47DA-95CA-C5AB0DC85B11"
SPLIT = 16384


class Closed(Exception):
    """The server closed the connection; `code` is the close code it sent (None: no close frame)."""

    def __init__(self, code=None, reason=""):
        super().__init__("connection closed (%s %r)" % (code, reason))
        self.code = code
        self.reason = reason


class WS:
    def __init__(self, host, port, query="v=5&ns=demo", host_header=None, timeout=10.0, headers=None):
        self.host_header = host_header or "%s:%d" % (host, port)
        self.sock = socket.create_connection((host, port), timeout=timeout)
        key = base64.b64encode(os.urandom(16)).decode()
        lines = ["GET /.ws?%s HTTP/1.1" % query, "Host: %s" % self.host_header, "Upgrade: websocket",
                 "Connection: Upgrade", "Sec-WebSocket-Key: %s" % key, "Sec-WebSocket-Version: 13"]
        for k, v in (headers or {}).items():
            lines.append("%s: %s" % (k, v))
        self.sock.sendall(("\r\n".join(lines) + "\r\n\r\n").encode())
        self.buf = b""
        while b"\r\n\r\n" not in self.buf:
            chunk = self.sock.recv(4096)
            if not chunk:
                raise Closed()
            self.buf += chunk
        head, self.buf = self.buf.split(b"\r\n\r\n", 1)
        head = head.decode("latin-1").split("\r\n")
        self.status = int(head[0].split()[1])
        self.headers = {}
        for line in head[1:]:
            name, _, value = line.partition(":")
            self.headers[name.strip().lower()] = value.strip()
        self.r = 0
        self.frames = []      # every text frame received, as text, in order
        self.pending = []     # messages read while waiting for something else
        self.hello = None
        if self.status == 101:
            expected = base64.b64encode(hashlib.sha1(key.encode() + GUID).digest()).decode()
            assert self.headers.get("sec-websocket-accept") == expected, self.headers

    # -- frames ---------------------------------------------------------------------------------

    def send_frame(self, opcode, payload=b"", fin=True, mask=True, rsv=0):
        if isinstance(payload, str):
            payload = payload.encode()
        first = (0x80 if fin else 0) | rsv | opcode
        n = len(payload)
        m = 0x80 if mask else 0
        if n < 126:
            hdr = bytes([first, m | n])
        elif n < 65536:
            hdr = bytes([first, m | 126]) + struct.pack(">H", n)
        else:
            hdr = bytes([first, m | 127]) + struct.pack(">Q", n)
        if mask:
            key = os.urandom(4)
            payload = bytes(b ^ key[i % 4] for i, b in enumerate(payload)) if n < 4096 else _mask(payload, key)
            hdr += key
        self.sock.sendall(hdr + payload)

    def send_text(self, text):
        """One text frame, exactly as given (no splitting)."""
        self.send_frame(0x1, text)

    def _fill(self):
        try:
            chunk = self.sock.recv(65536)
        except ConnectionResetError:
            chunk = b""
        if not chunk:
            raise Closed()
        self.buf += chunk

    def recv_frame(self):
        """(opcode, payload bytes) of the next frame; server frames must be unmasked and whole."""
        while True:
            if len(self.buf) >= 2:
                b0, b1 = self.buf[0], self.buf[1]
                assert b1 & 0x80 == 0, "the server masked a frame"
                assert b0 & 0x70 == 0, "the server set reserved bits"
                assert b0 & 0x80, "the server fragmented a message"
                n = b1 & 0x7F
                off = {126: 4, 127: 10}.get(n, 2)
                if len(self.buf) >= off:
                    if n == 126:
                        n = struct.unpack(">H", self.buf[2:4])[0]
                    elif n == 127:
                        n = struct.unpack(">Q", self.buf[2:10])[0]
                    if len(self.buf) >= off + n:
                        data = self.buf[off:off + n]
                        self.buf = self.buf[off + n:]
                        return b0 & 0x0F, data
            self._fill()

    def recv_text(self):
        """The next text frame's text; a close frame raises Closed with its code."""
        while True:
            op, data = self.recv_frame()
            if op == 0x1:
                text = data.decode("utf-8")
                self.frames.append(text)
                return text
            if op == 0x8:
                code = struct.unpack(">H", data[:2])[0] if len(data) >= 2 else None
                raise Closed(code, data[2:].decode("utf-8", "replace"))
            assert op in (0x9, 0xA), "unexpected opcode %d" % op

    def close_code(self, timeout=10.0):
        """Reads until the server's close frame and returns its code; then the socket must end."""
        self.sock.settimeout(timeout)
        try:
            while True:
                self.recv_text()
        except Closed as e:
            return e.code

    # -- messages -------------------------------------------------------------------------------

    def recv_raw(self):
        """The next message's text, joining a count and its pieces."""
        text = self.recv_text()
        if len(text) <= 6 and text.isdigit():
            count = int(text)
            assert count > 0, "the server sent a count of 0"
            return "".join(self.recv_text() for _ in range(count))
        return text

    def recv(self):
        if self.pending:
            return self.pending.pop(0)
        return json.loads(self.recv_raw())

    def read_hello(self):
        m = json.loads(self.recv_raw())
        assert m["t"] == "c" and m["d"]["t"] == "h", m
        self.hello = m["d"]["d"]
        return self.hello

    def send(self, message):
        """A message as the SDKs send it: split into a count and pieces when long."""
        text = message if isinstance(message, str) else json.dumps(message, separators=(",", ":"))
        if len(text) <= SPLIT:
            self.send_text(text)
            return
        pieces = [text[i:i + SPLIT] for i in range(0, len(text), SPLIT)]
        self.send_text(str(len(pieces)))
        for p in pieces:
            self.send_text(p)

    def request(self, action, body):
        self.r += 1
        self.send({"t": "d", "d": {"r": self.r, "a": action, "b": body}})
        return self.r

    def answer(self, r, timeout=10.0):
        """Reads until the answer to request r; returns (body, pushes read on the way)."""
        self.sock.settimeout(timeout)
        pushes = []
        kept = []
        while True:
            m = self.recv()
            d = m.get("d", {})
            if m.get("t") == "d" and d.get("r") == r:
                self.pending = kept + self.pending
                return d["b"], pushes
            if m.get("t") == "d" and "a" in d:
                pushes.append(d)
            else:
                kept.append(m)

    def call(self, action, body, timeout=10.0):
        """A request and its answer body ({"s":…, "d":…})."""
        return self.answer(self.request(action, body), timeout)[0]

    def push(self, timeout=10.0):
        """The next data push (`d` of a {"t":"d","d":{"a":…}} message)."""
        self.sock.settimeout(timeout)
        while True:
            m = self.recv()
            if m.get("t") == "d" and "a" in m.get("d", {}):
                return m["d"]

    def no_message(self, wait=0.3):
        """True when nothing arrives within `wait` seconds."""
        if self.pending:
            return False
        self.sock.settimeout(wait)
        try:
            self.recv_frame()
            return False
        except socket.timeout:
            return True
        finally:
            self.sock.settimeout(10.0)

    def close(self, code=1000):
        """A clean close: our close frame, then the server's answer."""
        try:
            self.send_frame(0x8, struct.pack(">H", code))
            got = self.close_code(5.0)
        finally:
            self.sock.close()
        return got

    def cut(self):
        """Drops the TCP connection without a close frame."""
        try:
            self.sock.shutdown(socket.SHUT_RDWR)
        except OSError:
            pass
        self.sock.close()


def _mask(payload, key):
    n = len(payload)
    k = int.from_bytes((key * ((n + 3) // 4))[:n], "big") if n else 0
    return (int.from_bytes(payload, "big") ^ k).to_bytes(n, "big") if n else b""


def connect(server, ns="demo", extra="", **kw):
    """A connection to a conftest Server that has read its hello."""
    ws = WS(server.host, server.port, "v=5&ns=%s%s" % (ns, extra), **kw)
    assert ws.status == 101, ws.status
    ws.read_hello()
    return ws


if __name__ == "__main__":
    host, port, ns = sys.argv[1], int(sys.argv[2]), sys.argv[3]
    ws = WS(host, port, "v=5&ns=" + ns)
    hello = ws.read_hello()
    answers = []
    for text in sys.argv[4:]:
        m = json.loads(text)
        answers.append(ws.call(m["a"], m["b"]))
    print(json.dumps({"ready": answers, "session": hello["s"]}), flush=True)
    while True:
        time.sleep(60)
