#!/usr/bin/env python3
"""A raw DNS client for apps/dns/tests/test_dns.py, run inside the test's network
namespace (`ip netns exec NS python3 dns_client.py MODE ...`); prints one
JSON object. Every loop is bounded (counts and socket timeouts).

  malformed SERVER PORT      bad queries over UDP, each with what came back
  burst SERVER PORT SRC N    N queries at once from source address SRC:
                             answers, truncated "slips" and silence counted
  pingpong SERVER PORT N      N queries one at a time (1 s timeout each):
                             queries/s and latency percentiles (make bench-dns)
  tcp SERVER PORT [unbounded]  several queries on one connection, pipelined
                             and split byte by byte; a bad length prefix;
                             120 queries on one connection (the server's
                             bound is 100; "unbounded" leaves this out)
"""
import json
import socket
import struct
import sys
import time


def qname(name):
    out = b""
    for lab in name.split("."):
        if lab:
            out += bytes([len(lab)]) + lab.encode()
    return out + b"\0"


def query(name, qtype=1, qid=0x4242, flags=0x0100, qd=1, an=0, ns=0, ar=0, tail=b""):
    return struct.pack(">HHHHHH", qid, flags, qd, an, ns, ar) + qname(name) + struct.pack(">HH", qtype, 1) + tail


def header(resp):
    if len(resp) < 12:
        return {"len": len(resp)}
    qid, flags, qd, an, ns, ar = struct.unpack(">HHHHHH", resp[:12])
    return {"len": len(resp), "id": qid, "qr": flags >> 15, "aa": (flags >> 10) & 1, "tc": (flags >> 9) & 1,
            "rd": (flags >> 8) & 1, "ra": (flags >> 7) & 1, "rcode": flags & 15, "qd": qd, "an": an, "ns": ns,
            "ar": ar}


def udp_ask(server, port, data, timeout=2.0, src=None):
    s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    if src:
        s.bind((src, 0))
    s.settimeout(timeout)
    s.sendto(data, (server, port))
    try:
        return s.recv(4096)
    except socket.timeout:
        return None
    finally:
        s.close()


def malformed(server, port):
    good = query("vireo.test")
    cases = {
        "short": good[:7],
        "empty": b"",
        "response": struct.pack(">H", 0x4242) + bytes([0x81, 0]) + good[4:],
        "qdcount0": query("vireo.test", qd=0),
        "qdcount2": query("vireo.test", qd=2),
        "ancount1": query("vireo.test", an=1),
        "truncated_name": good[:18],
        "pointer_in_name": good[:12] + b"\xc0\x0c" + struct.pack(">HH", 1, 1),
        "label_over_63": good[:12] + b"\x40" + b"a" * 64 + b"\0" + struct.pack(">HH", 1, 1),
        "name_over_255": good[:12] + (b"\x3f" + b"a" * 63) * 5 + b"\0" + struct.pack(">HH", 1, 1),
        "trailing_byte": good + b"\0",
        "opt_missing": query("vireo.test", ar=1),
        "opt_overrun": query("vireo.test", ar=1, tail=b"\0\0\x29\x04\xd0\0\0\0\0\0\x10"),
        "opcode_notify": good[:2] + bytes([0x20 | 0x01, 0]) + good[4:],
        "opcode_update": good[:2] + bytes([0x28, 0]) + good[4:],
        "edns_version_1": query("vireo.test", ar=1, tail=b"\0\0\x29\x04\xd0\0\x01\0\0\0\0"),
        "garbage": bytes(range(256)) * 2,
    }
    out = {}
    for name, data in cases.items():
        r = udp_ask(server, port, data, timeout=1.0)
        out[name] = header(r) if r is not None else None
    r = udp_ask(server, port, good)
    out["after"] = header(r) if r is not None else None
    return out


def burst(server, port, src, n):
    """n queries sent back to back from one socket, then every reply read
    until 2 s of quiet."""
    s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    s.bind((src, 0))
    s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 1 << 20)
    t0 = time.monotonic()
    for i in range(n):
        s.sendto(query("host.vireo.test", qid=i), (server, port))
    sent_s = time.monotonic() - t0
    full = slip = 0
    s.settimeout(2.0)
    for _ in range(n):
        try:
            h = header(s.recv(4096))
        except socket.timeout:
            break
        if h.get("tc") and h.get("an") == 0:
            slip += 1
        elif h.get("an"):
            full += 1
    s.close()
    return {"sent": n, "answered": full, "slipped": slip, "silent": n - full - slip, "send_s": round(sent_s, 3)}


def pingpong(server, port, n):
    names = ["vireo.test", "www.vireo.test", "nope.vireo.test", "host.vireo.test"]
    msgs = [query(nm, 1, qid=i) for i, nm in enumerate(names)]
    s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    s.connect((server, port))
    s.settimeout(1.0)
    lat = []
    lost = 0
    t0 = time.perf_counter()
    for i in range(n):
        t = time.perf_counter()
        s.send(msgs[i % len(msgs)])
        try:
            s.recv(4096)
        except socket.timeout:
            lost += 1
            continue
        lat.append((time.perf_counter() - t) * 1e3)
    wall = time.perf_counter() - t0
    s.close()
    lat.sort()
    pick = lambda p: round(lat[min(len(lat) - 1, int(len(lat) * p / 100))], 3) if lat else None  # noqa: E731
    return {"queries": n, "lost": lost, "qps": round(len(lat) / wall), "p50_ms": pick(50), "p99_ms": pick(99),
            "max_ms": round(lat[-1], 3) if lat else None}


def recv_msg(s):
    def exact(k):
        b = b""
        while len(b) < k:
            c = s.recv(k - len(b))
            if not c:
                raise EOFError(f"closed after {len(b)} of {k} bytes")
            b += c
        return b
    (n,) = struct.unpack(">H", exact(2))
    return exact(n)


def tcp(server, port, bounded=True):
    out = {}
    names = ["vireo.test", "www.vireo.test", "nope.vireo.test", "big.vireo.test"]
    types = [6, 1, 1, 16]
    msgs = [query(n, t, qid=100 + i) for i, (n, t) in enumerate(zip(names, types))]
    # Pipelined: all four in one write, answers in order.
    s = socket.create_connection((server, port), timeout=10)
    s.sendall(b"".join(struct.pack(">H", len(m)) + m for m in msgs))
    out["pipelined"] = [header(recv_msg(s)) for _ in msgs]
    # Then one query split byte by byte on the same connection.
    m = struct.pack(">H", len(msgs[0])) + msgs[0]
    for b in m:
        s.send(bytes([b]))
        time.sleep(0.005)
    out["bytewise"] = header(recv_msg(s))
    # Eight 3 KB answers asked at once: more than the runtime lets one
    # connection have unacknowledged (4 KiB), so the server waits for room.
    big = query("big.vireo.test", 16, qid=7)
    s.sendall((struct.pack(">H", len(big)) + big) * 8)
    out["big_pipelined"] = [header(recv_msg(s)) for _ in range(8)]
    s.close()
    # A length prefix over the bound: the connection goes, nothing answered.
    s = socket.create_connection((server, port), timeout=10)
    s.sendall(b"\xff\xff" + b"\0" * 64)
    try:
        data = s.recv(100)
        out["bad_length"] = "closed" if data == b"" else f"data {len(data)}"
    except ConnectionResetError:
        out["bad_length"] = "reset"
    except socket.timeout:
        out["bad_length"] = "open"
    s.close()
    if not bounded:
        return out
    # The per-connection bound: 100 answers, then the server closes.
    s = socket.create_connection((server, port), timeout=10)
    q = query("vireo.test", 1)
    s.sendall((struct.pack(">H", len(q)) + q) * 120)
    got = 0
    try:
        for _ in range(120):
            recv_msg(s)
            got += 1
    except (EOFError, ConnectionResetError):
        pass
    except socket.timeout:
        got = -got - 1000
    out["bounded"] = got
    s.close()
    return out


def main(argv):
    mode = argv[1]
    if mode == "malformed":
        res = malformed(argv[2], int(argv[3]))
    elif mode == "burst":
        res = burst(argv[2], int(argv[3]), argv[4], int(argv[5]))
    elif mode == "pingpong":
        res = pingpong(argv[2], int(argv[3]), int(argv[4]))
    elif mode == "tcp":
        res = tcp(argv[2], int(argv[3]), bounded=len(argv) < 5 or argv[4] != "unbounded")
    else:
        sys.exit(f"unknown mode {mode}")
    print(json.dumps(res))


if __name__ == "__main__":
    main(sys.argv)
