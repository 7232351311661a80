"""A Linux client reusing its source port right after the appliance closed
the connection (Connection: close, so the appliance closes first and holds
TIME_WAIT). Linux's next ISN for the same 4-tuple is above the old
connection's (RFC 6528 clock), so the new SYN reopens the 4-tuple
(net/port/patches/0002) and is served at once; without the patch lwIP answered
it with an ACK for the old connection until TIME_WAIT ended (2 MSL, 120 s),
beyond the connect timeout here. Each reuse is counted in
vireo_lwip_time_wait_reopened_total."""
import errno
import random
import socket
import time

import pytest

from mxlib import INDEX, Guest, delta, parse_response, read_all

pytestmark = pytest.mark.hostile
REUSES = 5
CONNECT_TIMEOUT = 60  # < 2 MSL: a SYN that TIME_WAIT swallows times out


def bound_connect(g, port):
    """A socket bound to local port `port`, connected to the guest's HTTP
    port. The previous connection on that port may still be closing on the
    host's side (LAST_ACK until the appliance's ACK): retry while the kernel
    refuses the 4-tuple, a bounded number of times."""
    for _ in range(100):
        s = g.socket()
        s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        s.settimeout(CONNECT_TIMEOUT)
        try:
            s.bind(("0.0.0.0", port))
            s.connect((g.ip, 80))
            return s
        except OSError as e:
            s.close()
            if e.errno not in (errno.EADDRINUSE, errno.EADDRNOTAVAIL):
                raise
            time.sleep(0.2)
    raise AssertionError(f"local port {port} never became free on the host")


def test_source_port_reused_within_time_wait():
    with Guest() as g:
        g.serves()
        port = random.Random().randrange(61000, 65000)  # above Linux's ephemeral range
        before = g.metrics()
        waits = []
        for i in range(REUSES + 1):
            t0 = time.monotonic()
            s = bound_connect(g, port)
            waits.append(time.monotonic() - t0)
            with s:
                s.sendall(b"GET / HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
                status, _, body = parse_response(read_all(s))
            assert status == 200 and body == INDEX, (i, status, len(body))
        after = g.metrics()
        print(f"port {port}: connect times {', '.join(f'{w:.2f}' for w in waits)} s")
        # the first connection found no TIME_WAIT; every later one reopened one
        assert delta(after, before, "vireo_lwip_time_wait_reopened_total") == REUSES
        g.serves()
