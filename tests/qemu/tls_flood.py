#!/usr/bin/env python3
"""Run inside the test's network namespace by test_tls.py: a TLS handshake
flood and garbage or truncated ClientHellos against the guest, while a
legitimate client (its own address) keeps using a connection it opened
before and opens new ones. Prints one JSON object. Bounded: a fixed number
of connections, every socket with a timeout.

    tls_flood.py GUEST PORT LEGIT FLOOD_ADDR[,FLOOD_ADDR...] GARBAGE_ADDR
"""
import json
import os
import socket
import ssl
import sys
import threading
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
from httpc import client_hello, connect_from, read_responses  # noqa: E402

guest, port, legit, floods, garbage = sys.argv[1], int(sys.argv[2]), sys.argv[3], sys.argv[4].split(","), sys.argv[5]
HOLD_PER_SOURCE = 24
ctx = ssl.create_default_context()
ctx.check_hostname, ctx.verify_mode = False, ssl.CERT_NONE
out = {"legit_ok": 0, "legit_errors": [], "held": 0, "refused": 0, "garbage_sent": 0, "truncated_sent": 0}


def tcp(src, timeout=20):
    return connect_from(src, guest, port, timeout)


def legit_get(s):
    s.sendall(b"GET /index.html HTTP/1.1\r\nHost: localhost\r\n\r\n")
    (resp,), _ = read_responses(s, 1)
    assert resp[0] == 200, resp[0]


def legit_new():
    with ctx.wrap_socket(tcp(legit, 60), server_hostname="localhost") as s:
        legit_get(s)


hello = client_hello(ctx)
established = ctx.wrap_socket(tcp(legit, 60), server_hostname="localhost")
legit_get(established)

# Slow handshakes: a record header and a few bytes of a ClientHello, then
# nothing, from every flood address, held open.
holders = []
for src in floods:
    for _ in range(HOLD_PER_SOURCE):
        try:
            s = tcp(src, 5)
            s.sendall(hello[:20])
            holders.append(s)
        except OSError:
            out["refused"] += 1
time.sleep(1)
# A held socket the server refused is reset by now.
alive = []
for s in holders:
    s.setblocking(False)
    try:
        data = s.recv(1)
        if data == b"":
            raise ConnectionResetError
    except BlockingIOError:
        alive.append(s)
        continue
    except OSError:
        pass
    out["refused"] += 1
    s.close()
out["held"] = len(alive)


def garbage_one(kind):
    try:
        s = tcp(garbage, 20)
        if kind == "garbage":
            s.sendall(os.urandom(300))
            out["garbage_sent"] += 1
        elif kind == "truncated":
            s.sendall(hello[: len(hello) // 2])
            s.shutdown(socket.SHUT_WR)
            out["truncated_sent"] += 1
        else:  # a ClientHello with its body bytes scrambled
            bad = bytearray(hello)
            for i in range(9, len(bad), 7):
                bad[i] ^= 0x5A
            s.sendall(bytes(bad))
            out["garbage_sent"] += 1
        try:
            while s.recv(4096):
                pass
        except OSError:
            pass
        s.close()
    except OSError:
        pass


threads = [threading.Thread(target=garbage_one, args=(k,)) for k in ("garbage", "truncated", "scrambled") * 10]
for t in threads:
    t.start()
# The legitimate client while the flood holds its slots and garbage arrives.
for _ in range(10):
    try:
        legit_get(established)
        out["legit_ok"] += 1
    except Exception as e:  # noqa: BLE001
        out["legit_errors"].append("established: " + repr(e))
for _ in range(5):
    try:
        legit_new()
        out["legit_ok"] += 1
    except Exception as e:  # noqa: BLE001
        out["legit_errors"].append("new: " + repr(e))
for t in threads:
    t.join(60)
for s in alive:
    s.close()
established.close()
print(json.dumps(out))
