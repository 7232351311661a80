"""Soak (make soak): 100,000 keep-alive GETs of / over 64 concurrent
connections (the server's connection limit), every body compared byte for
byte, zero failures, and no growth in memory in use: lwIP's pools and heap,
the kernel heap and the receive buffers are back at their idle level after."""
import os
import time

import pytest

from mxlib import Guest, Load

pytestmark = pytest.mark.soak
REQUESTS = int(os.environ.get("SOAK_REQUESTS", "100000"))
CONNS = 64


def test_soak():
    with Guest() as g:
        g.serves()
        base = g.baseline()
        counts = [REQUESTS // CONNS + (1 if i < REQUESTS % CONNS else 0) for i in range(CONNS)]
        t0 = time.monotonic()
        load = Load(g, conns=CONNS, per_conn=counts, timeout=60).start().join(timeout=4 * 3600)
        took = time.monotonic() - t0
        assert not load.errors, load.errors[:5]
        assert load.ok == REQUESTS
        after = g.wait_idle(base)
        tw = after['vireo_tcp_pcbs{list="time_wait"}']
        print(f"soak: {REQUESTS} requests over {CONNS} connections in {took:.0f} s ({REQUESTS / took:.0f}/s); "
              f"kernel heap {base['vireo_mem_heap_in_use_bytes']:.0f} -> {after['vireo_mem_heap_in_use_bytes']:.0f} B, "
              f"lwIP heap {base['vireo_lwip_mem_used_bytes']:.0f} -> {after['vireo_lwip_mem_used_bytes']:.0f} B "
              f"({tw:.0f} TIME_WAIT PCBs), "
              f"lwIP heap peak {after['vireo_lwip_mem_max_bytes']:.0f} B, kernel heap peak "
              f"{after['vireo_mem_heap_peak_bytes']:.0f} B")
        assert after["vireo_http_requests_total"] - base["vireo_http_requests_total"] >= REQUESTS
        g.serves()
        g.log_clean()
