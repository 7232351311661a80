#!/usr/bin/env python3
"""A raw DNS client for apps/dns/tests/test_dns.py, run inside the test's network
namespace (`ip netns exec NS python3 dns_client.py MODE ...`); prints one
JSON object. Every loop is bounded (counts and socket timeouts).

  malformed SERVER PORT      bad queries over UDP, each with what came back
  burst SERVER PORT SRC N    N queries at once from source address SRC:
                             answers, truncated "slips" and silence counted
  multiburst SERVER PORT SRC,SRC... N  N queries at once from each source:
                             answers, slips and silence, in all
  cookieburst SERVER PORT SRC N  a query with a client cookie, then N at
                             once carrying the server cookie it got back
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


def multiburst(server, port, srcs, n):
    """n queries from each source address, all sent before any is read."""
    socks = []
    for src in srcs:
        s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
        s.bind((src, 0))
        s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 1 << 20)
        socks.append(s)
    for i in range(n):
        for s in socks:
            s.sendto(query("host.vireo.test", qid=i), (server, port))
    full = slip = 0
    for s in socks:
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
    total = n * len(srcs)
    return {"sent": total, "answered": full, "slipped": slip, "silent": total - full - slip}


def opt_cookie(cookie):
    """An OPT record (EDNS 1232) carrying a COOKIE option."""
    return b"\0" + struct.pack(">HHIH", 41, 1232, 0, 4 + len(cookie)) + struct.pack(">HH", 10, len(cookie)) + cookie


def skip_name(m, o):
    while True:
        if m[o] & 0xC0 == 0xC0:
            return o + 2
        if m[o] == 0:
            return o + 1
        o += m[o] + 1


def cookie_of(resp):
    """The COOKIE option's data in a response's OPT record, or None."""
    qd, an, ns, ar = struct.unpack(">HHHH", resp[4:12])
    o = 12
    for _ in range(qd):
        o = skip_name(resp, o) + 4
    for _ in range(an + ns + ar):
        o = skip_name(resp, o)
        rtype, _, _, rdlen = struct.unpack(">HHIH", resp[o:o + 10])
        o += 10
        if rtype == 41:
            opts = resp[o:o + rdlen]
            while len(opts) >= 4:
                code, olen = struct.unpack(">HH", opts[:4])
                if code == 10:
                    return opts[4:4 + olen]
                opts = opts[4 + olen:]
        o += rdlen
    return None


def cookieburst(server, port, src, n):
    s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    s.bind((src, 0))
    s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 1 << 20)
    s.settimeout(2.0)
    s.sendto(query("host.vireo.test", qid=1, ar=1, tail=opt_cookie(b"clientck")), (server, port))
    first = s.recv(4096)
    cookie = cookie_of(first)
    out = {"first": header(first), "cookie_len": len(cookie) if cookie else 0, "answered": 0, "slipped": 0}
    if not cookie:
        return out
    for i in range(n):
        s.sendto(query("host.vireo.test", qid=i, ar=1, tail=opt_cookie(cookie)), (server, port))
    for _ in range(n):
        try:
            h = header(s.recv(4096))
        except socket.timeout:
            break
        if h.get("tc") and h.get("an") == 0:
            out["slipped"] += 1
        elif h.get("an"):
            out["answered"] += 1
    out["silent"] = n - out["answered"] - out["slipped"]
    s.close()
    return out


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
    elif mode == "multiburst":
        res = multiburst(argv[2], int(argv[3]), argv[4].split(","), int(argv[5]))
    elif mode == "cookieburst":
        res = cookieburst(argv[2], int(argv[3]), argv[4], int(argv[5]))
    elif mode == "pingpong":
        res = pingpong(argv[2], int(argv[3]), int(argv[4]))
    elif mode == "tcp":
        res = tcp(argv[2], int(argv[3]), bounded=len(argv) < 5 or argv[4] != "unbounded")
    else:
        sys.exit(f"unknown mode {mode}")
    print(json.dumps(res))


if __name__ == "__main__":
    main(sys.argv)
