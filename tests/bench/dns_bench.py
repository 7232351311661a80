#!/usr/bin/env python3
"""apps/dns under dnsperf (Debian's package): queries per second and latency
percentiles over UDP, on a tap in a namespace of its own, the appliance
booted from IMAGE (make APP=apps/dns) with rate limiting off (dns.rrl=false:
the benchmark is one source asking as fast as it can). Two runs: one query
at a time (apps/dns/tests/dns_client.py pingpong, 400 x SECONDS queries with a
1 s timeout each: dnsperf's own pacing at -q 1 holds it near 100 queries/s
whatever the server does), then dnsperf with 32 in flight for SECONDS
(its -l bound). The query mix is the example zone's: answers, a CNAME
chain, NXDOMAIN, NODATA, MX with additional data. Prints one line per run
and a JSON object; figures only, nothing asserted about speed.

  dns_bench.py IMAGE [--seconds 5]
"""
import argparse
import json
import os
import re
import statistics
import sys
import tempfile

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "qemu"))
import netns as nsmod  # noqa: E402
from vm import Vm  # noqa: E402

CLIENT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "apps", "dns", "tests", "dns_client.py")

QUERIES = """vireo.test A
www.vireo.test A
host.vireo.test AAAA
vireo.test MX
vireo.test NS
nope.vireo.test A
host.vireo.test MX
txt.vireo.test TXT
"""


def pct(xs, p):
    xs = sorted(xs)
    return xs[min(len(xs) - 1, int(len(xs) * p / 100))]


def run(ns, qfile, seconds, inflight):
    p = ns.run("dnsperf", "-s", ns.guest_ip, "-d", qfile, "-l", str(seconds), "-c", "1", "-q", str(inflight),
               "-t", "2", "-v", timeout=seconds + 60)
    out = p.stdout.decode()
    lat = [float(m.group(1)) * 1e3 for m in re.finditer(r"^> \S+ \S+ \S+ ([0-9.]+)$", out, re.M)]
    qps = re.search(r"Queries per second:\s+([0-9.]+)", out)
    lost = re.search(r"Queries lost:\s+(\d+)", out)
    if not qps or not lat:
        raise SystemExit(f"dnsperf gave no figures:\n{out[-3000:]}\n{p.stderr.decode()[-2000:]}")
    return {"inflight": inflight, "qps": round(float(qps.group(1))), "lost": int(lost.group(1)),
            "answers": len(lat), "p50_ms": round(statistics.median(lat), 3), "p99_ms": round(pct(lat, 99), 3),
            "max_ms": round(max(lat), 3)}


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("image")
    ap.add_argument("--seconds", type=int, default=5)
    a = ap.parse_args()
    if not nsmod.available():
        raise SystemExit("dns_bench.py needs root and /dev/net/tun (a namespace with a tap)")
    with tempfile.NamedTemporaryFile("w", suffix=".txt", delete=False) as f:
        f.write(QUERIES)
        qfile = f.name
    res = []
    try:
        with nsmod.Netns() as ns:
            vm = Vm(cmdline=f"ip={ns.guest_ip}/24 dns.rrl=false", image=a.image, wrap=ns.wrap, mem=256,
                    extra=ns.qemu_args())
            try:
                vm.wait_for(r"^vireo: ready ip=", timeout=120)
                vm.wait_for(r"^dns: zone ", timeout=30)
                p = ns.run(sys.executable, CLIENT, "pingpong", ns.guest_ip, "53", str(400 * a.seconds),
                           timeout=60 + 4 * a.seconds)
                r = dict(json.loads(p.stdout), inflight=1)
                res.append(r)
                print(f"dns udp, 1 in flight: {r['qps']} queries/s, p50 {r['p50_ms']} ms, "
                      f"p99 {r['p99_ms']} ms, max {r['max_ms']} ms, lost {r['lost']}")
                for inflight in (32,):
                    r = run(ns, qfile, a.seconds, inflight)
                    res.append(r)
                    print(f"dns udp, {inflight} in flight: {r['qps']} queries/s, p50 {r['p50_ms']} ms, "
                          f"p99 {r['p99_ms']} ms, max {r['max_ms']} ms, lost {r['lost']}")
            finally:
                vm.stop()
    finally:
        os.unlink(qfile)
    print(json.dumps(res))


if __name__ == "__main__":
    main()
