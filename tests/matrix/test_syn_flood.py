"""SYN floods and sequence-number prediction (issue 13).

test_syn_flood_cookies: spoofed SYNs at 1,000/s for 20 s (syn_tools.py
flood, from 198.18.0.0/15, so every SYN-ACK goes to a gateway that drops it)
while a legitimate client fetches / over fresh connections back to back.
The listen backlog (32) is full the whole time; SYN cookies
(net/tcp/syncookie.c) answer every SYN without keeping state, so the client must
keep getting in (>= 99%), the appliance must serve fully afterwards and
every pool and heap must return to idle.

test_isn_unpredictable: 100 SYNs one after another from the host, the
SYN-ACK's sequence number of each recorded (syn_tools.py isn). RFC 6528 ISNs
(keyed hash of the 4-tuple plus a 4 us clock) must look unrelated from one
connection to the next: lwIP's own `iss += tcp_ticks` gave 6510, 6511, ..."""
import os
import statistics
import subprocess
import time

import pytest

from mxlib import HERE, INDEX, PYTHON, Guest, delta, run_in_ns

pytestmark = pytest.mark.hostile

FLOOD_RATE = 1000
FLOOD_SECONDS = 20


def test_syn_flood_cookies():
    with Guest() as g:
        # qemu64 under TCG: no RDSEED/RDRAND, and no virtio-rng here
        assert "random: chacha20 generator seeded from tsc-jitter (0 bits from the CPU" in g.vm.text
        g.serves()
        base = g.baseline()
        before = g.metrics()
        flood = g.ns.popen(PYTHON, os.path.join(HERE, "syn_tools.py"), "flood", g.ns.tap, g.ip,
                           str(FLOOD_RATE), str(FLOOD_SECONDS), stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        ok, failed, slowest = 0, [], 0.0
        t0 = time.monotonic()
        try:
            time.sleep(1)  # the backlog fills within the first 32 SYNs
            # bounded: the flood ends after FLOOD_SECONDS; a hung flooder is
            # cut off at 4x that
            while flood.poll() is None and time.monotonic() - t0 < 4 * FLOOD_SECONDS:
                t = time.monotonic()
                try:
                    status, _, body = g.get("/", timeout=20)
                    if status == 200 and body == INDEX:
                        ok += 1
                    else:
                        failed.append(f"status {status}, {len(body)} bytes")
                except OSError as e:
                    failed.append(repr(e))
                slowest = max(slowest, time.monotonic() - t)
        finally:
            if flood.poll() is None:
                flood.kill()
            out, err = flood.communicate(timeout=60)
        assert flood.returncode == 0, err.decode()
        during = g.metrics()
        total = ok + len(failed)
        cookies = delta(during, before, "vireo_lwip_syncookies_sent_total")
        valid = delta(during, before, "vireo_lwip_syncookies_validated_total")
        print(f"synflood {out.decode().strip().splitlines()[-1]}: legitimate {ok}/{total} ok, slowest {slowest:.1f} s; "
              f"cookies sent {cookies}, validated {valid}, rejected "
              f"{delta(during, before, 'vireo_lwip_syncookies_rejected_total')}; failures {failed[:5]}")
        assert total >= 10, f"only {total} requests in {FLOOD_SECONDS} s"
        assert ok >= 0.99 * total, failed
        # the flood really filled the backlog and was answered with cookies,
        # and the legitimate connections came in on theirs
        assert cookies >= FLOOD_RATE * FLOOD_SECONDS / 4, cookies
        assert valid >= 1

        t1 = time.monotonic()
        g.serves()
        print(f"full service {time.monotonic() - t1:.1f} s after the flood")
        m = g.wait_idle(base, timeout=120)
        print(f"idle again {time.monotonic() - t1:.0f} s after the flood")
        assert m["vireo_vnet_device_resets_total"] == 0
        g.log_clean()


def test_isn_unpredictable():
    with Guest(extra=["-cpu", "max", "-device", "virtio-rng-pci"]) as g:
        # seeded from the CPU, then reseeded from virtio-rng before any ISN
        # key is drawn (the first connection draws it)
        assert "random: chacha20 generator seeded from rdrand+tsc-jitter (256 bits" in g.vm.text or \
            "random: chacha20 generator seeded from rdseed+tsc-jitter (256 bits" in g.vm.text, g.vm.text
        g.vm.wait_for(r"^random: reseeded with \d+ bytes from virtio-rng", timeout=60)
        out = run_in_ns(g, "syn_tools.py", "isn", g.ns.tap, g.ip, g.ns.host_ip, "100", timeout=600)
        isns = [int(x) for x in out.split()]
        assert len(isns) == 100, out
        d = [(b - a) % 2**32 for a, b in zip(isns, isns[1:])]
        near = [x for x in d if min(x, 2**32 - x) < 2**24]
        up = sum(1 for x in d if x < 2**31)
        top = {x >> 28 for x in isns}
        r = statistics.correlation(isns[:-1], isns[1:])
        print(f"isn: first {isns[:4]}, {len(set(d))} distinct steps, {len(near)} within 2^24, "
              f"{up}/99 upward, {len(top)}/16 top nibbles, lag-1 correlation {r:+.3f}")
        # Not a counter: no repeated step, hardly any small one (each step
        # lands within 2^24 with probability 2^-7 if uniform: 0.8 expected)
        assert len(set(d)) == len(d)
        assert len(near) <= 5, near
        # not monotone: about half the steps go up (binomial, sd 5)
        assert 25 <= up <= 74, up
        # spread over the space: 100 draws leave an empty top nibble with
        # probability 16 x (15/16)^100 = 0.0025 each, so >= 12 of 16
        assert len(top) >= 12, sorted(top)
        # no linear relation between consecutive ISNs (sd ~0.1 when independent)
        assert abs(r) < 0.35, r
        g.log_clean()
