#!/usr/bin/env python3
"""Where a proxied request's time goes: apps/proxy's PVH ELF booted as
`make bench-proxy` boots it (tests/bench/proxy.py: the same QEMU, the same
native nginx backend in the namespace), then for one path at one
concurrency:

- frames: a capture on the tap (tcpdump, --capture seconds of wrk) counted
  per request, each way and on each side (client <-> vireo on port 80,
  vireo <-> upstream on 8081), split into data and bare ACKs / window
  updates; the guest's own frame counters over the profiled run;
- cycles: the guest's instruction pointer sampled over QMP for --seconds of
  wrk (as tests/bench/profile.py does), mapped to functions with nm of the
  ELF; the guest's halted share (its own counter).

A figure, not a test. Needs root (namespace, tap), wrk, nginx, tcpdump, nm.

  proxy_profile.py --elf build/apps/proxy/vireo.elf [--path /64k.bin] [--conns 1]
                   [--seconds 5] [--capture 2] [--top 20] [--callers]
"""
import argparse
import bisect
import collections
import json
import os
import re
import socket
import subprocess
import sys
import tempfile
import threading
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import proxy as bench  # noqa: E402
from profile import print_rips, symbols  # noqa: E402  (tests/bench/profile.py, not the stdlib's)

nsmod = bench.nsmod


class Qmp:
    def __init__(self, path):
        deadline = time.monotonic() + 20
        while True:
            try:
                s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
                s.connect(path)
                break
            except OSError:
                if time.monotonic() > deadline:
                    raise
                time.sleep(0.1)
        self.f = s.makefile("rw")
        self.f.readline()
        self.cmd("qmp_capabilities")

    def cmd(self, command, **arguments):
        msg = {"execute": command}
        if arguments:
            msg["arguments"] = arguments
        self.f.write(json.dumps(msg) + "\n")
        self.f.flush()
        while True:
            reply = json.loads(self.f.readline())
            if "return" in reply:
                return reply["return"]
            if "error" in reply:
                raise RuntimeError(f"QMP {command}: {reply['error']}")

    def hmp(self, line):
        return self.cmd("human-monitor-command", **{"command-line": line})


def sample(q, stop, rips, callers):
    while not stop.is_set():
        try:
            text = q.hmp("info registers")
            m = re.search(r"RIP=([0-9a-f]+)", text)
            b = re.search(r"RBP=([0-9a-f]+)", text)
            if m:
                rips.append(int(m.group(1), 16))
                if callers is not None and b:
                    mem = q.hmp(f"x /1gx {int(b.group(1), 16) + 8:#x}")
                    r = re.search(r":\s*(0x[0-9a-f]+)", mem)
                    callers.append(int(r.group(1), 16) if r else 0)
        except (OSError, ValueError, RuntimeError):
            return
        time.sleep(0.002)


def cpu_times(pid):
    """{tid: seconds on a host CPU} for every thread of pid (schedstat)."""
    out = {}
    try:
        tids = os.listdir(f"/proc/{pid}/task")
    except OSError:
        return out
    for tid in tids:
        try:
            with open(f"/proc/{pid}/task/{tid}/schedstat") as f:
                out[tid] = int(f.read().split()[0]) / 1e9
        except (OSError, ValueError):
            pass
    return out


def metrics(ns, ip):
    r = ns.run("curl", "-sS", "--max-time", "10", f"http://{ip}/metrics")
    out = {}
    for line in r.stdout.decode(errors="replace").splitlines():
        if line.startswith("#") or " " not in line:
            continue
        k, v = line.rsplit(" ", 1)
        try:
            out[k] = float(v)
        except ValueError:
            pass
    return out


def capture(ns, tap, url, conns, secs, tmp):
    """Frames on the tap during secs of wrk, per request: {(side, dir, kind): n}."""
    pcap = os.path.join(tmp, "cap.pcap")
    td = ns.popen("tcpdump", "-i", tap, "-s", "96", "-w", pcap, "tcp", stdout=subprocess.DEVNULL,
                  stderr=subprocess.DEVNULL)
    time.sleep(1.0)
    r = ns.run("wrk", "-t1", f"-c{conns}", f"-d{secs}s", url, timeout=secs + 60)
    time.sleep(0.5)
    td.terminate()
    td.wait(timeout=10)
    out = r.stdout.decode()
    m = re.search(r"^\s+(\d+) requests in", out, re.M)
    nreq = int(m.group(1)) if m else 0
    txt = subprocess.run(["tcpdump", "-nn", "-r", pcap], capture_output=True, text=True).stdout
    counts = collections.Counter()
    sizes = collections.Counter()
    for line in txt.splitlines():
        m = re.search(r"IP (\S+)\.(\d+) > (\S+)\.(\d+): Flags \[([^\]]*)\].*length (\d+)", line)
        if not m:
            continue
        sport, dport, flags, ln = int(m.group(2)), int(m.group(4)), m.group(5), int(m.group(6))
        if 80 in (sport, dport):
            side = "client"
            d = "from vireo" if sport == 80 else "to vireo"
        elif bench.BACKEND_PORT in (sport, dport):
            side = "upstream"
            d = "from vireo" if dport == bench.BACKEND_PORT else "to vireo"
        else:
            continue
        kind = "data" if ln else ("syn/fin/rst" if re.search(r"[SFR]", flags) else "ack")
        counts[(side, d, kind)] += 1
        if ln:
            sizes[(side, d)] += ln
    return nreq, counts, sizes, out


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--elf", required=True)
    ap.add_argument("--path", default="/64k.bin")
    ap.add_argument("--conns", type=int, default=1)
    ap.add_argument("--seconds", type=int, default=5)
    ap.add_argument("--capture", type=int, default=2)
    ap.add_argument("--mem", type=int, default=256)
    ap.add_argument("--top", type=int, default=20)
    ap.add_argument("--callers", action="store_true")
    ap.add_argument("--no-sample", action="store_true")
    a = ap.parse_args()
    if os.geteuid() != 0 or not nsmod.available():
        raise SystemExit("proxy_profile: needs root (network namespace, tap device)")
    addrs, names = symbols(a.elf)
    tmp = tempfile.mkdtemp(prefix="vireo-proxy-prof-")
    qsock = os.path.join(tmp, "qmp.sock")
    with nsmod.Netns() as ns:
        be = bench.backend(ns, tmp)
        try:
            g = bench.Guest(ns, "vireo", a, os.path.join(tmp, "console.log"),
                            extra=["-qmp", f"unix:{qsock},server=on,wait=off"])
            try:
                url = f"http://{ns.guest_ip}{a.path}"
                ns.run("wrk", "-t1", f"-c{a.conns}", "-d1s", url, timeout=60)	# warm-up
                nreq, counts, sizes, _ = capture(ns, ns.tap, url, a.conns, a.capture, tmp)
                q = Qmp(qsock)
                before = metrics(ns, ns.guest_ip)
                rips, callers, stop = [], ([] if a.callers else None), threading.Event()
                t = threading.Thread(target=sample, args=(q, stop, rips, callers))
                t0 = time.monotonic()
                cpu0 = cpu_times(g.proc.pid)
                if not a.no_sample:
                    t.start()
                try:
                    r = ns.run("wrk", "-t1", f"-c{a.conns}", f"-d{a.seconds}s", "--latency", url,
                               timeout=a.seconds + 60)
                finally:
                    stop.set()
                    if t.is_alive():
                        t.join()
                elapsed = time.monotonic() - t0
                cpu1 = cpu_times(g.proc.pid)
                after = metrics(ns, ns.guest_ip)
            finally:
                g.stop()
        finally:
            be.kill()
            be.wait()
    out = r.stdout.decode()
    rps = re.search(r"Requests/sec:\s+([\d.]+)", out)
    rps = float(rps.group(1)) if rps else 0.0
    p99 = re.search(r"^\s+99%\s+(\S+)", out, re.M)
    print(f"load {open('/proc/loadavg').read().split()[0:3]}")
    print(f"wrk -c{a.conns} {a.path} {a.seconds}s: {rps:.0f} req/s, p99 {p99.group(1) if p99 else '?'}"
          f" (sampled: the samples slow the guest)")
    print(f"capture: {nreq} requests in {a.capture}s (not sampled); frames per request:")
    for key in sorted(counts):
        extra = f"  {sizes[key[:2]] / max(counts[key], 1):.0f} B avg" if key[2] == "data" else ""
        print(f"  {key[0]:9} {key[1]:11} {key[2]:12} {counts[key] / max(nreq, 1):6.2f}{extra}")
    nreqs = rps * a.seconds
    for k in ("vireo_vnet_tx_frames_total", "vireo_vnet_rx_frames_total", "vireo_vnet_tso_frames_total",
              "vireo_vnet_rx_tso_frames_total", "vireo_vnet_interrupts_total"):
        if k in after and nreqs:
            print(f"  {k} per request {(after[k] - before.get(k, 0)) / nreqs:.2f}")
    used = sorted((cpu1[k] - cpu0.get(k, 0) for k in cpu1), reverse=True)
    if nreqs and used:
        print(f"QEMU: busiest thread {1e6 * used[0] / nreqs:.0f} us of host CPU per request, all threads "
              f"{1e6 * sum(used) / nreqs:.0f} us ({100.0 * used[0] / elapsed:.0f}% of a CPU)")
    halted = after.get("vireo_loop_halted_seconds_total", 0) - before.get("vireo_loop_halted_seconds_total", 0)
    if halted:
        print(f"guest halted {100.0 * halted / elapsed:.1f}% of {elapsed:.1f} s"
              + (f", busy {1e6 * (elapsed - halted) / nreqs:.0f} us per request" if nreqs else ""))

    def sym(rip):
        i = bisect.bisect_right(addrs, rip) - 1
        return names[i] if i >= 0 else f"{rip:#x}"
    print_rips(rips, callers, sym, a.top)


if __name__ == "__main__":
    main()
