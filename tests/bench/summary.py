#!/usr/bin/env python3
"""Summarise one `make bench` run: the shared harness's records (run.sh,
one JSON line per boot) and tests/bench/extra.py's (Connection: close,
per-request costs, idle CPU, vireo's counters and boot timeline, the
coalescing boots). Prints one table, figure | nginx peer | vireo | ratio
(vireo / nginx), then the coalescing table (off | adaptive), and writes
everything as JSON. Cells are the median over boots, with [min..max] when
there is more than one.

  summary.py --harness FILE --extra FILE --out FILE [--peer NAME] [--vireo NAME]
             [--size LABEL=PATH[:PEERPATH]]... [--elapsed S] [--meta K=V]...
"""
import argparse
import json
import os
import re
import statistics

TIMELINE = (("exit_boot_services", "ExitBootServices"), ("pci", "PCI scan done"),
            ("drivers", "drivers probed (DRIVER_OK)"), ("link", "link up"),
            ("address", "address (DHCP)"), ("serving", "serving (ready)"))
LOADS = (("small-c1", "612 B, c1"), ("small-c32", "612 B, c32"), ("large-c1", "64 KiB, c1"),
         ("large-c32", "64 KiB, c32"))


def keepalive_loads(conns):
    """The harness's keep-alive loads for its --conns (BENCH_CONNS)."""
    cs = [int(c) for c in conns.split()]
    return tuple((f"{k}-c{c}", f"{lbl}, c{c}") for k, lbl in (("small", "612 B"), ("large", "64 KiB")) for c in cs)


def get(rec, path):
    cur = rec
    for p in path.split("."):
        if not isinstance(cur, dict) or p not in cur:
            return None
        cur = cur[p]
    return cur if isinstance(cur, (int, float)) and not isinstance(cur, bool) else None


def stats(vals):
    vals = [v for v in vals if v is not None]
    if not vals:
        return None
    return {"median": statistics.median(vals), "min": min(vals), "max": max(vals), "n": len(vals)}


def fmt(s, f):
    if s is None:
        return "-"
    txt = f.format(s["median"])
    if s["n"] > 1 and s["min"] != s["max"]:
        txt += f" [{f.format(s['min'])}..{f.format(s['max'])}]"
    return txt


def read_jsonl(path):
    out = []
    if path and os.path.exists(path):
        with open(path) as f:
            for line in f:
                line = line.strip()
                if line:
                    out.append(json.loads(line))
    return out


def serial_timeline(rundir):
    try:
        with open(os.path.join(rundir, "serial.log"), "rb") as f:
            text = f.read().decode("utf-8", "replace")
    except OSError:
        return None
    lines = re.findall(r"^boot: timeline \(ms since efi_main\): (.*?)\r?$", text, re.M)
    return {k: float(v) for k, v in (kv.split("=") for kv in lines[-1].split())} if lines else None


class Table:
    def __init__(self, cols):
        self.cols = cols
        self.rows = []	# (section, figure, [stats...], fmt, ratio)

    def section(self, name):
        self.rows.append((name, None, None, None, None))

    def add(self, figure, cells, f="{:.2f}", ratio=True):
        r = None
        if ratio and cells[0] and cells[1] and cells[0]["median"]:
            r = cells[1]["median"] / cells[0]["median"]
        self.rows.append((None, figure, cells, f, r))

    def render(self, ratio_label):
        head = ["figure", *self.cols, ratio_label]
        body = []
        for sec, fig, cells, f, r in self.rows:
            if sec:
                body.append([f"-- {sec}", "", "", ""])
            else:
                body.append([fig, *(fmt(c, f) for c in cells), "-" if r is None else f"{r:.2f}x"])
        w = [max(len(x[i]) for x in [head] + body) for i in range(len(head))]
        line = lambda x: "  ".join(c.ljust(w[i]) if i == 0 else c.rjust(w[i]) for i, c in enumerate(x))  # noqa: E731
        out = [line(head), "  ".join("-" * n for n in w)]
        out += [line(x) if not x[0].startswith("-- ") else x[0] for x in body]
        return "\n".join(out)

    def json(self):
        out, sec = [], None
        for s, fig, cells, f, r in self.rows:
            if s:
                sec = s
                continue
            out.append({"section": sec, "figure": fig, **{c: cells[i] for i, c in enumerate(self.cols)},
                        "ratio": r})
        return out


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--harness", required=True)
    ap.add_argument("--extra", required=True)
    ap.add_argument("--out", required=True)
    ap.add_argument("--peer", default="linux-nginx-uefi")
    ap.add_argument("--vireo", default="vireo")
    ap.add_argument("--size", action="append", default=[], help="LABEL=VIREO_PATH[:PEER_PATH][@alloc]")
    ap.add_argument("--elapsed", type=float)
    ap.add_argument("--conns", default="1 32", help="the harness's wrk connection counts (BENCH_CONNS)")
    ap.add_argument("--meta", action="append", default=[])
    a = ap.parse_args()

    hrec = [r for r in read_jsonl(a.harness) if r.get("ok")]
    hfail = [r for r in read_jsonl(a.harness) if not r.get("ok")]
    xall = read_jsonl(a.extra)
    xrec = [r for r in xall if r.get("ok")]
    H = {g: [r for r in hrec if r.get("guest") == g] for g in (a.peer, a.vireo)}
    X = {role: [r for r in xrec if r.get("role") == role] for role in ("peer", "vireo", "vireo-off")}
    hs = lambda g, p: stats([get(r, p) for r in H[g]])  # noqa: E731
    xs = lambda role, p: stats([get(r, p) for r in X[role]])  # noqa: E731

    t = Table(["nginx peer", "vireo"])
    t.section(f"boot (harness, OVMF, tap; n={len(H[a.peer])}/{len(H[a.vireo])} boots)")
    t.add("QEMU start -> ready marker (s)", [hs(a.peer, "boot.ready_s"), hs(a.vireo, "boot.ready_s")])
    t.add("QEMU start -> first HTTP 200 (s)", [hs(a.peer, "boot.http200_s"), hs(a.vireo, "boot.http200_s")])
    t.section(f"boot, wall clock polled every 5 ms (extra boots; n={len(X['peer'])}/{len(X['vireo']) + len(X['vireo-off'])})")
    vx = X["vireo"] + X["vireo-off"]
    t.add("QEMU start -> first serial byte, OVMF (s)",
          [xs("peer", "boot.first_serial_byte_s"), stats([get(r, "boot.first_serial_byte_s") for r in vx])])
    t.add("QEMU start -> vireo banner, after ExitBootServices (s)",
          [None, stats([get(r, "boot.banner_s") for r in vx])], ratio=False)
    t.add("QEMU start -> ready marker (s)",
          [xs("peer", "boot.ready_s"), stats([get(r, "boot.ready_s") for r in vx])])
    tls = [serial_timeline(r.get("rundir", "")) for r in H[a.vireo]] + [r.get("timeline_ms") for r in vx]
    tls = [x for x in tls if x]
    t.section(f"vireo boot timeline, ms since efi_main (kernel TSC; n={len(tls)} boots)")
    for key, label in TIMELINE:
        t.add(f"efi_main -> {label} (ms)", [None, stats([x.get(key) for x in tls])], f="{:.1f}", ratio=False)

    for close in (False, True):
        if not close:
            t.section(f"load, keep-alive (harness: wrk -t1, {hrec[0]['load_params']['duration_s'] if hrec else '?'} s each)")
            src = lambda g, p: hs(g, p)  # noqa: E731
            g2 = (a.peer, a.vireo)
            suffix = ""
        else:
            t.section("load, Connection: close (extra boots: wrk -t1 -H 'Connection: close')")
            src = lambda g, p: xs(g, p)  # noqa: E731
            g2 = ("peer", "vireo")
            suffix = "-close"
        for key, label in (LOADS if close else keepalive_loads(a.conns)):
            k = key.replace("-", suffix + "-", 1) if close else key
            t.add(f"{label}: req/s", [src(g2[0], f"load.{k}.rps"), src(g2[1], f"load.{k}.rps")], f="{:.0f}")
            if key.startswith("large"):
                t.add(f"{label}: MB/s", [src(g2[0], f"load.{k}.MBps"), src(g2[1], f"load.{k}.MBps")], f="{:.1f}")
            t.add(f"{label}: p50 (ms)", [src(g2[0], f"load.{k}.lat_p50_ms"), src(g2[1], f"load.{k}.lat_p50_ms")])
            t.add(f"{label}: p99 (ms)", [src(g2[0], f"load.{k}.lat_p99_ms"), src(g2[1], f"load.{k}.lat_p99_ms")])
            t.add(f"{label}: wrk errors", [src(g2[0], f"load.{k}.errors"), src(g2[1], f"load.{k}.errors")],
                  f="{:.0f}", ratio=False)

    t.section("per request (extra boots; QEMU CPU time and /metrics deltas around each wrk run)")
    for k, label in (("small-c1", "612 B c1 keep-alive"), ("small-c32", "612 B c32 keep-alive"),
                     ("large-c32", "64 KiB c32 keep-alive"), ("small-close-c1", "612 B c1 close"),
                     ("small-close-c32", "612 B c32 close")):
        t.add(f"host CPU per request, {label} (ms)",
              [xs("peer", f"load.{k}.cpu_ms_per_req"), xs("vireo", f"load.{k}.cpu_ms_per_req")], f="{:.3f}")
    for k, label in (("small-c1", "612 B c1 keep-alive"), ("small-c32", "612 B c32 keep-alive"),
                     ("large-c32", "64 KiB c32 keep-alive"), ("small-close-c32", "612 B c32 close")):
        t.add(f"interrupts per request, {label}", [None, xs("vireo", f"load.{k}.interrupts_per_req")],
              f="{:.3f}", ratio=False)
        t.add(f"polls per request, {label}", [None, xs("vireo", f"load.{k}.polls_per_req")], f="{:.3f}",
              ratio=False)
    t.section("idle (10 s after ready, before any load)")
    t.add("host CPU, QEMU process (% of a core)", [xs("peer", "idle.cpu_pct"), xs("vireo", "idle.cpu_pct")])

    t.section("memory")
    t.add("guest -m (MiB)", [hs(a.peer, "mem_mib"), hs(a.vireo, "mem_mib")], f="{:.0f}")
    t.add("QEMU RSS at ready marker (MiB)", [hs(a.peer, "qemu.rss_ready_mib"), hs(a.vireo, "qemu.rss_ready_mib")],
          f="{:.1f}")
    t.add("QEMU peak RSS, VmHWM (MiB)", [hs(a.peer, "qemu.peak_rss_mib"), hs(a.vireo, "qemu.peak_rss_mib")],
          f="{:.1f}")
    t.add("  of which guest RAM touched (MiB)",
          [hs(a.peer, "qemu.rss_guest_ram_mib"), hs(a.vireo, "qemu.rss_guest_ram_mib")], f="{:.1f}")
    t.add("  of which TCG code buffer (MiB)", [hs(a.peer, "qemu.rss_tcg_mib"), hs(a.vireo, "qemu.rss_tcg_mib")],
          f="{:.1f}")
    me = lambda k, scale=1.0: stats([(r.get("metrics_end") or {}).get(k) and  # noqa: E731
                                     (r["metrics_end"][k] * scale) for r in X["vireo"]])
    # vireo_mem_frames was vireo_mem_frames_total in older results.
    used = stats([((r.get("metrics_end") or {}).get("vireo_mem_frames",
                                                    (r.get("metrics_end") or {}).get("vireo_mem_frames_total", 0))
                   - (r.get("metrics_end") or {}).get("vireo_mem_frames_free", 0)) * 4096 / 2**20
                  for r in X["vireo"] if r.get("metrics_end")])
    t.add("vireo: page frames in use, after the load (MiB)", [None, used], f="{:.2f}", ratio=False)
    t.add("vireo: kernel heap in use, after the load (KiB)", [None, me("vireo_mem_heap_in_use_bytes", 1 / 1024)],
          f="{:.0f}", ratio=False)
    t.add("vireo: kernel heap peak (KiB)", [None, me("vireo_mem_heap_peak_bytes", 1 / 1024)], f="{:.0f}",
          ratio=False)
    t.add("vireo: lwIP heap used, after the load (KiB)", [None, me("vireo_lwip_mem_used_bytes", 1 / 1024)],
          f="{:.0f}", ratio=False)
    t.add("vireo: lwIP heap peak (KiB)", [None, me("vireo_lwip_mem_max_bytes", 1 / 1024)], f="{:.0f}",
          ratio=False)
    t.add("vireo: page-table pages", [None, me("vireo_mem_page_table_pages")], f="{:.0f}", ratio=False)

    sizes = {}
    t.section("sizes")
    for spec in a.size:
        label, _, paths = spec.rpartition("=")
        alloc = paths.endswith("@alloc")
        paths = paths[:-6] if alloc else paths
        vpath, _, ppath = paths.partition(":")

        def size(p):
            if not p or not os.path.exists(p):
                return None
            st = os.stat(p)
            return st.st_blocks * 512 if alloc else st.st_size
        vs, ps = size(vpath), size(ppath)
        sizes[label] = {"vireo": vs, "nginx": ps, "vireo_path": vpath, "nginx_path": ppath or None,
                        "allocated": alloc}
        t.add(f"{label} (KiB)", [ps is not None and {"median": ps / 1024, "min": ps / 1024, "max": ps / 1024, "n": 1}
                                 or None, vs is not None and {"median": vs / 1024, "min": vs / 1024,
                                                              "max": vs / 1024, "n": 1} or None],
              f="{:.0f}", ratio=ps is not None)

    # ---- coalescing: vireo coalesce=off vs adaptive
    c = Table(["coalesce=off", "adaptive"])
    c.section(f"RX interrupts and wakeups (interrupts + coalescing timer polls) per RX frame, /metrics deltas "
              f"(n={len(X['vireo-off'])}/{len(X['vireo'])} boots)")
    for path, label in (("idle", "idle, 10 s"), ("udp.pingpong", "UDP echo ping-pong, 2000 sequential"),
                        ("load.small-c1", "wrk 612 B c1 keep-alive"), ("load.small-c32", "wrk 612 B c32 keep-alive"),
                        ("udp.stream20k", "UDP echo stream, 20k/s for 3 s"),
                        ("udp.stream40k", "UDP echo stream, 40k/s for 3 s"),
                        ("udp.flood", "UDP flood to port 7 (100k x 64 B, <= 5 s)")):
        c.add(f"{label}: rx frames", [xs("vireo-off", f"{path}.rx_frames"), xs("vireo", f"{path}.rx_frames")],
              f="{:.0f}", ratio=False)
        c.add(f"{label}: rx interrupts / rx frame",
              [xs("vireo-off", f"{path}.rx_irq_per_frame"), xs("vireo", f"{path}.rx_irq_per_frame")], f="{:.4f}")
        c.add(f"{label}: rx wakeups / rx frame",
              [xs("vireo-off", f"{path}.rx_wakeups_per_frame"), xs("vireo", f"{path}.rx_wakeups_per_frame")],
              f="{:.4f}")
    c.section("latency and throughput")
    c.add("UDP ping-pong RTT p50 (us)", [xs("vireo-off", "udp.pingpong.rtt_p50_us"), xs("vireo", "udp.pingpong.rtt_p50_us")],
          f="{:.0f}")
    c.add("UDP ping-pong RTT p99 (us)", [xs("vireo-off", "udp.pingpong.rtt_p99_us"), xs("vireo", "udp.pingpong.rtt_p99_us")],
          f="{:.0f}")
    c.add("wrk 612 B c1 p50 (ms)", [xs("vireo-off", "load.small-c1.lat_p50_ms"), xs("vireo", "load.small-c1.lat_p50_ms")])
    c.add("wrk 612 B c1 p99 (ms)", [xs("vireo-off", "load.small-c1.lat_p99_ms"), xs("vireo", "load.small-c1.lat_p99_ms")])
    c.add("wrk 612 B c32 req/s", [xs("vireo-off", "load.small-c32.rps"), xs("vireo", "load.small-c32.rps")], f="{:.0f}")
    for k in ("20k", "40k"):
        c.add(f"UDP stream {k}/s: RTT p50 (us)",
              [xs("vireo-off", f"udp.stream{k}.rtt_p50_us"), xs("vireo", f"udp.stream{k}.rtt_p50_us")], f="{:.0f}")
        c.add(f"UDP stream {k}/s: RTT p99 (us)",
              [xs("vireo-off", f"udp.stream{k}.rtt_p99_us"), xs("vireo", f"udp.stream{k}.rtt_p99_us")], f="{:.0f}")
        c.add(f"UDP stream {k}/s: datagrams echoed",
              [xs("vireo-off", f"udp.stream{k}.echoed"), xs("vireo", f"udp.stream{k}.echoed")], f="{:.0f}")
    c.add("UDP flood: datagrams echoed", [xs("vireo-off", "udp.flood.echoed"), xs("vireo", "udp.flood.echoed")],
          f="{:.0f}")

    def cut(path):
        off, ad = xs("vireo-off", path), xs("vireo", path)
        return off["median"] / ad["median"] if off and ad and ad["median"] else None
    verdict = {"target": "at saturation adaptive cuts RX interrupts per frame >= 4x vs off, ping-pong latency no worse",
               "cut_wrk_c32": cut("load.small-c32.rx_irq_per_frame"), "cut_udp_flood": cut("udp.flood.rx_irq_per_frame"),
               "cut_stream40k": cut("udp.stream40k.rx_irq_per_frame"),
               "cut_stream40k_wakeups": cut("udp.stream40k.rx_wakeups_per_frame"),
               "pingpong_p50_adaptive_over_off": (lambda o, d: d["median"] / o["median"] if o and d else None)(
                   xs("vireo-off", "udp.pingpong.rtt_p50_us"), xs("vireo", "udp.pingpong.rtt_p50_us"))}

    text = t.render("vireo/nginx")
    ctext = c.render("adaptive/off")
    print(text)
    print()
    print("interrupt coalescing (vireo booted with coalesce=off and with the default coalesce=adaptive):")
    print(ctext)
    fmtx = lambda v, u="x": "-" if v is None else f"{v:.2f}{u}"  # noqa: E731
    print(f"saturation cut in RX interrupts/frame (off / adaptive): wrk c32 {fmtx(verdict['cut_wrk_c32'])}, "
          f"UDP flood {fmtx(verdict['cut_udp_flood'])}, UDP stream 40k/s {fmtx(verdict['cut_stream40k'])} "
          f"(wakeups {fmtx(verdict['cut_stream40k_wakeups'])}); "
          f"ping-pong p50 adaptive/off {fmtx(verdict['pingpong_p50_adaptive_over_off'], '')}")
    if hfail or len(xall) != len(xrec):
        print(f"FAILED boots: harness {len(hfail)}, extra {len(xall) - len(xrec)}: " +
              "; ".join(r.get("error", "?") for r in hfail + [r for r in xall if not r.get("ok")]))
    # Figures compare like with like only at one -m for every guest and boot.
    mems = sorted({r.get("mem_mib") for r in hrec + xrec}, key=str)
    if len(mems) > 1:
        print(f"FAILED: guests ran at different -m (MiB): {mems}; the ratios compare unequal machines")
    meta = dict(kv.split("=", 1) for kv in a.meta)
    meta["guest_mem_mib"] = mems
    if a.elapsed is not None:
        meta["elapsed_s"] = round(a.elapsed)
    q = hrec[0] if hrec else {}
    meta.update({"qemu_version": q.get("qemu_version"), "host_nproc": (q.get("host") or {}).get("nproc"),
                 "host_kernel": (q.get("host") or {}).get("kernel"), "cpu": q.get("cpu"), "net": q.get("net"),
                 "harness_run_id": q.get("run_id"), "failed_boots": len(hfail) + len(xall) - len(xrec)})
    out = {"meta": meta, "table": t.json(), "coalescing": c.json(), "coalescing_verdict": verdict,
           "sizes": sizes, "text": text + "\n\n" + ctext}
    os.makedirs(os.path.dirname(os.path.abspath(a.out)), exist_ok=True)
    with open(a.out, "w") as f:
        json.dump(out, f, indent=1)
        f.write("\n")
    return 1 if len(mems) > 1 else 0


if __name__ == "__main__":
    raise SystemExit(main())
