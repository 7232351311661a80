#!/usr/bin/env python3
"""Where the guest's time goes under load: boots vireo on a tap in a network
namespace of its own (tests/matrix/mxlib.Guest), runs wrk against it and, for
the same seconds, samples the guest's instruction pointer over QMP
(`info registers`, a few hundred samples a second at most; TCG stops the
vCPU between translation blocks to answer, so a sample is where the guest
was, not where QEMU was). Each RIP is mapped to the function around it with
`nm` of the unrelocated image (build/vireo.so) and the load address the
kernel prints at boot ("image ... at 0x...").

Prints wrk's figures (requests/s, MB/s, p50/p99), the busiest functions by
share of samples, and the /metrics deltas of the transmit path over the run
(frames, interrupts, backlog), the guest's halted share (its own counter)
and, for QEMU's two busiest threads, the time on a host CPU and the time
runnable but waiting for one (schedstat): on a shared host a vCPU kept
waiting looks idle to RIP samples. Needs root (namespace, tap), wrk and nm.

  tests/bench/profile.py [--conns 32] [--seconds 10] [--path /64k.bin]
                         [--image build/vireo.img] [--mem 256] [--top 15]
                         [--cmdline "vnet.tso=off"] [--no-sample] [--callers]
                         [--https] [--close] [--iommu]
A figure, not a test: nothing here fails when the guest is slow."""
import argparse
import bisect
import collections
import os
import re
import subprocess
import sys
import threading
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(os.path.dirname(HERE), "matrix"))

from mxlib import ROOT, Guest  # noqa: E402

TX_KEYS = ("vireo_vnet_tx_frames_total", "vireo_vnet_interrupts_total", "vireo_netif_tx_backlog_peak",
           "vireo_netif_tx_backlogged_total", "vireo_netif_tx_backlog_waits_total")


def symbols(elf):
    out = subprocess.run(["nm", "-n", "--defined-only", elf], capture_output=True, text=True, check=True).stdout
    addrs, names = [], []
    for line in out.splitlines():
        parts = line.split()
        if len(parts) == 3 and parts[1] in "tTwW":
            addrs.append(int(parts[0], 16))
            names.append(parts[2])
    return addrs, names


def sample(vm, stop, rips, callers):
    """RIPs into rips; with callers (a list), also each sample's return
    address one frame up ([RBP+8]; the kernel keeps frame pointers, leaf
    functions included), read right after the registers (the vCPU may have
    moved on in between: a few callers are noise)."""
    while not stop.is_set():
        try:
            text = vm.qmp("human-monitor-command", **{"command-line": "info registers"})
            m = re.search(r"RIP=([0-9a-f]+)", text)
            b = re.search(r"RBP=([0-9a-f]+)", text)
            if m:
                rips.append(int(m.group(1), 16))
                if callers is not None and b:
                    mem = vm.qmp("human-monitor-command", **{"command-line": f"x /1gx {int(b.group(1), 16) + 8:#x}"})
                    r = re.search(r":\s*(0x[0-9a-f]+)", mem)
                    callers.append(int(r.group(1), 16) if r else 0)
        except (OSError, ValueError):
            return
        time.sleep(0.002)


def print_rips(rips, callers, sym, top, where=""):
    """The top functions by share of the RIP samples, each with its three
    commonest callers when callers were sampled (one per RIP, 0 if none)."""
    counts = collections.Counter(sym(r) for r in rips)
    total = max(len(rips), 1)
    print(f"{len(rips)} RIP samples{' ' + where if where else ''}:")
    for name, n in counts.most_common(top):
        line = f"  {100.0 * n / total:5.1f}%  {name}"
        if callers:
            by = collections.Counter(sym(c) for r, c in zip(rips, callers) if sym(r) == name)
            line += "  <- " + ", ".join(f"{k} {v}" for k, v in by.most_common(3))
        print(line)


def thread_times(pids):
    """{(tid, name): (seconds on a host CPU, seconds runnable but waiting for
    one)} for every thread of pids, from /proc/<pid>/task/<tid>/schedstat."""
    out = {}
    for pid in pids:
        try:
            tids = os.listdir(f"/proc/{pid}/task")
        except OSError:
            continue
        for tid in tids:
            try:
                with open(f"/proc/{pid}/task/{tid}/comm") as f:
                    name = f.read().strip()
                with open(f"/proc/{pid}/task/{tid}/schedstat") as f:
                    run, wait = f.read().split()[:2]
            except (OSError, ValueError):
                continue
            out[(tid, name)] = (int(run) / 1e9, int(wait) / 1e9)
    return out


def wrk_figures(text):
    fig = {}
    m = re.search(r"Requests/sec:\s+([\d.]+)", text)
    fig["req_s"] = float(m.group(1)) if m else 0.0
    m = re.search(r"Transfer/sec:\s+([\d.]+)([KMG]?)B", text)
    if m:
        fig["mb_s"] = float(m.group(1)) * {"": 1e-6, "K": 1024e-6, "M": 1.048576, "G": 1073.741824}[m.group(2)]
    for pct in ("50", "99"):
        m = re.search(rf"^\s+{pct}%\s+([\d.]+)(us|ms|s)", text, re.M)
        if m:
            fig[f"p{pct}_ms"] = float(m.group(1)) * {"us": 1e-3, "ms": 1.0, "s": 1e3}[m.group(2)]
    m = re.search(r"Non-2xx or 3xx responses: (\d+)|Socket errors: (.*)", text)
    fig["errors"] = m.group(0) if m else ""
    return fig


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--conns", type=int, default=32)
    ap.add_argument("--seconds", type=int, default=10)
    ap.add_argument("--path", default="/64k.bin")
    ap.add_argument("--image", default=os.path.join(ROOT, "build", "vireo.img"))
    ap.add_argument("--so", default=os.path.join(ROOT, "build", "vireo.so"))
    ap.add_argument("--mem", type=int, default=256)
    ap.add_argument("--top", type=int, default=15)
    ap.add_argument("--cmdline", default="")
    ap.add_argument("--no-sample", action="store_true", help="wrk and /metrics only (no QMP sampling)")
    ap.add_argument("--callers", action="store_true", help="also the caller of each sample (one frame up)")
    ap.add_argument("--https", action="store_true", help="over HTTPS on port 443 (a make TLS=1 image)")
    ap.add_argument("--iommu", action="store_true",
                    help="the NIC behind -device intel-iommu with iommu_platform=on (translation on, "
                         "as tests/bench/iommu.py boots it; stops if the log does not say so)")
    ap.add_argument("--close", action="store_true",
                    help="'Connection: close' (with --https: a new TLS handshake per request)")
    a = ap.parse_args()
    addrs, names = symbols(a.so)
    dev = dict(device_opts="disable-legacy=on,iommu_platform=on", extra=["-device", "intel-iommu"]) \
        if a.iommu else {}
    with Guest(mem=a.mem, image=a.image, cmdline=a.cmdline, **dev) as g:
        if a.iommu and not re.search(r"^vtd0: 00:02\.0 translated in domain", g.vm.text, re.M):
            sys.exit("profile: translation is not on for the NIC; see the boot log:\n" + g.vm.text[-2000:])
        m = re.search(r"image \d+ KiB at (0x[0-9a-f]+)", g.vm.text)
        base = int(m.group(1), 16) if m else 0
        url = f"https://{g.ip}:443{a.path}" if a.https else f"http://{g.ip}{a.path}"
        hdr = ["-H", "Connection: close"] if a.close else []
        g.ns.run("wrk", "-t1", "-c", str(a.conns), "-d", "2", *hdr, url, timeout=60)  # warm-up
        before = g.metrics()
        pids = g.vm._pids()
        threads0, t0 = thread_times(pids), time.monotonic()
        rips, stop = [], threading.Event()
        callers = [] if a.callers else None
        t = threading.Thread(target=sample, args=(g.vm, stop, rips, callers))
        if not a.no_sample:
            t.start()
        try:
            r = g.ns.run("wrk", "-t1", "-c", str(a.conns), "-d", str(a.seconds), "--latency", *hdr, url,
                         timeout=a.seconds + 60)
        finally:
            stop.set()
            if t.is_alive():
                t.join()
        threads1, elapsed = thread_times(pids), time.monotonic() - t0
        after = g.metrics()
        text = r.stdout.decode()
    fig = wrk_figures(text)
    print(f"wrk -t1 -c{a.conns} -d{a.seconds}s {a.path}: {fig.get('req_s', 0):.0f} req/s, "
          f"{fig.get('mb_s', 0):.1f} MB/s, p50 {fig.get('p50_ms', 0):.2f} ms, p99 {fig.get('p99_ms', 0):.2f} ms "
          f"{fig['errors']}")
    def sym(rip):
        i = bisect.bisect_right(addrs, rip - base) - 1
        return names[i] if i >= 0 and base else f"{rip:#x}"

    print_rips(rips, callers, sym, a.top, f"(image at {base:#x})")
    # Where the vCPU's time went: the guest's own halted time (its loop's
    # counter) against the host's view of QEMU's busiest thread (the vCPU
    # under TCG): on a CPU, or runnable and waiting for one. A RIP sample
    # taken while the host keeps the vCPU off its CPU shows where the guest
    # last stopped, often the halt: the halted share below is the real one.
    halted = after.get("vireo_loop_halted_seconds_total", 0) - before.get("vireo_loop_halted_seconds_total", 0)
    if halted:
        print(f"guest halted {100.0 * halted / elapsed:.1f}% of {elapsed:.1f} s")
    busiest = sorted(((threads1[k][0] - threads0.get(k, (0, 0))[0], threads1[k][1] - threads0.get(k, (0, 0))[1], k[1])
                      for k in threads1), reverse=True)[:2]
    for run, wait, name in busiest:
        nreq = fig.get("req_s", 0) * a.seconds
        print(f"QEMU thread {name}: on a host CPU {100.0 * run / elapsed:.1f}%, "
              f"runnable but waiting for one {100.0 * wait / elapsed:.1f}%"
              + (f", {1e3 * run / nreq:.2f} ms of host CPU per request" if nreq else ""))
    reqs = fig.get("req_s", 0) * a.seconds
    if halted and reqs:
        # busy = not halted; includes the /metrics read after the run and the
        # time QMP samples stop the vCPU
        busy = elapsed - halted / 1e6
        print(f"guest busy {busy:.2f} s of {elapsed:.1f} s, {1e6 * busy / reqs:.1f} us per request")
    print("/metrics over the run:")
    for k in sorted(after):
        if k.startswith(("vireo_vnet_tx", "vireo_netif_tx", "vireo_lwip_heap_pages", "vireo_lwip_mem_", "vireo_loop_")) \
                or k in TX_KEYS:
            d = after[k] - before.get(k, 0)
            print(f"  {k} {before.get(k, 0):.0f} -> {after[k]:.0f} ({d:+.0f})")


if __name__ == "__main__":
    main()
