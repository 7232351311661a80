"""A hostile (and an honest) HTTP/1.1 upstream for apps/proxy's tests, run
inside the test's namespace: python3 upstream.py HOST PORT LOG. Each
request line it reads is appended to LOG; the path picks the behaviour.
/ws is a WebSocket echo server (RFC 6455, wsproto.py); /half (Upgrade:
half-test) reads a tunnel to the client's FIN, then answers; /half-up
(the same) sends 100,000 bytes and its FIN first, then reads to the
client's FIN."""
import hashlib
import os
import socket
import socketserver
import struct
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import wsproto  # noqa: E402

HOST, PORT, LOG = sys.argv[1], int(sys.argv[2]), sys.argv[3]


def log(line):
    with open(LOG, "a") as f:
        f.write(line + "\n")


def reset(sock):
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
    sock.close()


def dechunk(f):
    """A chunked request body (RFC 9112 7.1), strictly: sizes in hex, each
    chunk's CRLF, no trailers."""
    body = b""
    while True:
        n = int(f.readline(64).strip(), 16)
        if n == 0:
            assert f.readline(64) == b"\r\n"
            return body
        body += f.read(n)
        assert f.read(2) == b"\r\n"


class H(socketserver.BaseRequestHandler):
    def handle(self):
        s = self.request
        f = s.makefile("rb")
        while True:
            line = f.readline(65536)
            if not line:
                return
            req = line.decode("latin-1").strip()
            heads = {}
            while True:
                h = f.readline(65536)
                if h in (b"\r\n", b"\n", b""):
                    break
                k, _, v = h.decode("latin-1").partition(":")
                heads[k.strip().lower()] = v.strip()
            log(req + " | " + " ".join(f"{k}={v}" for k, v in sorted(heads.items())))
            path = req.split(" ")[1] if " " in req else "/"
            if heads.get("transfer-encoding", "").lower() == "chunked":
                body = dechunk(f)
            else:
                body = f.read(int(heads.get("content-length", "0")))
            if path.startswith("/ws"):
                wsproto.serve(s, f, heads, log)
                return
            if path == "/half" and heads.get("upgrade") == "half-test":
                # a tunnel half-closed by the client: read to its FIN,
                # then answer (the other way still flows), then ours
                s.sendall(b"HTTP/1.1 101 Switching Protocols\r\nUpgrade: half-test\r\nConnection: Upgrade\r\n\r\n")
                n = 0
                while True:
                    b = f.read1(65536)
                    if not b:
                        break
                    n += len(b)
                log(f"half: eof after {n} bytes")
                time.sleep(0.3)
                s.sendall(b"after your FIN: %d bytes\n" % n + b"z" * 100000)
                s.shutdown(socket.SHUT_WR)
                return
            if path == "/half-up" and heads.get("upgrade") == "half-test":
                # a tunnel the upstream half-closes: its bytes and its
                # FIN first, then it reads the client's to their FIN
                s.sendall(b"HTTP/1.1 101 Switching Protocols\r\nUpgrade: half-test\r\nConnection: Upgrade\r\n\r\n"
                          + b"w" * 100000)
                s.shutdown(socket.SHUT_WR)
                h = hashlib.sha256()
                n = 0
                while True:
                    b = f.read1(65536)
                    if not b:
                        break
                    n += len(b)
                    h.update(b)
                log(f"half-up: eof after {n} bytes {h.hexdigest()}")
                return
            if path == "/sum":
                out = f"{len(body)} {hashlib.sha256(body).hexdigest()}\n".encode()
                s.sendall(b"HTTP/1.1 200 OK\r\nContent-Length: %d\r\n\r\n" % len(out) + out)
            elif path.startswith("/big"):
                n = int(path.split("=")[1])
                data = bytes(i * 7 % 251 for i in range(n))
                s.sendall(b"HTTP/1.1 200 OK\r\nContent-Type: application/octet-stream\r\n"
                          b"Content-Length: %d\r\n\r\n" % n)
                s.sendall(data)
            elif path == "/chunked":
                s.sendall(b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\nX-Up: yes\r\n"
                          b"Connection: X-Up, close\r\nKeep-Alive: timeout=5\r\n\r\n"
                          b"5\r\nhello\r\n7\r\n, world\r\n0\r\n\r\n")
            elif path == "/endless-head":
                try:
                    s.sendall(b"HTTP/1.1 200 OK\r\n")
                    for i in range(20000):
                        s.sendall(b"X-Endless-%d: %s\r\n" % (i, b"a" * 64))
                except OSError:
                    pass
                return
            elif path == "/stall-head":
                time.sleep(8)
                return
            elif path == "/endless-body":
                s.sendall(b"HTTP/1.1 200 OK\r\nContent-Length: 1000000000\r\n\r\n" + b"x" * 1000)
                time.sleep(8)
                return
            elif path == "/reset-mid":
                s.sendall(b"HTTP/1.1 200 OK\r\nContent-Length: 100000\r\n\r\n" + b"y" * 1000)
                time.sleep(0.3)
                reset(s)
                return
            elif path == "/chunked-reset":
                s.sendall(b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nhello\r\n")
                time.sleep(0.3)
                reset(s)
                return
            elif path == "/reset-early":
                reset(s)
                return
            elif path == "/clte":
                s.sendall(b"HTTP/1.1 200 OK\r\nContent-Length: 5\r\nTransfer-Encoding: chunked\r\n\r\n"
                          b"5\r\nhello\r\n0\r\n\r\n")
            else:
                out = b"ok " + path.encode() + b"\n"
                s.sendall(b"HTTP/1.1 200 OK\r\nContent-Length: %d\r\n\r\n" % len(out) +
                          (b"" if req.startswith("HEAD ") else out))


class S(socketserver.ThreadingTCPServer):
    allow_reuse_address = True
    daemon_threads = True


S((HOST, PORT), H).serve_forever()
