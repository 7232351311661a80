"""ApacheBench at 32 keep-alive connections (HTTP/1.0 -k), several boots,
on a tap device in a namespace of the test's own: every request answered,
none left to the server's 30 s idle timeout. Nothing here asserts on speed;
the rate is only printed.

Why not QEMU's user network, where issue 15 saw one boot in three collapse
to ~640 requests/s with failures: libslirp listens on a host forward with a
backlog of 1 (`ss -ltn` shows Send-Q 1), so 32 simultaneous connects
overflow the host's accept queue whenever QEMU's main loop is slow to
accept (TcpExtListenOverflows rose by 209 in such a boot, 16 in a good one),
the host kernel drops the SYNs, ab's connects back off 1, 2, 4, 8, 16 s, and
the connections that did open sit idle past the 30 s timeout. The guest was
clean all along (every used receive buffer consumed, nothing in flight on
transmit, coalescing back at 1 frame) and a capture on the netdev shows the
late connections arriving as fresh SYNs in pairs at 1, 2, 3, 5.5 and 10 s.
A tap has no such listener in the way."""
import re
import shutil

import pytest

from mxlib import Guest

# 3 boots take ~25 s here (on a shared, busy machine): quick enough for make test
pytestmark = [pytest.mark.hostile, pytest.mark.quick]

BOOTS = 3
REQUESTS = 20000
CONNS = 32


def ab_field(out, name):
    m = re.search(rf"^{re.escape(name)}:\s+([\d.]+)", out, re.M)
    assert m, f"no {name!r} in ab's output:\n{out}"
    return float(m.group(1))


@pytest.mark.skipif(shutil.which("ab") is None, reason="needs ab (apache2-utils, tools/deps.sh test)")
@pytest.mark.parametrize("boot", range(BOOTS), ids=[f"boot{i}" for i in range(BOOTS)])
def test_ab_keepalive_c32_every_request_answered(boot):
    with Guest(mem=256) as g:
        g.serves()
        before = g.metrics()
        # -s 60: ab's own per-request timeout is above the server's 30 s
        # idle timeout, so a stuck request shows up as the server's timeout
        r = g.ns.run("ab", "-q", "-k", "-s", "60", "-c", str(CONNS), "-n", str(REQUESTS),
                     f"http://{g.ip}/", timeout=600)
        out = r.stdout.decode(errors="replace")
        after = g.metrics()
        idle = after['vireo_http_timeouts_total{kind="idle"}'] - before['vireo_http_timeouts_total{kind="idle"}']
        served = after["vireo_http_requests_total"] - before["vireo_http_requests_total"]
        print(f"boot {boot}: {ab_field(out, 'Requests per second'):.0f} req/s, "
              f"{served:.0f} requests seen by the server, idle timeouts {idle:.0f}, "
              f"coalescing changes {after['vireo_vnet_coalesce_changes_total']:.0f}, "
              f"timer wakeups {after['vireo_vnet_coalesce_timer_wakeups_total']:.0f}")
        assert r.returncode == 0, out + r.stderr.decode(errors="replace")
        assert ab_field(out, "Complete requests") == REQUESTS, out
        assert ab_field(out, "Failed requests") == 0, out
        assert idle == 0, out
        assert served >= REQUESTS
        g.log_clean()
