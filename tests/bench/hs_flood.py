#!/usr/bin/env python3
"""Run inside a benchmark's network namespace by tests/bench/attacks.py
(attack hs-flood): a TLS handshake flood from the addresses FLOOD_ADDRS
(one /24 that attacks.py put on the tap), one replaying client per address:
one ClientHello recorded once from Python's ssl module (TLS 1.3, an X25519
key share, which vireo and nginx both accept) and sent again on every new
connection, so the flood does no crypto of its own while the server does an
ECDHE and a signature for each. A client waits for the server's first
flight (or a reset, or TIMEOUT) and closes: no handshake is ever finished.

Prints "start" when the flood begins, then one line "hs_flood {JSON}":
  attempts   connections tried
  answered   the server sent its ServerHello flight (it did the crypto)
  hrr        the server asked for another key share instead (cheap; counted
             apart, not as a handshake)
  refused    reset or closed before any byte (a rate limit on accept)
  other      connect failures and timeouts
  seconds    how long it ran
Bounded: len(FLOOD_ADDRS) threads for SECONDS, every socket with a timeout.

    hs_flood.py GUEST FLOOD_ADDR[,FLOOD_ADDR...] SECONDS [PORT]
"""
import json
import os
import socket
import ssl
import sys
import threading
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(os.path.dirname(HERE), "qemu"))
from httpc import client_hello, connect_from  # noqa: E402

TIMEOUT = 10
# RFC 8446 4.1.3: the ServerHello.random of a HelloRetryRequest
HRR_RANDOM = bytes.fromhex("cf21ad74e59a6111be1d8c021e65b891c2a211167abb8c5e079e09e2c8a8339c")


def main():
    guest, floods, seconds = sys.argv[1], sys.argv[2].split(","), float(sys.argv[3])
    port = int(sys.argv[4]) if len(sys.argv) > 4 else 443
    ctx = ssl.create_default_context()
    ctx.check_hostname, ctx.verify_mode = False, ssl.CERT_NONE
    ctx.minimum_version = ssl.TLSVersion.TLSv1_3
    hello = client_hello(ctx)
    lock = threading.Lock()
    out = {"attempts": 0, "answered": 0, "hrr": 0, "refused": 0, "other": 0, "addresses": len(floods)}

    def flood(src, stop):
        while time.monotonic() < stop:
            kind = "other"
            try:
                s = connect_from(src, guest, port, TIMEOUT)
                try:
                    s.sendall(hello)
                    first = s.recv(4096)
                    if not first:
                        kind = "refused"
                    elif first[:1] == b"\x16" and first[11:43] == HRR_RANDOM:
                        kind = "hrr"
                    elif first[:1] == b"\x16":
                        kind = "answered"
                except (ConnectionResetError, BrokenPipeError):
                    kind = "refused"
                finally:
                    s.close()
            except OSError:
                pass
            with lock:
                out["attempts"] += 1
                out[kind] += 1

    t0 = time.monotonic()
    stop = t0 + seconds
    threads = [threading.Thread(target=flood, args=(a, stop), daemon=True) for a in floods]
    print("start", flush=True)
    for t in threads:
        t.start()
    for t in threads:
        t.join(seconds + TIMEOUT + 30)
    out["seconds"] = round(time.monotonic() - t0, 2)
    print("hs_flood " + json.dumps(out), flush=True)


if __name__ == "__main__":
    main()
