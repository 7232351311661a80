"""A small WebSocket (RFC 6455) for apps/proxy's tests, written here (no
python3-websockets in the test set): the echo server upstream.py runs on
/ws, and a client (python3 wsproto.py HOST PORT SCENARIO, run in the
test's namespace) that goes through the proxy and prints what it saw as
JSON. Text and binary frames, unfragmented; close frames both ways.

The server echoes every message; "push N" makes it send N messages of its
own first; "bye" makes it close (a close frame, 1000, then its FIN once
the client's close frame came: the server closes first, RFC 6455 7.1.1)."""
import base64
import hashlib
import json
import os
import socket
import struct
import sys
import time

GUID = b"258EAFA5-E914-47DA-95CA-C5AB0DC85B11"


def accept_key(key):
    return base64.b64encode(hashlib.sha1(key.encode() + GUID).digest()).decode()


def frame(op, payload, mask):
    n = len(payload)
    head = bytes([0x80 | op])
    mbit = 0x80 if mask else 0
    if n < 126:
        head += bytes([mbit | n])
    elif n < 65536:
        head += bytes([mbit | 126]) + struct.pack(">H", n)
    else:
        head += bytes([mbit | 127]) + struct.pack(">Q", n)
    if mask:
        k = os.urandom(4)
        return head + k + bytes(b ^ k[i % 4] for i, b in enumerate(payload))
    return head + payload


def read_exact(f, n):
    b = f.read(n)
    if b is None or len(b) < n:
        raise EOFError
    return b


def read_frame(f):
    """(opcode, payload) of the next frame; EOFError at the stream's end."""
    h = read_exact(f, 2)
    op, n, masked = h[0] & 0x0F, h[1] & 0x7F, h[1] & 0x80
    if n == 126:
        n = struct.unpack(">H", read_exact(f, 2))[0]
    elif n == 127:
        n = struct.unpack(">Q", read_exact(f, 8))[0]
    k = read_exact(f, 4) if masked else None
    p = read_exact(f, n)
    if k:
        p = bytes(b ^ k[i % 4] for i, b in enumerate(p))
    return op, p


def serve(s, f, heads, log):
    """upstream.py's /ws: the handshake answered, then echo until closed."""
    if heads.get("upgrade", "").lower() != "websocket" or "upgrade" not in heads.get("connection", "").lower():
        s.sendall(b"HTTP/1.1 426 Upgrade Required\r\nContent-Length: 0\r\n\r\n")
        return
    s.sendall(b"HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"
              b"Sec-WebSocket-Accept: " + accept_key(heads.get("sec-websocket-key", "")).encode() + b"\r\n\r\n")
    try:
        while True:
            op, p = read_frame(f)
            if op == 8:     # the client closes: echo its close, then our FIN
                s.sendall(frame(8, p[:2], False))
                log("ws: client closed")
                s.shutdown(socket.SHUT_WR)
                return
            if op == 9:
                s.sendall(frame(10, p, False))
                continue
            if p.startswith(b"push "):
                for i in range(int(p[5:])):
                    s.sendall(frame(1, b"pushed %d" % i, False))
            if p == b"bye":
                s.sendall(frame(8, struct.pack(">H", 1000), False))
                try:
                    while read_frame(f)[0] != 8:
                        pass
                except EOFError:
                    pass
                log("ws: server closed")
                s.shutdown(socket.SHUT_WR)
                return
            s.sendall(frame(op, p, False))
    except (EOFError, OSError):
        log("ws: eof")


def client(host, port, scenario):
    out = {"scenario": scenario}
    s = socket.create_connection((host, port), 10)
    s.settimeout(10)
    f = s.makefile("rb")
    key = base64.b64encode(os.urandom(16)).decode()
    s.sendall(f"GET /ws HTTP/1.1\r\nHost: x\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"
              f"Sec-WebSocket-Key: {key}\r\nSec-WebSocket-Version: 13\r\n\r\n".encode())
    status = f.readline().decode().split(" ")
    out["status"] = int(status[1])
    heads = {}
    while True:
        h = f.readline().decode()
        if h in ("\r\n", ""):
            break
        k, _, v = h.partition(":")
        heads[k.strip().lower()] = v.strip()
    out["accept_ok"] = heads.get("sec-websocket-accept") == accept_key(key)
    out["upgrade"] = heads.get("upgrade")
    out["connection"] = heads.get("connection")
    if out["status"] != 101:
        print(json.dumps(out))
        return
    if scenario == "idle":
        t = time.monotonic()
        try:
            out["got"] = read_frame(f)[0]
        except (EOFError, OSError) as e:
            out["got"] = "eof" if isinstance(e, EOFError) else "err"
        out["idle_s"] = round(time.monotonic() - t, 2)
        print(json.dumps(out))
        return
    if scenario == "reset":     # one echo, then a reset: the upstream's side is cut
        s.sendall(frame(1, b"one", True))
        out["echo"] = read_frame(f)[1].decode()
        s.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
        s.close()
        print(json.dumps(out))
        return
    # messages both ways: small, over the stream buffer, over a window
    sizes = [5, 9000, 200000, 1]
    ok = []
    for n in sizes:
        m = os.urandom(n)
        s.sendall(frame(2, m, True))
        op, p = read_frame(f)
        ok.append(op == 2 and p == m)
    s.sendall(frame(1, b"push 3", True))
    pushed = [read_frame(f)[1].decode() for _ in range(3)]
    echo = read_frame(f)[1].decode()
    out["echoes_ok"] = ok
    out["pushed"] = pushed + [echo]
    if scenario == "client-close":
        s.sendall(frame(8, struct.pack(">H", 1000), True))
        op, p = read_frame(f)
        out["close"] = [op, struct.unpack(">H", p[:2])[0] if len(p) >= 2 else None]
    else:   # server-close
        s.sendall(frame(1, b"bye", True))
        op, p = read_frame(f)
        out["close"] = [op, struct.unpack(">H", p[:2])[0] if len(p) >= 2 else None]
        s.sendall(frame(8, p[:2], True))
    t = time.monotonic()
    try:
        rest = f.read()
        out["eof"] = rest == b""
    except OSError:
        out["eof"] = False
    out["eof_s"] = round(time.monotonic() - t, 2)
    print(json.dumps(out))


def many(host, port, n):
    """n tunnels opened at once, each left idle: (status, seconds to the
    head, seconds to the end) of each, as JSON."""
    t0 = time.monotonic()
    socks = []
    for _ in range(n):
        s = socket.create_connection((host, port), 10)
        key = base64.b64encode(os.urandom(16)).decode()
        s.sendall(f"GET /ws HTTP/1.1\r\nHost: x\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"
                  f"Sec-WebSocket-Key: {key}\r\nSec-WebSocket-Version: 13\r\n\r\n".encode())
        socks.append(s)
    out = [[0, None, None] for _ in socks]
    bufs = [b"" for _ in socks]
    import selectors
    sel = selectors.DefaultSelector()
    for i, s in enumerate(socks):
        s.setblocking(False)
        sel.register(s, selectors.EVENT_READ, i)
    while time.monotonic() - t0 < 20 and any(o[2] is None for o in out):
        for key, _ in sel.select(0.2):
            i = key.data
            try:
                b = socks[i].recv(65536)
            except OSError:
                b = b""
            now = round(time.monotonic() - t0, 2)
            if b and out[i][1] is None:
                bufs[i] += b
                if b"\r\n" in bufs[i]:
                    out[i][0] = int(bufs[i].split(b" ")[1])
                    out[i][1] = now
            if not b:
                out[i][2] = now
                sel.unregister(socks[i])
                socks[i].close()
    print(json.dumps(out))


if __name__ == "__main__":
    if sys.argv[3].startswith("many="):
        many(sys.argv[1], int(sys.argv[2]), int(sys.argv[3][5:]))
    else:
        client(sys.argv[1], int(sys.argv[2]), sys.argv[3])
