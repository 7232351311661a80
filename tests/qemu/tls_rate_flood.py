#!/usr/bin/env python3
"""Run inside the test's network namespace by test_tls.py: a TLS handshake
flood from one /24 (FLOOD_ADDRS, one replaying client per address: one
ClientHello recorded once and sent again on every connection, no crypto of
its own) for SECONDS, while a legitimate client on LEGIT (another prefix)
alternates plain-HTTP and HTTPS requests, each on a new connection. Prints
one JSON object. Bounded: a fixed number of threads for a fixed time, every
socket with a timeout.

    tls_rate_flood.py GUEST LEGIT FLOOD_ADDR[,FLOOD_ADDR...] SECONDS
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

guest, legit, floods, seconds = sys.argv[1], sys.argv[2], sys.argv[3].split(","), float(sys.argv[4])
ctx = ssl.create_default_context()
ctx.check_hostname, ctx.verify_mode = False, ssl.CERT_NONE
lock = threading.Lock()
out = {"flood_answered": 0, "flood_refused": 0, "flood_other": 0,
       "plain_ok": 0, "plain_fail": 0, "https_ok": 0, "https_fail": 0, "errors": [],
       "plain_ms": [], "https_ms": []}


HELLO = client_hello(ctx)


def tcp(src, port, timeout):
    return connect_from(src, guest, port, timeout)


def flood(src, stop):
    """Connect, replay the ClientHello, wait for the server's first flight
    (the server did its ECDHE and signature) or the reset, close."""
    while time.monotonic() < stop:
        kind = "flood_other"
        try:
            s = tcp(src, 443, 10)
            try:
                s.sendall(HELLO)
                kind = "flood_answered" if s.recv(4096) else "flood_refused"
            except (ConnectionResetError, BrokenPipeError):
                kind = "flood_refused"
            finally:
                s.close()
        except OSError:
            pass
        with lock:
            out[kind] += 1


def plain():
    with tcp(legit, 80, 10) as s:
        s.sendall(b"GET /index.html HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
        (resp,), _ = read_responses(s, 1)
        assert resp[0] == 200, resp[0]


def https():
    with ctx.wrap_socket(tcp(legit, 443, 10), server_hostname="localhost") as s:
        s.sendall(b"GET /index.html HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
        (resp,), _ = read_responses(s, 1)
        assert resp[0] == 200, resp[0]


stop = time.monotonic() + seconds
threads = [threading.Thread(target=flood, args=(a, stop)) for a in floods]
for t in threads:
    t.start()
time.sleep(0.5)
# Plain HTTP back to back; a new HTTPS connection (a full handshake) every
# HTTPS_EVERY seconds, within its own prefix's rate.
HTTPS_EVERY = 0.5
next_https = 0
while time.monotonic() < stop:
    now = time.monotonic()
    name, fn = ("https", https) if now >= next_https else ("plain", plain)
    if name == "https":
        next_https = now + HTTPS_EVERY
    try:
        fn()
        out[name + "_ok"] += 1
        out[name + "_ms"].append(round((time.monotonic() - now) * 1000, 1))
    except Exception as e:  # noqa: BLE001
        out[name + "_fail"] += 1
        out["errors"].append(f"{name}: {e!r}")
    time.sleep(0.02)
for t in threads:
    t.join(30)
print(json.dumps(out))
