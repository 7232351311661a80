#!/usr/bin/env python3
"""Serving with the NIC's DMA translated by QEMU's Intel VT-d model, in
vireo's strict and permissive policies, against serving without an IOMMU
(issue 17's figure: translation on within 15% of off; issue 30's: strict
>= 0.75x permissive on small requests).

Three configurations of the same image, booted alternately (off,
permissive, strict, off, ... BENCH_REPS boots of each) on a tap in a
network namespace of their own (tests/matrix/mxlib.Guest, q35, OVMF, TCG):

  off         virtio-net-pci,disable-legacy=on; no IOMMU device
  permissive  -device intel-iommu and virtio-net-pci,disable-legacy=on,
              iommu_platform=on, booted with iommu=permissive
  strict      the same, booted with iommu=strict (the default)

With the unit, vireo's log must say "vtd0: translation on", "vtd0: 00:02.0
translated" and the policy asked for, or the run stops (a figure for
pass-through would be a figure for nothing). The NIC is translated in both
policies; what differs is the rest of the machine (blocked or pass-through)
and whatever the policy changes on the data path.

In each boot, after a 2 s warm-up, wrk runs three loads of --seconds each:
the 612 B index at 1 and at 32 connections (requests/s) and /64k.bin at 32
(MB/s). Prints each boot's figures, then the medians side by side with
the ratios permissive/off, strict/off and strict/permissive. Every wrk run
is bounded by its -d and a timeout. With translation on, the `iommu` shell
command's domain line after the loads shows how many transient pages were
unmapped and how many IOTLB flushes that took. A smoke run: --reps 1
--seconds 2.

A figure, not a test: nothing here fails when the guest is slow. Needs
root (namespace, tap) and wrk.

  tests/bench/iommu.py [--reps 2] [--seconds 5] [--mem 256] [--image build/vireo.img]"""
import argparse
import os
import re
import statistics
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(os.path.dirname(HERE), "matrix"))
sys.path.insert(0, HERE)

from mxlib import ROOT, Guest  # noqa: E402
from profile import wrk_figures  # noqa: E402

TRANSLATED = dict(device_opts="disable-legacy=on,iommu_platform=on", extra=["-device", "intel-iommu"])
CONFIGS = {
    "off": dict(device_opts="disable-legacy=on", extra=[]),
    "permissive": dict(TRANSLATED, cmdline="iommu=permissive"),
    "strict": dict(TRANSLATED, cmdline="iommu=strict"),
}
# (numerator, denominator) of the ratios printed
RATIOS = [("permissive", "off"), ("strict", "off"), ("strict", "permissive")]
LOADS = [("612 B c1, req/s", "/", 1, "req_s"),
         ("612 B c32, req/s", "/", 32, "req_s"),
         ("64 KiB c32, MB/s", "/64k.bin", 32, "mb_s")]


def wrk(g, path, conns, seconds):
    r = g.ns.run("wrk", "-t1", "-c", str(conns), "-d", str(seconds), "--latency",
                 f"http://{g.ip}{path}", timeout=seconds + 60)
    return wrk_figures(r.stdout.decode())


def one_boot(name, seconds, mem, image):
    cfg = CONFIGS[name]
    with Guest(mem=mem, image=image, **cfg) as g:
        text = g.vm.text
        if name != "off":
            if not re.search(r"^vtd0: translation on", text, re.M) or \
                    not re.search(r"^vtd0: 00:02\.0 translated in domain", text, re.M) or \
                    not re.search(rf"^vtd: iommu={name}: ", text, re.M):
                sys.exit(f"iommu: translation is not on for the NIC in {name}; see the boot log:\n" + text[-2000:])
        else:
            assert "vtd0:" not in text, "a remapping unit without -device intel-iommu?"
        g.ns.run("wrk", "-t1", "-c", "8", "-d", "2", f"http://{g.ip}/", timeout=60)  # warm-up
        figs = {}
        for label, path, conns, key in LOADS:
            f = wrk(g, path, conns, seconds)
            figs[label] = f.get(key, 0.0)
            if f.get("errors"):
                figs[label + " errors"] = f["errors"]
        note = ""
        if name != "off":
            mark = len(g.vm.text)
            g.vm.send("iommu\n")
            g.vm.wait_for(r"^iommu: domain \d+ 00:02\.0 .*$", timeout=30, start=mark)
            m = re.search(r"^iommu: domain \d+ 00:02\.0 (.*)$", g.vm.text[mark:], re.M)
            note = m.group(1) if m else ""
            if re.search(r"^vtd0: fault", g.vm.text, re.M):
                note += " (a fault was logged!)"
        return figs, note


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--reps", type=int, default=2, help="boots of each configuration, alternated")
    ap.add_argument("--seconds", type=int, default=5, help="each wrk run")
    ap.add_argument("--mem", type=int, default=256)
    ap.add_argument("--image", default=os.path.join(ROOT, "build", "vireo.img"))
    a = ap.parse_args()
    runs = {name: [] for name in CONFIGS}
    t0 = time.monotonic()
    for rep in range(a.reps):
        for name in CONFIGS:
            figs, note = one_boot(name, a.seconds, a.mem, a.image)
            runs[name].append(figs)
            print(f"rep {rep + 1} {name:10}: " + ", ".join(f"{k} {v:,.1f}" if isinstance(v, float) else f"{k}: {v}"
                                                        for k, v in figs.items()), flush=True)
            if note:
                print(f"          iommu: {note}", flush=True)
    print(f"\nmedians of {a.reps} boot(s) each, wrk {a.seconds} s per figure, -m {a.mem}, "
          f"{time.monotonic() - t0:.0f} s in all:")
    print(f"  {'figure':<18}" + "".join(f" {n:>10}" for n in CONFIGS) +
          "".join(f" {n[:6] + '/' + d[:4]:>12}" for n, d in RATIOS))
    for label, _, _, _ in LOADS:
        med = {n: statistics.median(r[label] for r in runs[n]) for n in CONFIGS}
        ratios = [med[n] / med[d] if med[d] else 0.0 for n, d in RATIOS]
        print(f"  {label:<18}" + "".join(f" {med[n]:>10,.1f}" for n in CONFIGS) +
              "".join(f" {r:>12.2f}" for r in ratios))


if __name__ == "__main__":
    main()
