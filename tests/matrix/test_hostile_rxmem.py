"""Receive memory under attack (net/tcp/rxmem.c): what the stack keeps of
received frames must never take the driver's receive pool.

Out-of-order pinning: 48 connections from 48 addresses each leave a hole and
send 8 one-byte segments after it (384 frames the guest may keep, against a
pool of 256 buffers). Reassembly pinning: 3000 IPv4 and 3000 IPv6 datagrams
of which only the first fragment ever comes. While each attack lasts a
legitimate client fetches / over new connections and must succeed at least
99% of the time; afterwards every level returns to idle.

Without net/tcp/rxmem.c the out-of-order attack holds every receive buffer and
the appliance answers nothing until the connections go (see docs/testing.md).

Bulk windows: 14 connections upload through TCP echo at once, six of them
never reading the echo back (so the guest keeps all it may of theirs), and
they come first, taking both bulk windows. At most VIREO_RXMEM_BULK_MAX hold
one at any time, the rest run on TCP_WND, every upload comes back byte for
byte, lwIP's heap stays under the worst case written in net/port/lwipopts.h, and
the legitimate client keeps being served."""
import os
import re
import socket
import subprocess
import threading
import time

import pytest

from mxlib import HERE, INDEX, PYTHON, ROOT, Guest, delta, parse_prometheus, read_responses
from test_rx_tso import pattern, upload

pytestmark = pytest.mark.hostile

CONNS, SEGS, HOLD = 48, 8, 40


class Legit:
    """GET / over a new connection, again and again, until stopped.

    The client closes first (the request is keep-alive; the socket is closed
    after the response), so TIME_WAIT stays on the Linux side. With
    `Connection: close` the guest would hold TIME_WAIT for 2 MSL (120 s)
    and Linux, reusing a port within a minute, would get only ACKs to its
    SYN (lwIP answers a SYN in TIME_WAIT with an ACK and ignores the RST):
    10 s connect timeouts that have nothing to do with these attacks."""

    def __init__(self, guest):
        self.g = guest
        self.ok = 0
        self.failed = []
        self.stopping = threading.Event()
        self.t0 = time.monotonic()
        self.t = threading.Thread(target=self._run, daemon=True)

    def start(self):
        self.t.start()
        return self

    def stop(self):
        self.stopping.set()
        self.t.join(60)
        assert not self.t.is_alive()
        return self

    def rate(self):
        n = self.ok + len(self.failed)
        return self.ok / n if n else 0.0

    def when(self):
        return f"{time.monotonic() - self.t0:.0f} s"

    def _run(self):
        while not self.stopping.is_set():
            try:
                with self.g.connect(timeout=10) as c:
                    c.sendall(b"GET / HTTP/1.1\r\nHost: x\r\n\r\n")
                    (r,), _ = read_responses(c, 1)
                status, body = r[0], r[2]
                if status == 200 and body == INDEX:
                    self.ok += 1
                else:
                    self.failed.append(f"{self.when()}: status {status}, {len(body)} bytes")
            except Exception as e:  # noqa: BLE001
                self.failed.append(f"{self.when()}: {e!r}")
            time.sleep(0.1)


def attack(g, *args):
    return g.ns.popen(PYTHON, os.path.join(HERE, "rxmem_attack.py"), args[0], g.ns.tap, g.ip, *map(str, args[1:]),
                      stdout=subprocess.PIPE, stderr=subprocess.PIPE)


def finish(p, timeout):
    out, err = p.communicate(timeout=timeout)
    assert p.returncode == 0, out.decode()[-2000:] + err.decode()[-3000:]
    return out.decode()


def client_closed_metrics(g):
    """/metrics as Legit fetches /: the client closes first (see Legit)."""
    with g.connect(timeout=30) as c:
        c.sendall(b"GET /metrics HTTP/1.1\r\nHost: x\r\n\r\n")
        (r,), _ = read_responses(c, 1)
    assert r[0] == 200, r[0]
    return parse_prometheus(r[2].decode())


def try_metrics(g):
    try:
        return client_closed_metrics(g)
    except Exception as e:  # noqa: BLE001
        return {"error": repr(e)}


def rxmem_view(m):
    keys = ("vireo_rxmem_held", "vireo_rxmem_held_watermark", "vireo_rxmem_held_peak", "vireo_vnet_rx_buffers_posted",
            "vireo_vnet_rx_buffers_held", "vireo_rxmem_copied_frames_total", "vireo_rxmem_nomem_drops_total",
            "vireo_rxmem_ooseq_pbufs", "vireo_rxmem_ooseq_bytes", "vireo_rxmem_ooseq_evictions_total",
            "vireo_rxmem_ooseq_evicted_pbufs_total", "vireo_lwip_mem_used_bytes", "error")
    return {k: m[k] for k in keys if k in m}


def test_ooseq_pinning():
    with Guest() as g:
        g.serves()
        base = g.baseline()
        total = base["vireo_vnet_rx_buffers"]
        legit = Legit(g).start()
        time.sleep(2)
        t0 = time.monotonic()
        p = attack(g, "ooseq", CONNS, SEGS, HOLD)
        samples = []
        while p.poll() is None and time.monotonic() - t0 < HOLD + 240:
            time.sleep(5)
            samples.append(try_metrics(g))
        out = finish(p, 60)
        time.sleep(2)
        legit.stop()
        print(out)
        print(f"legitimate: {legit.ok} ok, {len(legit.failed)} failed ({legit.rate():.1%})", legit.failed[:5])
        for m in samples:
            print("during:", rxmem_view(m))
        assert f"established {CONNS}" in out, out
        assert legit.rate() >= 0.99, legit.failed[:10]
        assert all("error" not in m for m in samples)

        m = g.metrics()
        print("after:", rxmem_view(m))
        mark = m["vireo_rxmem_held_watermark"]
        assert mark == total // 4
        # the stack never held more than the watermark (plus the frame in
        # hand), so the ring kept at least the rest
        assert m["vireo_rxmem_held_peak"] <= mark + 1
        for s in samples:
            assert s["vireo_rxmem_held"] <= mark
            assert s["vireo_rxmem_ooseq_pbufs"] <= 256
        # 384 kept segments > the 256-pbuf cap: frames were copied and the
        # oldest queues evicted
        assert delta(m, base, "vireo_rxmem_copied_frames_total") > 0
        assert delta(m, base, "vireo_rxmem_ooseq_evictions_total") > 0
        assert delta(m, base, "vireo_rxmem_ooseq_evicted_pbufs_total") >= CONNS * SEGS - 256
        assert delta(m, base, "vireo_rxmem_nomem_drops_total") == 0

        m = g.wait_idle(base, timeout=120)
        assert m["vireo_rxmem_ooseq_pbufs"] == 0
        g.serves()
        g.log_clean()


def test_reassembly_pinning():
    trains, seconds = 3000, 30
    with Guest() as g:
        g.serves()
        base = g.baseline()
        legit = Legit(g).start()
        time.sleep(2)
        p = attack(g, "frags", trains, seconds)
        samples = []
        while p.poll() is None:
            time.sleep(5)
            samples.append(try_metrics(g))
        out = finish(p, 300)
        time.sleep(2)
        legit.stop()
        m = g.metrics()
        print(out)
        print(f"legitimate: {legit.ok} ok, {len(legit.failed)} failed ({legit.rate():.1%})", legit.failed[:5])
        for s in samples:
            print("during:", rxmem_view(s))
        assert legit.rate() >= 0.99, legit.failed[:10]
        assert all("error" not in s for s in samples)
        got4 = delta(m, base, 'vireo_lwip_recv_total{proto="ip_frag"}')
        got6 = delta(m, base, 'vireo_lwip_recv_total{proto="ip6_frag"}')
        print(f"fragments received: {got4} IPv4, {got6} IPv6")
        assert got4 > trains // 2 and got6 > trains // 2
        # lwIP's global cap: 16 pbufs per IP version in reassembly
        for s in samples:
            assert s["vireo_rxmem_held"] <= s["vireo_rxmem_held_watermark"]
            assert s["vireo_vnet_rx_buffers_held"] <= 2 * 16 + 8
        # both reassembly timeouts are 15 s
        g.wait_idle(base, timeout=90)
        g.serves()
        g.log_clean()


def lwipopts_define(name):
    with open(os.path.join(ROOT, "net", "port", "lwipopts.h")) as f:
        text = f.read()
    return text, re.search(rf"^#define {name}\s+(\S+)", text, re.M).group(1)


def test_bulk_windows_bounded():
    text, bulk_max = lwipopts_define("VIREO_RXMEM_BULK_MAX")
    bulk_max = int(bulk_max)
    heap_bound = int(re.search(r"^ \*\s+total\s+(\d+)$", text, re.M).group(1))
    hogs_n, uploaders_n, mib = 6, 8, 4
    data = pattern(mib << 20)
    with Guest(cmdline="echo=tcp") as g:
        g.serves()
        base = g.baseline()
        legit = Legit(g).start()
        hogs = []
        for _ in range(hogs_n):
            h = g.socket()
            h.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)  # stalls the echo soon
            h.settimeout(10)
            h.connect((g.ip, 7))
            h.setblocking(False)
            hogs.append(h)
        pushed = [0] * hogs_n

        def push():
            for i, h in enumerate(hogs):
                try:
                    while True:
                        pushed[i] += h.send(data[:65536])
                except (BlockingIOError, InterruptedError):
                    pass

        push()
        time.sleep(1)
        push()
        results = [None] * uploaders_n

        def up(i):
            try:
                results[i] = upload(g, data, timeout=240) == data
            except Exception as e:  # noqa: BLE001
                results[i] = repr(e)

        ts = [threading.Thread(target=up, args=(i,), daemon=True) for i in range(uploaders_n)]
        for t in ts:
            t.start()
        samples = []
        t0 = time.monotonic()
        while any(t.is_alive() for t in ts) and time.monotonic() - t0 < 300:
            push()
            time.sleep(2)
            samples.append(try_metrics(g))
        for t in ts:
            t.join(10)
        mid = g.metrics()
        for h in hogs:
            h.close()
        time.sleep(2)
        legit.stop()
        keys = ("vireo_rxmem_bulk_windows", "vireo_lwip_mem_used_bytes", "vireo_lwip_mem_max_bytes", "error")
        for m in samples:
            print("during:", {k: m[k] for k in keys if k in m})
        print(f"hogs pushed {pushed} bytes; uploads {results}")
        print(f"legitimate: {legit.ok} ok, {len(legit.failed)} failed ({legit.rate():.1%})", legit.failed[:5])
        assert results == [True] * uploaders_n, results
        assert all(p > 0 for p in pushed)
        assert legit.rate() >= 0.99, legit.failed[:10]
        assert all("error" not in m for m in samples)
        for m in samples:
            assert m["vireo_rxmem_bulk_windows"] <= bulk_max
        assert mid["vireo_rxmem_bulk_windows_peak"] == bulk_max
        # the hogs came first and held both grants the whole time
        assert delta(mid, base, "vireo_rxmem_bulk_windows_granted_total") == bulk_max
        assert delta(mid, base, "vireo_rxmem_bulk_windows_refused_total") >= uploaders_n
        assert mid["vireo_lwip_mem_max_bytes"] <= heap_bound, (mid["vireo_lwip_mem_max_bytes"], heap_bound)
        assert mid["vireo_lwip_mem_errors_total"] == base["vireo_lwip_mem_errors_total"]

        m = g.wait_idle(base, timeout=120)
        assert m["vireo_rxmem_bulk_windows"] == 0
        # a grant is free again: a new upload gets one, and comes back whole
        assert upload(g, data) == data
        m = g.metrics()
        assert delta(m, base, "vireo_rxmem_bulk_windows_granted_total") == bulk_max + 1
        g.serves()
        g.log_clean()
