"""Capacity from memory (net/port/netmem.h): at -m 256 the HTTP server's table
and lwIP's heap are sized from the RAM (the boot prints the plan), many idle
keep-alive connections from 4 client addresses are held while a newcomer from
a fifth still gets its 200, each held one is still served afterwards, and the
memory each idle connection costs (kernel heap and lwIP heap, from /metrics)
is measured and bounded.

test_idle_quick (make test): QUICK_CONNS connections held QUICK_HOLD s.
test_idle_full (make test-capacity, about 4 min under TCG): the whole table
(the plan's count, about 2,170 at -m 256), held FULL_HOLD s; a newcomer from
a fifth address then evicts one idle connection (the table is full) and
gets its 200. The server ends a keep-alive connection 30 s after its last
response (HTTP_SERVER_IDLE_MS), so the full hold asks each connection for
one more response once its last is REFRESH s old.

HTTPS (net/tls/tlsmem.h: the HTTPS table and the TLS heap sized from the
RAM, printed at boot): test_https_idle_quick (make test) holds
QUICK_TLS idle HTTPS keep-alive connections (more than the 64 every image
had before) from 4 addresses while a newcomer from a fifth completes a
handshake and gets its 200, and measures what an idle established one
holds of the TLS heap; test_https_idle_full (make test-capacity) holds the
plan's whole count for FULL_HOLD s, and the newcomer then takes the place
of the idle one longest idle. The test sources share
one /24, so the guest boots with the per-prefix handshake rate off (a
public appliance keeps it: hsgate.h)."""
import re
import collections
import resource
import ssl
import threading
import time

import pytest

from mxlib import INDEX, Guest, read_responses

MEM = 256
QUICK_CONNS = 1500
QUICK_HOLD = 5
FULL_HOLD = 60
REFRESH = 15
# net/port/netmem.h: what a connection may cost at worst, kernel heap
# (struct conn and its table entries) and lwIP heap (W_http); an idle one
# holds its PCB only in lwIP's.
STATE_BYTES = 16896
IDLE_LWIP_BYTES = 512
PLAN = r"^net: (\d+) MiB usable: (\d+) HTTP connections, lwIP heap (\d+) KiB"
TLS_PLAN = r"^tls: (\d+) MiB usable: (\d+) HTTPS connections, TLS heap (\d+) KiB"
REQ = b"GET / HTTP/1.1\r\nHost: x\r\n\r\n"
QUICK_TLS = 200
# net/tls/tls.h: what a TLS connection may hold of the TLS heap at most
TLS_CONN_BYTES = 30720


@pytest.fixture(scope="module")
def guest():
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    want = 8192
    if soft < want:
        resource.setrlimit(resource.RLIMIT_NOFILE, (want, max(hard, want)))
    g = Guest(mem=MEM, cmdline="https.handshake_rate_per_prefix=0")
    try:
        m = re.search(PLAN, g.vm.text, re.M)
        assert m, g.vm.text[-3000:]
        g.plan_conns = int(m.group(2))
        g.plan_heap = int(m.group(3)) * 1024
        m = re.search(TLS_PLAN, g.vm.text, re.M)
        assert m, g.vm.text[-3000:]
        g.plan_tls = int(m.group(2))
        g.plan_tls_heap = int(m.group(3)) * 1024
        g.sources = [re.sub(r"\.\d+$", f".{200 + i}", g.ip) for i in range(5)]
        for src in g.sources:
            g.add_source(src)
        g.serves()
        g.base = g.baseline()
    except BaseException:
        g.close()
        raise
    yield g
    g.log_clean()
    g.close()


def _served(s):
    s.sendall(REQ)
    (r,), rest = read_responses(s, 1)
    assert r[0] == 200 and r[2] == INDEX and not rest, (r[0], len(r[2]))


def _open(guest, n):
    """n keep-alive connections round-robin over the first 4 sources, each
    answered once (so each is a served, idle keep-alive connection)."""
    socks = []
    try:
        for i in range(n):
            s = guest.connect(timeout=60, src=guest.sources[i % 4])
            socks.append(s)
            s.sendall(REQ)
        for s in socks:
            (r,), rest = read_responses(s, 1)
            assert r[0] == 200 and not rest, r[0]
    except BaseException:
        for s in socks:
            s.close()
        raise
    return socks


def _newcomer(guest):
    with guest.connect(timeout=60, src=guest.sources[4]) as s:
        _served(s)


def _per_conn(guest, n, m):
    kern = (m["vireo_mem_heap_in_use_bytes"] - guest.base["vireo_mem_heap_in_use_bytes"]) / n
    lwip = (m["vireo_lwip_mem_used_bytes"] - guest.base["vireo_lwip_mem_used_bytes"]) / n
    print(f"\n{n} idle keep-alive connections at -m {MEM} (plan {guest.plan_conns}, lwIP heap "
          f"{guest.plan_heap >> 10} KiB): {kern:.0f} B of kernel heap and {lwip:.0f} B of lwIP heap each")
    return kern, lwip


def _hold(guest, n, hold, full):
    socks = _open(guest, n)
    try:
        m = guest.metrics(src=guest.sources[4])
        assert m["vireo_http_connections_active"] >= n
        kern, lwip = _per_conn(guest, n, m)
        assert kern <= STATE_BYTES, kern
        assert lwip <= IDLE_LWIP_BYTES, lwip
        assert m["vireo_lwip_mem_errors_total"] == guest.base["vireo_lwip_mem_errors_total"]
        _newcomer(guest)
        lost = 0
        end = time.monotonic() + hold
        served = [time.monotonic()] * len(socks)
        while True:
            now = time.monotonic()
            last = now >= end
            # the full hold serves each connection again once its last
            # response is REFRESH s old (the idle timeout is 30 s); at the
            # end every one is served again
            for i, s in enumerate(socks):
                if s is None or not (last or (full and now - served[i] >= REFRESH)):
                    continue
                try:
                    _served(s)
                    served[i] = time.monotonic()
                except (OSError, AssertionError, ValueError):
                    s.close()
                    socks[i] = None
                    lost += 1
            if last:
                break
            time.sleep(min(1.0, max(0.0, end - time.monotonic())))
        socks = [s for s in socks if s is not None]
        evicted = (guest.metrics(src=guest.sources[4])["vireo_http_connections_evicted_total"] -
                   guest.base["vireo_http_connections_evicted_total"])
        # with the table full, the newcomer and the /metrics reads evict one
        # each; below it nothing is evicted
        assert evicted <= (3 if full else 0), evicted
        assert lost <= evicted, (lost, evicted)
        _newcomer(guest)
    finally:
        for s in socks:
            s.close()
    guest.wait_idle(guest.base, timeout=300)


@pytest.mark.quick
def test_idle_quick(guest):
    assert guest.plan_conns > QUICK_CONNS + 64, guest.plan_conns
    _hold(guest, QUICK_CONNS, QUICK_HOLD, False)


@pytest.mark.capacity
def test_idle_full(guest):
    _hold(guest, guest.plan_conns, FULL_HOLD, True)


def _tls_ctx():
    ctx = ssl.create_default_context()
    ctx.check_hostname = False
    ctx.verify_mode = ssl.CERT_NONE
    return ctx


def _tls_open(guest, src, ctx):
    s = ctx.wrap_socket(guest.connect(port=443, timeout=60, src=src), server_hostname="localhost")
    _served(s)
    return s


def _tls_open_many(guest, n):
    """n idle HTTPS keep-alive connections, round-robin over the first 4
    sources (one thread each: at most one handshake a source at a time),
    each served once, and again once its last response is REFRESH s old
    (opening many takes longer than the 30 s idle timeout under load)."""
    ctx = _tls_ctx()
    per = [[] for _ in range(4)]
    errs = []

    def worker(k):
        fresh = collections.deque()  # (last served, socket), oldest first
        try:
            for _ in range(k, n, 4):
                s = _tls_open(guest, guest.sources[k], ctx)
                per[k].append(s)
                fresh.append((time.monotonic(), s))
                while time.monotonic() - fresh[0][0] >= REFRESH:
                    _, old = fresh.popleft()
                    _served(old)
                    fresh.append((time.monotonic(), old))
        except BaseException as e:  # noqa: BLE001
            errs.append(e)
    threads = [threading.Thread(target=worker, args=(k,)) for k in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    socks = [s for p in per for s in p]
    if errs:
        for s in socks:
            s.close()
        raise errs[0]
    return socks


def _https_hold(guest, n, hold):
    base = guest.metrics(src=guest.sources[4])
    t0 = time.monotonic()
    socks = _tls_open_many(guest, n)
    opened = time.monotonic() - t0
    try:
        m = guest.metrics(src=guest.sources[4])
        assert m["vireo_https_connections_active"] == n, m["vireo_https_connections_active"]
        assert m["vireo_https_connections_max"] == guest.plan_tls
        tls = (m["vireo_tls_heap_in_use_bytes"] - base["vireo_tls_heap_in_use_bytes"]) / n
        kern = (m["vireo_mem_heap_in_use_bytes"] - base["vireo_mem_heap_in_use_bytes"]) / n
        lwip = (m["vireo_lwip_mem_used_bytes"] - base["vireo_lwip_mem_used_bytes"]) / n
        print(f"\n{n} idle HTTPS keep-alive connections at -m {MEM} (plan {guest.plan_tls}, TLS heap "
              f"{guest.plan_tls_heap >> 10} KiB), opened in {opened:.1f} s: {tls:.0f} B of TLS heap, "
              f"{kern:.0f} B of kernel heap, {lwip:.0f} B of lwIP heap each")
        assert tls <= TLS_CONN_BYTES, tls
        assert kern <= STATE_BYTES, kern
        assert m["vireo_tls_heap_alloc_failures_total"] == 0
        # a newcomer from a fifth address: a handshake and its 200
        with _tls_open(guest, guest.sources[4], _tls_ctx()):
            pass
        end = time.monotonic() + hold
        lost = 0
        while True:
            last = time.monotonic() >= end
            for i, s in enumerate(socks):  # within the 30 s idle timeout
                if s is None:
                    continue
                try:
                    _served(s)
                except (OSError, AssertionError, ValueError):
                    s.close()
                    socks[i] = None
                    lost += 1
            if last:
                break
            time.sleep(min(REFRESH, max(0.0, end - time.monotonic())))
        socks = [s for s in socks if s is not None]
        m = guest.metrics(src=guest.sources[4])
        assert m["vireo_tls_heap_alloc_failures_total"] == 0
        assert m['vireo_https_handshake_failures_total{reason="limit"}'] == \
            base['vireo_https_handshake_failures_total{reason="limit"}']
        # with every TLS connection taken the newcomer evicts the idle one
        # longest idle (admission.c); below that nobody is evicted
        evicted = m["vireo_https_connections_evicted_total"] - base["vireo_https_connections_evicted_total"]
        assert evicted == (1 if n == guest.plan_tls else 0), evicted
        assert lost == evicted, (lost, evicted)
    finally:
        for s in socks:
            s.close()
    guest.wait_idle(guest.base, timeout=300)


@pytest.mark.quick
def test_https_idle_quick(guest):
    """More idle HTTPS connections than the 64 of before (main refuses the
    65th on accept: limit)."""
    assert guest.plan_tls > QUICK_TLS, guest.plan_tls
    _https_hold(guest, QUICK_TLS, QUICK_HOLD)


@pytest.mark.capacity
def test_https_idle_full(guest):
    _https_hold(guest, guest.plan_tls, FULL_HOLD)


def test_plan_at_48():
    """-m 48 keeps today's numbers, and serves."""
    with Guest(mem=48) as g:
        m = re.search(PLAN, g.vm.text, re.M)
        assert m and int(m.group(2)) == 64 and int(m.group(3)) == 4096, m and m.group(0)
        # and the HTTPS plan's floor: today's 64 connections and TLS heap
        m = re.search(TLS_PLAN, g.vm.text, re.M)
        assert m and int(m.group(2)) == 64 and int(m.group(3)) == (2048 + 160 + 384), m and m.group(0)
        g.serves()
