#!/usr/bin/env python3
"""Upload MB/s through vireo's TCP echo (port 7), with and without receive
segmentation offload (vnet.guest_tso=off), over a tap in a namespace of its
own (tests/matrix/mxlib.py's Guest). Per mode: one boot, REPS uploads of
MIB MiB each, every one checked byte for byte as it comes back; a bounded
loop (REPS x MIB MiB, 120 s timeout per upload). Prints one line per mode
and a JSON object; figures only, nothing asserted about speed.

  upload.py [--reps 3] [--mib 16] [--mem 256]

Echo sends every byte back, so the link carries the upload in both
directions: the figure is upload bytes per second of wall time."""
import argparse
import json
import os
import statistics
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "matrix"))
from mxlib import Guest  # noqa: E402
from test_rx_tso import pattern, upload  # noqa: E402


def counters(g):
    m = g.metrics()
    return {k: m[k] for k in ("vireo_vnet_rx_tso_frames_total", "vireo_vnet_rx_tso_segments_total",
                              'vireo_vnet_frames_total{queue="rx"}')}


def run(mode, reps, mib, mem):
    cmdline = "echo=tcp" + ("" if mode == "on" else " vnet.guest_tso=off")
    data = pattern(mib << 20)
    rates = []
    with Guest(mem=mem, cmdline=cmdline) as g:
        c0 = counters(g)
        for _ in range(reps):
            t = time.perf_counter()
            got = upload(g, data)
            dt = time.perf_counter() - t
            if got != data:
                raise SystemExit(f"{mode}: echo returned {len(got)} bytes, not the {len(data)} sent")
            rates.append(len(data) / dt / 1e6)
        c1 = counters(g)
    d = {k: int(c1[k] - c0[k]) for k in c0}
    frames = d['vireo_vnet_frames_total{queue="rx"}']
    return {"mode": mode, "mb_s": rates, "median_mb_s": statistics.median(rates),
            "rx_frames": frames, "rx_tso_frames": d["vireo_vnet_rx_tso_frames_total"],
            "rx_tso_segments": d["vireo_vnet_rx_tso_segments_total"],
            "bytes_per_rx_frame": round(reps * len(data) / frames) if frames else None}


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--reps", type=int, default=3)
    ap.add_argument("--mib", type=int, default=16)
    ap.add_argument("--mem", type=int, default=256)
    a = ap.parse_args()
    out = []
    for mode in ("on", "off"):
        r = run(mode, a.reps, a.mib, a.mem)
        out.append(r)
        print(f"receive TSO {mode:3}: upload {r['median_mb_s']:.1f} MB/s median of "
              f"{', '.join(f'{x:.1f}' for x in r['mb_s'])}; {r['rx_frames']} frames in "
              f"({r['bytes_per_rx_frame']} upload bytes each), {r['rx_tso_frames']} coalesced "
              f"from {r['rx_tso_segments']} wire segments", flush=True)
    print(json.dumps({"reps": a.reps, "mib": a.mib, "mem": a.mem, "runs": out}))


if __name__ == "__main__":
    main()
