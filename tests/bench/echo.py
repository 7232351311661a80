#!/usr/bin/env python3
"""The device ceiling: how many frames per second the frame reflector
(vnet.echo: virtio-net and the loop, nothing above them) sends back under
this QEMU, at 60, 590 and 1514-byte frames.

Boots vireo with vnet.echo on a tap device in a network namespace of its own
(tests/matrix/echolib.EchoGuest: q35, TCG, -smp 1, virtio-net-pci on the tap
with vhost off, as `make bench` boots it) and, for each frame size, offers
frames at rising rates from tests/bench/echoflood.c (AF_PACKET on the tap
side, paced, --seconds per step, bounded). The tap's counters give what QEMU
read from the tap (the guest's receive rate) and what it wrote back (the
reflected rate); a frame the guest had no buffer for waits in the tap's
queue or is dropped there. After each step, slow probes must come back (the
reflector recovers once the load falls). Per size the ceiling is the highest
reflected rate of any step. Prints a table and the ceilings, with the load
average around the run; writes JSON to --json.

  tests/bench/echo.py [--sizes 60,590,1514] [--rates 50000,100000,150000,200000,300000]
                      [--seconds 3] [--mem 256] [--device-opts ""] [--json build/bench/echo.json]

A figure, not a test: nothing here fails when the guest is slow. Needs root."""
import argparse
import json
import os
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(os.path.dirname(HERE), "matrix"))

import echolib  # noqa: E402


def loadavg():
    with open("/proc/loadavg") as f:
        return " ".join(f.read().split()[:3])


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--sizes", default="60,590,1514")
    ap.add_argument("--rates", default="50000,100000,150000,200000,300000")
    ap.add_argument("--seconds", type=float, default=3.0)
    ap.add_argument("--mem", type=int, default=256)
    ap.add_argument("--device-opts", default="")
    ap.add_argument("--json", default=os.path.join(echolib.ROOT, "build", "bench", "echo.json"))
    a = ap.parse_args()
    sizes = [int(s) for s in a.sizes.split(",")]
    rates = [int(r) for r in a.rates.split(",")]
    echolib.build_flooder()
    started, load0 = time.strftime("%Y-%m-%d %H:%M:%S UTC", time.gmtime()), loadavg()
    steps, ceilings = [], {}
    with echolib.EchoGuest(device_opts=a.device_opts, mem=a.mem) as g:
        assert g.probe(2, 0) == 2, "no echo at all"
        print(f"{'size':>5} {'offered/s':>10} {'read/s':>9} {'reflected/s':>11} {'MB/s out':>8} "
              f"{'not read':>8} {'probes':>6}", flush=True)
        for size in sizes:
            for rate in rates:
                f = g.flood(size, rate, a.seconds)
                secs = f["send_seconds"]
                row = {"size": size, "offered_pps": f["offered"] / secs, "read_pps": f["tx"] / secs,
                       "reflected_pps": f["rx"] / secs, "not_read": f["offered"] - f["tx"],
                       "probes": g.probe(3, size * 1000000 + rate, timeout=3)}
                row["reflected_MBps"] = row["reflected_pps"] * size / 1e6
                steps.append(row)
                print(f"{size:>5} {row['offered_pps']:>10,.0f} {row['read_pps']:>9,.0f} "
                      f"{row['reflected_pps']:>11,.0f} {row['reflected_MBps']:>8.1f} {row['not_read']:>8,} "
                      f"{row['probes']:>4}/3", flush=True)
            best = max((s for s in steps if s["size"] == size), key=lambda s: s["reflected_pps"])
            ceilings[size] = {"frames_per_s": round(best["reflected_pps"]),
                              "bytes_per_s": round(best["reflected_pps"] * size),
                              "at_offered_pps": round(best["offered_pps"])}
        broken = "broken" in g.vm.text
    load1 = loadavg()
    print(f"\nceiling (highest reflected rate of any step), {started}, load average {load0} -> {load1}:")
    for size, c in ceilings.items():
        print(f"  {size:>4} B: {c['frames_per_s']:>9,} frames/s each way, {c['bytes_per_s'] / 1e6:6.1f} MB/s "
              f"(offered {c['at_offered_pps']:,}/s)")
    if broken:
        print("guest log says 'broken': see the serial log")
    out = {"started": started, "loadavg_start": load0, "loadavg_end": load1, "seconds": a.seconds,
           "device_opts": a.device_opts, "steps": steps, "ceilings": ceilings}
    os.makedirs(os.path.dirname(a.json), exist_ok=True)
    with open(a.json, "w") as fh:
        json.dump(out, fh, indent=1)
    print(f"JSON: {a.json}")


if __name__ == "__main__":
    main()
