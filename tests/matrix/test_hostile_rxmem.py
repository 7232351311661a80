"""Receive memory under attack (net/rxmem.c): what the stack keeps of
received frames must never take the driver's receive pool.

Out-of-order pinning: 48 connections from 48 addresses each leave a hole and
send 8 one-byte segments after it (384 frames the guest may keep, against a
pool of 256 buffers). Reassembly pinning: 3000 IPv4 and 3000 IPv6 datagrams
of which only the first fragment ever comes. While each attack lasts a
legitimate client fetches / over new connections and must succeed at least
99% of the time; afterwards every level returns to idle.

Without net/rxmem.c the out-of-order attack holds every receive buffer and
the appliance answers nothing until the connections go (see docs/testing.md)."""
import os
import subprocess
import threading
import time

import pytest

from mxlib import HERE, INDEX, PYTHON, Guest, delta, parse_prometheus, read_responses

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
