#!/usr/bin/env python3
"""Summary of tests/bench/pvh_peer.sh: one row per figure, one column per
guest (median over its ok boots, [min..max]), from the shared harness's JSON
records. entry -> ready is the guest's own clock: vireo's boot timeline
(`ready` = kernel ready, `serving` = the `vireo: ready` line), Linux's
/proc/uptime in its READY line.
Usage: pvh_summary.py RESULTS.jsonl ..."""
import json
import os
import re
import statistics
import sys


def entry_ready(rec):
    """(kernel ready ms, serving ms) from the guest's own clock, or None."""
    m = re.search(r"uptime=([\d.]+)s", rec["boot"].get("ready_line", ""))
    if m:
        return None, float(m.group(1)) * 1000
    try:
        with open(os.path.join(rec["rundir"], "serial.log"), errors="replace") as f:
            text = f.read()
    except OSError:
        return None, None
    tl = re.findall(r"^boot: timeline \(ms since \S+\): (.*)$", text, re.M)
    if not tl:
        return None, None
    kv = dict(x.split("=") for x in tl[-1].split())
    return float(kv["ready"]) if "ready" in kv else None, float(kv["serving"]) if "serving" in kv else None


def cell(vals, fmt):
    vals = [v for v in vals if v is not None]
    if not vals:
        return "-"
    med = statistics.median(vals)
    if len(vals) == 1:
        return fmt.format(med)
    return f"{fmt.format(med)} [{fmt.format(min(vals))}..{fmt.format(max(vals))}]"


def main():
    recs = []
    for path in sys.argv[1:]:
        try:
            with open(path) as f:
                recs += [json.loads(line) for line in f if line.strip()]
        except OSError as e:
            print(f"pvh_summary: {e}", file=sys.stderr)
    guests = []
    for r in recs:
        if r.get("ok") and r["guest"] not in guests:
            guests.append(r["guest"])
    by = {g: [r for r in recs if r["guest"] == g and r.get("ok")] for g in guests}
    rows = [
        ("machine", lambda r: r["machine"], "{}"),
        ("-m (MiB)", lambda r: r["mem_mib"], "{}"),
        ("QEMU start -> first HTTP 200 (s)", lambda r: r["boot"]["http200_s"], "{:.2f}"),
        ("QEMU start -> ready marker (s)", lambda r: r["boot"]["ready_s"], "{:.2f}"),
        ("entry -> kernel ready (ms, own clock)", lambda r: entry_ready(r)[0], "{:.1f}"),
        ("entry -> serving (ms, own clock)", lambda r: entry_ready(r)[1], "{:.1f}"),
        ("612 B c1 (req/s)", lambda r: r["load"]["small-c1"]["rps"], "{:,.0f}"),
        ("612 B c32 (req/s)", lambda r: r["load"]["small-c32"]["rps"], "{:,.0f}"),
        ("64 KiB c1 (MB/s)", lambda r: r["load"]["large-c1"]["MBps"], "{:.1f}"),
        ("64 KiB c32 (MB/s)", lambda r: r["load"]["large-c32"]["MBps"], "{:.1f}"),
        ("wrk errors", lambda r: sum(v.get("errors", 0) for v in r["load"].values()), "{}"),
        ("QEMU peak RSS (MiB)", lambda r: r["qemu"]["peak_rss_mib"], "{:.1f}"),
        ("stop", lambda r: f'{r["stop"]["method"]} {r["stop"]["seconds"]:.2f} s', "{}"),
    ]
    print("| figure | " + " | ".join(f"{g} ({len(by[g])} boots)" for g in guests) + " |")
    print("|---" * (len(guests) + 1) + "|")
    for name, get, fmt in rows:
        cells = []
        for g in guests:
            vals = []
            for r in by[g]:
                try:
                    vals.append(get(r))
                except (KeyError, TypeError):
                    vals.append(None)
            if fmt == "{}":
                vals = [v for v in vals if v is not None]
                cells.append(str(statistics.mode(vals)) if vals else "-")
            else:
                cells.append(cell(vals, fmt))
        print(f"| {name} | " + " | ".join(cells) + " |")
    failed = [r for r in recs if not r.get("ok")]
    for r in failed:
        print(f"failed boot: {r['guest']} rep {r.get('rep')}: {r.get('error', '?')}")


if __name__ == "__main__":
    main()
