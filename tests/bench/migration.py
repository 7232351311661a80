#!/usr/bin/env python3
"""Live migration under load, repeated: one vireo (OVMF, TCG) moved back and
forth between two QEMU processes on this host while a client keeps
requests going (issue 17's figure: downtime, and failed requests, target
none).

The machinery is tests/matrix/migrlib.py's, the same as test_migration.py's:
a namespace with br0 (the client) and tap0/tap1 on it; the guest boots on
tap0; the client runs two bounded loops (keep-alive GETs on one connection
held for the whole run, and a new connection per GET); each migration
boots a destination with -incoming on the other tap (its own port), starts
the migration over QMP and polls query-migrate until it ends; once it has
completed the old QEMU is stopped and the next migration starts from the
new one after the client has seen another 50 answers.

Prints each migration's query-migrate downtime and total time (ms), the
wall time of the migrate command, then min/median/max of both, the
requests served and the failed requests (a reset, a timeout, a short or
wrong body: nothing is retried). A failed migration is reported and the
source kept. A figure, not a test: slow is not a failure here. Needs root.

  tests/bench/migration.py [--count 5] [--packed] [--iommu]"""
import argparse
import os
import statistics
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(os.path.dirname(HERE), "matrix"))

import mxlib  # noqa: E402
from migrlib import GUEST_IP, MIG_PORT, BridgedNs, MixedLoad, boot, migrate  # noqa: E402
from mxlib import NsClient  # noqa: E402


def wait_served(load, by, timeout=120):
    """True once `by` more requests succeeded, False after timeout."""
    start, deadline = load.ok, time.monotonic() + timeout
    while load.ok < start + by:
        if time.monotonic() > deadline:
            return False
        time.sleep(0.1)
    return True


def spread(xs):
    if not xs:
        return "none"
    return f"min {min(xs):,.0f}  median {statistics.median(xs):,.0f}  max {max(xs):,.0f}"


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--count", type=int, default=5, help="migrations (back and forth)")
    ap.add_argument("--packed", action="store_true", help="packed ring (packed=on)")
    ap.add_argument("--iommu", action="store_true",
                    help="the NIC behind -device intel-iommu with iommu_platform=on (translated)")
    a = ap.parse_args()
    opts = ",".join(o for o in ("packed=on" if a.packed else "",
                                "disable-legacy=on,iommu_platform=on" if a.iommu else "") if o)
    more = ["-device", "intel-iommu"] if a.iommu else []
    bns = BridgedNs()
    client = NsClient(bns.ns, GUEST_IP)
    src = dst = load = None
    rows, downtimes, totals = [], [], []
    t_all = time.monotonic()
    try:
        src = boot(bns, "tap0", opts, more=more)
        src.wait_for(mxlib.READY, timeout=180)
        if a.iommu:
            src.wait_for(r"^vtd0: translation on", timeout=5)
        load = MixedLoad(client).start()
        if not wait_served(load, 50):
            sys.exit("the load never got going: " + "; ".join(load.errors[:3]))
        taps = ("tap0", "tap1")
        for i in range(a.count):
            tap, port = taps[(i + 1) % 2], MIG_PORT + i
            dst = boot(bns, tap, opts, incoming=True, more=more, port=port)
            errs_before, t0 = len(load.errors), time.monotonic()
            info = migrate(src, port=port)
            wall = time.monotonic() - t0
            status = info.get("status")
            if status == "completed":
                src.stop()
                src, dst = dst, None
                served = wait_served(load, 50)
                downtimes.append(info.get("downtime", 0))
                totals.append(info.get("total-time", 0))
            else:
                dst.stop()
                dst = None
                served = wait_served(load, 50)
            row = (f"migration {i + 1} to {tap}: {status}, downtime {info.get('downtime')} ms, "
                   f"total {info.get('total-time')} ms, wall {wall:.1f} s, "
                   f"{info.get('ram', {}).get('transferred', 0) / 2**20:.1f} MiB sent, "
                   f"{len(load.errors) - errs_before} failed requests"
                   + ("" if served else "; NOT SERVING 120 s later"))
            rows.append(row)
            print(row, flush=True)
            if not served:
                break
        load.stop()
    finally:
        if load is not None and not load.stopping.is_set():
            load.stop()
        for vm in (dst, src):
            if vm is not None:
                vm.stop()
        client.close_ns()
        bns.close()
    kind = ("packed" if a.packed else "split") + (", intel-iommu" if a.iommu else "")
    print(f"\n{len(downtimes)} of {a.count} migrations completed ({kind}; {time.monotonic() - t_all:.0f} s in all)")
    print(f"  downtime, ms:   {spread(downtimes)}")
    print(f"  total time, ms: {spread(totals)}")
    print(f"  requests: {load.ok if load else 0} served, {len(load.errors) if load else 0} failed")
    for e in (load.errors[:5] if load else []):
        print(f"    {e}")


if __name__ == "__main__":
    main()
