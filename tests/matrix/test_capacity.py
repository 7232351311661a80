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
one more response once its last is REFRESH s old."""
import re
import resource
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
REQ = b"GET / HTTP/1.1\r\nHost: x\r\n\r\n"


@pytest.fixture(scope="module")
def guest():
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    want = 8192
    if soft < want:
        resource.setrlimit(resource.RLIMIT_NOFILE, (want, max(hard, want)))
    g = Guest(mem=MEM)
    try:
        m = re.search(PLAN, g.vm.text, re.M)
        assert m, g.vm.text[-3000:]
        g.plan_conns = int(m.group(2))
        g.plan_heap = int(m.group(3)) * 1024
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


def test_plan_at_48():
    """-m 48 keeps today's numbers, and serves."""
    with Guest(mem=48) as g:
        m = re.search(PLAN, g.vm.text, re.M)
        assert m and int(m.group(2)) == 64 and int(m.group(3)) == 4096, m and m.group(0)
        g.serves()
