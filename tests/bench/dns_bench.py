#!/usr/bin/env python3
"""make bench-dns: apps/dns against NSD and Knot DNS on Linux, each guest in
the same QEMU (images/qemu.sh: q35, TCG, one CPU, -m MEM, the same
virtio-net NIC on a tap in a namespace of its own), serving the same zone
(apps/dns/example.zone: vireo's built-in one; the Linux peers get the file
itself), asked by the same clients from the namespace:

  c1   apps/dns/tests/dns_client.py pingpong: one query at a time, 400 x
       SECONDS of them, 1 s timeout each (dnsperf paces itself near 100
       queries/s at one outstanding query, whatever the server does)
  c32  dnsperf (Debian's) with 32 queries in flight for SECONDS (-l)

The query mix is the example zone's: answers, a CNAME chain, NXDOMAIN,
NODATA, MX and NS with additional data, a TXT. vireo runs with rate limiting
off (dns.rrl=false), NSD with rrl-ratelimit 0; the Linux peers are built by
tests/bench/peer/build.sh nsd knot (Debian packages, the shared harness's
kernel and busybox). Guests take turns, REPS rounds of vireo, nsd, knot.
Prints one line per run, a table of the medians with vireo's ratios to
each peer (queries/s: vireo / peer; p99: peer / vireo, so above 1 is vireo
ahead either way), and writes the runs as JSON to build/bench/dns.json.
Figures only: nothing is asserted about speed.

  dns_bench.py IMAGE [--seconds 5] [--reps 1] [--peers nsd,knot] [--mem 256]
"""
import argparse
import json
import os
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, os.path.join(HERE, "..", "qemu"))
import netns as nsmod  # noqa: E402
from vm import Vm  # noqa: E402

CLIENT = os.path.join(ROOT, "apps", "dns", "tests", "dns_client.py")
ZONE = os.path.join(ROOT, "apps", "dns", "example.zone")
ORIGIN = "vireo.test."
OUT = os.path.join(ROOT, "build", "bench")

QUERIES = """vireo.test A
www.vireo.test A
host.vireo.test AAAA
vireo.test MX
vireo.test NS
nope.vireo.test A
host.vireo.test MX
txt.vireo.test TXT
"""


def log(msg):
    print(f"[bench-dns {time.strftime('%H:%M:%S')}] {msg}", file=sys.stderr, flush=True)


def pct(xs, p):
    xs = sorted(xs)
    return xs[min(len(xs) - 1, int(len(xs) * p / 100))]


def dnsperf(ns, qfile, seconds, inflight):
    p = ns.run("dnsperf", "-s", ns.guest_ip, "-d", qfile, "-l", str(seconds), "-c", "1", "-q", str(inflight),
               "-t", "2", "-v", timeout=seconds + 60)
    out = p.stdout.decode()
    lat = [float(m.group(1)) * 1e3 for m in re.finditer(r"^> \S+ \S+ \S+ ([0-9.]+)$", out, re.M)]
    qps = re.search(r"Queries per second:\s+([0-9.]+)", out)
    lost = re.search(r"Queries lost:\s+(\d+)", out)
    if not qps or not lat:
        raise SystemExit(f"dnsperf gave no figures:\n{out[-3000:]}\n{p.stderr.decode()[-2000:]}")
    return {"qps": round(float(qps.group(1))), "lost": int(lost.group(1)), "answers": len(lat),
            "p50_ms": round(statistics.median(lat), 3), "p99_ms": round(pct(lat, 99), 3),
            "max_ms": round(max(lat), 3)}


def pingpong(ns, seconds):
    p = ns.run(sys.executable, CLIENT, "pingpong", ns.guest_ip, "53", str(400 * seconds),
               timeout=60 + 4 * seconds)
    if p.returncode != 0:
        raise SystemExit(f"pingpong failed: {p.stderr.decode()[-2000:]}")
    r = json.loads(p.stdout)
    return {k: r[k] for k in ("qps", "lost", "p50_ms", "p99_ms", "max_ms")}


def peer_initrd(tmp, peer):
    """The peer's initramfs with the zone appended as /peer/data/."""
    base = os.path.join(OUT, f"peer-{peer}", "initrd.img")
    data = os.path.join(tmp, "data")
    os.makedirs(os.path.join(data, "peer", "data"), exist_ok=True)
    shutil.copyfile(ZONE, os.path.join(data, "peer", "data", "zone.db"))
    with open(os.path.join(data, "peer", "data", "origin"), "w") as f:
        f.write(ORIGIN + "\n")
    cpio = subprocess.run("find . | sort | cpio -o -H newc --owner=0:0 --quiet | gzip -1", shell=True, cwd=data,
                          capture_output=True, check=True).stdout
    out = os.path.join(tmp, f"initrd-{peer}.img")
    with open(base, "rb") as f, open(out, "wb") as o:
        o.write(f.read())
        o.write(cpio)
    return out


def boot(guest, ns, image, mem, tmp):
    if guest == "vireo":
        vm = Vm(cmdline=f"ip={ns.guest_ip}/24 gw={ns.host_ip} dns.rrl=false", image=image, wrap=ns.wrap, mem=mem,
                extra=ns.qemu_args())
        vm.wait_for(r"^vireo: ready ip=", timeout=180)
        vm.wait_for(r"^dns: zone ", timeout=30)
        return vm
    vm = Vm(cmdline=f"console=ttyS0 quiet panic=1 bench.ip={ns.guest_ip}/24 bench.gw={ns.host_ip}",
            kernel=os.path.join(OUT, f"peer-{guest}", "vmlinuz"), wrap=ns.wrap, mem=mem,
            extra=ns.qemu_args() + ["-initrd", peer_initrd(tmp, guest)])
    vm.wait_for(rf"^READY peer={guest} ", timeout=300)
    if "BENCH-FAIL" in vm.text:
        raise SystemExit(f"{guest}: {vm.text[-3000:]}")
    return vm


def check_answers(ns):
    """The guest answers the mix the same way before it is timed."""
    out = ns.run("dig", f"@{ns.guest_ip}", "+short", "+time=5", "+tries=2", "www.vireo.test", "A").stdout.decode()
    return out.split()


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("image")
    ap.add_argument("--seconds", type=int, default=5)
    ap.add_argument("--reps", type=int, default=1)
    ap.add_argument("--peers", default="nsd,knot")
    ap.add_argument("--mem", type=int, default=256)
    a = ap.parse_args()
    if not nsmod.available():
        raise SystemExit("dns_bench.py needs root and /dev/net/tun (a namespace with a tap)")
    peers = [p for p in a.peers.split(",") if p]
    missing = [p for p in peers if not os.path.exists(os.path.join(OUT, f"peer-{p}", "initrd.img"))]
    if missing:
        log(f"building the peers {' '.join(missing)} (tests/bench/peer/build.sh; Debian packages, a few minutes)")
        subprocess.run([os.path.join(HERE, "peer", "build.sh")] + missing, check=True)
    os.makedirs(OUT, exist_ok=True)
    tmp = tempfile.mkdtemp(prefix="vireo-dnsbench-")
    qfile = os.path.join(tmp, "queries.txt")
    with open(qfile, "w") as f:
        f.write(QUERIES)
    runs = []
    try:
        for rep in range(a.reps):
            for guest in ["vireo"] + peers:
                with nsmod.Netns() as ns:
                    t0 = time.monotonic()
                    vm = boot(guest, ns, a.image, a.mem, tmp)
                    try:
                        booted = round(time.monotonic() - t0, 1)
                        ans = check_answers(ns)
                        if ans != ["web.vireo.test.", "host.vireo.test.", "192.0.2.80"]:
                            raise SystemExit(f"{guest} answers www.vireo.test A with {ans}")
                        c1 = pingpong(ns, a.seconds)
                        c32 = dnsperf(ns, qfile, a.seconds, 32)
                    finally:
                        vm.stop()
                r = {"guest": guest, "rep": rep, "boot_s": booted, "c1": c1, "c32": c32,
                     "loadavg": round(os.getloadavg()[0], 2)}
                runs.append(r)
                for c in ("c1", "c32"):
                    x = r[c]
                    print(f"{guest:6} {c:4}: {x['qps']:>7} queries/s  p50 {x['p50_ms']:7.3f} ms  "
                          f"p99 {x['p99_ms']:7.3f} ms  max {x['max_ms']:8.3f} ms  lost {x['lost']}  "
                          f"(rep {rep + 1}, load {r['loadavg']})", flush=True)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    med = {}
    for g in ["vireo"] + peers:
        med[g] = {c: {k: statistics.median(r[c][k] for r in runs if r["guest"] == g) for k in ("qps", "p99_ms")}
                  for c in ("c1", "c32")}
    print()
    head = f"{'figure':18}" + "".join(f"{g:>10}" for g in med) + "".join(f"{'vireo/' + p:>13}" for p in peers)
    print(head)
    for c in ("c1", "c32"):
        row = f"{c + ' queries/s':18}" + "".join(f"{med[g][c]['qps']:>10.0f}" for g in med)
        row += "".join(f"{med['vireo'][c]['qps'] / med[p][c]['qps']:>12.2f}x" for p in peers)
        print(row)
        row = f"{c + ' p99 ms':18}" + "".join(f"{med[g][c]['p99_ms']:>10.3f}" for g in med)
        row += "".join(f"{med[p][c]['p99_ms'] / med['vireo'][c]['p99_ms']:>12.2f}x" for p in peers)
        print(row)
    with open(os.path.join(OUT, "dns.json"), "w") as f:
        json.dump({"runs": runs, "medians": med, "seconds": a.seconds, "mem": a.mem,
                   "when": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime())}, f, indent=1)
    print(f"\n(p99 ratios are peer / vireo: above 1, vireo is faster; JSON in {os.path.join(OUT, 'dns.json')})")


if __name__ == "__main__":
    main()
