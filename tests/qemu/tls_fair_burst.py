#!/usr/bin/env python3
"""Run inside the test's network namespace by test_tls.py's flood test: a
burst of replayed ClientHellos from one /24 (FLOOD_ADDRS, N connections at
once, each waiting for the server's first flight), then, once their steps
queue behind the CPU share, from LEGIT (another prefix) the same replayed
ClientHello (its first flight: the ECDHE and signature step) and then one
full HTTPS request. Prints one JSON object: the times (ms from the burst)
each flood connection got its answer, the legitimate hello was sent and
answered, and the request completed, so the test can count the flood
steps served meanwhile. Bounded: N threads, every socket with a timeout.

    tls_fair_burst.py GUEST LEGIT FLOOD_ADDR[,FLOOD_ADDR...] N
"""
import json
import os
import ssl
import sys
import threading
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
from httpc import client_hello, connect_from, read_responses  # noqa: E402

guest, legit, floods, n = sys.argv[1], sys.argv[2], sys.argv[3].split(","), int(sys.argv[4])
ctx = ssl.create_default_context()
ctx.check_hostname, ctx.verify_mode = False, ssl.CERT_NONE
HELLO = client_hello(ctx)
lock = threading.Lock()
out = {"flood_ms": [], "flood_refused": 0, "hello_sent_ms": None, "hello_ms": None, "legit_ms": None,
       "errors": []}
socks = []
for i in range(n):
    s = connect_from(floods[i % len(floods)], guest, 443, 30)
    socks.append(s)
t0 = time.monotonic()


def flood(s):
    try:
        s.sendall(HELLO)
        got = s.recv(4096)
        with lock:
            if got:
                out["flood_ms"].append(round((time.monotonic() - t0) * 1000, 1))
            else:
                out["flood_refused"] += 1
    except OSError as e:
        with lock:
            out["errors"].append(f"flood: {e!r}")
    finally:
        s.close()


threads = [threading.Thread(target=flood, args=(s,)) for s in socks]
for t in threads:
    t.start()
time.sleep(0.03)  # the flood's steps are queued (the first one runs)


def ms():
    return round((time.monotonic() - t0) * 1000, 1)


try:
    with connect_from(legit, guest, 443, 30) as s:
        out["hello_sent_ms"] = ms()
        s.sendall(HELLO)
        if s.recv(4096):
            out["hello_ms"] = ms()
except OSError as e:
    out["errors"].append(f"hello: {e!r}")
try:
    with ctx.wrap_socket(connect_from(legit, guest, 443, 30), server_hostname="localhost") as s:
        s.sendall(b"GET /index.html HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
        (resp,), _ = read_responses(s, 1)
        assert resp[0] == 200, resp[0]
        out["legit_ms"] = ms()
except Exception as e:  # noqa: BLE001
    out["errors"].append(f"legit: {e!r}")
for t in threads:
    t.join(40)
out["flood_ms"].sort()
print(json.dumps(out))
