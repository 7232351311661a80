#!/usr/bin/env python3
"""UDP clients for the echo service on port 7 (the paced stream, which
Python cannot receive fast enough, is udpstream.c), run inside the benchmark's
network namespace (ip netns exec). Both are bounded in count and time, and
print one JSON object.

  udp.py pingpong IP N      N sequential round trips (64-byte datagrams,
                            1 s timeout each): round-trip percentiles
  udp.py flood IP N SECS    N datagrams sent back to back (at most SECS
                            seconds), echoes counted for 2 s after the last
"""
import json
import socket
import sys
import threading
import time

PORT = 7


def pct(sorted_vals, p):
    if not sorted_vals:
        return None
    i = min(len(sorted_vals) - 1, max(0, round(p / 100 * len(sorted_vals)) - 1))
    return sorted_vals[i]


def pingpong(ip, n):
    s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    s.settimeout(1.0)
    s.connect((ip, PORT))
    rtts, lost = [], 0
    deadline = time.monotonic() + 120
    for i in range(n):
        if time.monotonic() > deadline:
            break
        msg = i.to_bytes(4, "big") * 16
        t0 = time.perf_counter()
        s.send(msg)
        try:
            while True:
                got = s.recv(2048)
                if got == msg:
                    rtts.append((time.perf_counter() - t0) * 1e6)
                    break
        except socket.timeout:
            lost += 1
    rtts.sort()
    return {"sent": len(rtts) + lost, "answered": len(rtts), "lost": lost,
            "rtt_p50_us": pct(rtts, 50), "rtt_p90_us": pct(rtts, 90), "rtt_p99_us": pct(rtts, 99),
            "rtt_min_us": rtts[0] if rtts else None, "rtt_max_us": rtts[-1] if rtts else None}


def flood(ip, n, secs):
    s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    s.connect((ip, PORT))
    s.settimeout(0.2)
    got = [0]
    stop = threading.Event()

    def rx():
        while not stop.is_set():
            try:
                s.recv(2048)
                got[0] += 1
            except socket.timeout:
                pass
            except OSError:
                pass

    t = threading.Thread(target=rx, daemon=True)
    t.start()
    msg = b"x" * 64
    sent = 0
    t0 = time.monotonic()
    end = t0 + secs
    while sent < n and time.monotonic() < end:
        try:
            s.send(msg)
            sent += 1
        except OSError:		# ENOBUFS from a full tap queue: that datagram is lost
            pass
    dur = time.monotonic() - t0
    time.sleep(2)
    stop.set()
    t.join(timeout=2)
    return {"sent": sent, "echoed": got[0], "send_seconds": round(dur, 3),
            "send_rate_pps": round(sent / dur) if dur > 0 else None}


def main():
    what, ip = sys.argv[1], sys.argv[2]
    if what == "pingpong":
        out = pingpong(ip, int(sys.argv[3]))
    elif what == "flood":
        out = flood(ip, int(sys.argv[3]), float(sys.argv[4]))
    else:
        sys.exit(f"udp.py: unknown command {what}")
    print(json.dumps(out))


if __name__ == "__main__":
    main()
