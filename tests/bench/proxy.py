#!/usr/bin/env python3
"""`make bench-proxy`: apps/proxy against nginx (`proxy_pass` with upstream
keep-alive) and HAProxy (`http-reuse always`) on Linux (the peers of
tests/bench/peer/build.sh nginx-proxy haproxy), each booted in turn with
-kernel in the same QEMU (q35, TCG, -m --mem, one CPU, virtio-net-pci on a
tap in one network namespace), all three in front of the same native
nginx backend in that namespace (10.77.0.1:8081, keep-alive, no access
log) serving a 612 B /index.html and a 65,536 B /64k.bin. wrk in the
namespace: requests per second and p99 latency at 1 and 32 connections for
each file, --duration seconds a figure after a 1 s warm-up; non-2xx
answers and socket errors are printed next to a figure. Prints a table
with vireo's ratios to each peer, and one JSON line. Figures only: nothing
is asserted about speed.

  proxy.py --elf build/apps/proxy/vireo.elf [--duration 5] [--mem 256] [--systems vireo,nginx-proxy,haproxy]
"""
import argparse
import json
import os
import re
import signal
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, os.path.join(ROOT, "tests", "qemu"))
import netns as nsmod  # noqa: E402

PEERS = os.environ.get("BENCH_OUT", os.path.join(ROOT, "build", "bench"))
BACKEND_PORT = 8081
FILES = {"612 B": "/index.html", "64 KiB": "/64k.bin"}
BACKEND_CONF = """
worker_processes 1; daemon off; master_process off;
error_log {d}/error.log; pid {d}/nginx.pid;
events {{ worker_connections 1024; }}
http {{
    access_log off;
    keepalive_requests 10000000;
    client_body_temp_path {d}; proxy_temp_path {d}; fastcgi_temp_path {d}; uwsgi_temp_path {d}; scgi_temp_path {d};
    server {{ listen {ip}:{port}; root {d}/www; }}
}}
"""


def backend(ns, d):
    os.makedirs(os.path.join(d, "www"), exist_ok=True)
    with open(os.path.join(d, "www", "index.html"), "wb") as f:
        f.write((b"<!doctype html><title>vireo proxy bench</title>" + b"x" * 612)[:611] + b"\n")
    with open(os.path.join(d, "www", "64k.bin"), "wb") as f:
        f.write(bytes(i * 7 % 251 for i in range(65536)))
    with open(os.path.join(d, "nginx.conf"), "w") as f:
        f.write(BACKEND_CONF.format(d=d, ip=ns.host_ip, port=BACKEND_PORT))
    p = ns.popen("nginx", "-c", os.path.join(d, "nginx.conf"), "-p", d, stdout=subprocess.DEVNULL,
                 stderr=subprocess.DEVNULL)
    for _ in range(100):
        if ns.run("curl", "-s", "-o", "/dev/null", f"http://{ns.host_ip}:{BACKEND_PORT}/").returncode == 0:
            return p
        time.sleep(0.05)
    p.kill()
    raise SystemExit("the backend nginx did not start")


class Guest:
    def __init__(self, ns, name, a, log, extra=()):
        up = f"{ns.host_ip}:{BACKEND_PORT}"
        if name == "vireo":
            boot = ["-kernel", a.elf, "-append",
                    f"ip={ns.guest_ip}/24 egress.allow={ns.host_ip}/32 proxy.upstream={up}"]
            ready = r"^vireo: ready"
        else:
            d = os.path.join(PEERS, f"peer-{name}")
            if not os.path.exists(os.path.join(d, "initrd.img")):
                raise SystemExit(f"{d} missing: tests/bench/peer/build.sh {name} (make bench-proxy does)")
            # loglevel=5 after quiet: the kernel's warnings (a NETDEV
            # WATCHDOG, a hung task) reach the console log, its chatter not
            boot = ["-kernel", os.path.join(d, "vmlinuz"), "-initrd", os.path.join(d, "initrd.img"), "-append",
                    f"console=ttyS0 quiet loglevel=5 bench.ip={ns.guest_ip}/24 bench.gw={ns.host_ip} "
                    f"bench.upstream={up}"]
            ready = r"READY peer="
        self.log = log
        self.name, self.ns = name, ns
        # QEMU's stderr to a file beside the console's: a pipe nobody reads
        # would stop QEMU once it held 64 KiB of warnings
        self.err = log.replace("-console.log", "-qemu-stderr.log")
        args = ["qemu-system-x86_64", "-machine", "q35", "-accel", "tcg", "-m", str(a.mem), "-smp", "1",
                "-nodefaults", "-no-user-config", "-display", "none", "-serial", f"file:{log}"] + boot + \
            ns.qemu_args() + list(extra)
        with open(self.err, "wb") as err:
            self.proc = subprocess.Popen(ns.wrap + args, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                                         stderr=err, start_new_session=True)
        rx = re.compile(ready, re.M)
        deadline = time.monotonic() + 300
        while True:
            text = open(log, errors="replace").read() if os.path.exists(log) else ""
            if rx.search(text):
                break
            if "BENCH-FAIL" in text or self.proc.poll() is not None or time.monotonic() > deadline:
                self.stop()
                raise SystemExit(f"{name} did not come up:\n{text[-3000:]}")
            time.sleep(0.1)

    def why(self):
        """What a guest that stopped answering left behind (stderr): QEMU
        alive or not, the guest's last console lines, QEMU's stderr, the
        namespace's neighbour entry for it."""
        tail = lambda f: open(f, errors="replace").read()[-1500:] if os.path.exists(f) else ""  # noqa: E731
        neigh = self.ns.run("ip", "neigh", "show", self.ns.guest_ip).stdout.decode().strip()
        print(f"--- {self.name} stopped answering: QEMU "
              f"{'running' if self.proc.poll() is None else 'exited ' + str(self.proc.returncode)}; "
              f"neighbour: {neigh or 'none'}\n--- console (last lines):\n{tail(self.log)}\n"
              f"--- QEMU stderr:\n{tail(self.err)}", file=sys.stderr, flush=True)

    def stop(self):
        if self.proc.poll() is None:
            os.killpg(self.proc.pid, signal.SIGKILL)
            self.proc.wait(timeout=10)


def to_ms(s):
    m = re.match(r"([\d.]+)(us|ms|s)$", s)
    if not m:
        return float("nan")
    return float(m.group(1)) * {"us": 0.001, "ms": 1.0, "s": 1000.0}[m.group(2)]


def wrk(ns, conns, dur, url):
    threads = 1 if conns == 1 else 2
    try:
        r = ns.run("wrk", f"-t{threads}", f"-c{conns}", f"-d{dur}s", "--latency", url, timeout=dur + 60)
    except subprocess.TimeoutExpired:	# a guest that stopped answering mid-connect
        return {"rps": 0.0, "p99_ms": float("nan"), "note": f"wrk failed: no end after {dur + 60} s"}
    out = r.stdout.decode()
    if r.returncode != 0 or "Requests/sec" not in out:
        return {"rps": 0.0, "p99_ms": float("nan"), "note": f"wrk failed: {out[-300:]} {r.stderr.decode()[-300:]}"}
    rps = float(re.search(r"Requests/sec:\s+([\d.]+)", out).group(1))
    p99 = re.search(r"^\s+99%\s+(\S+)", out, re.M)
    non2xx = re.search(r"Non-2xx or 3xx responses: (\d+)", out)
    errs = re.search(r"Socket errors: (.*)", out)
    note = "".join([f"{non2xx.group(1)} non-2xx " if non2xx else "", f"socket errors {errs.group(1)}" if errs else ""])
    return {"rps": rps, "p99_ms": to_ms(p99.group(1)) if p99 else float("nan"), "note": note.strip()}


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--elf", required=True)
    ap.add_argument("--duration", type=int, default=5)
    ap.add_argument("--mem", type=int, default=256)
    ap.add_argument("--systems", default="vireo,nginx-proxy,haproxy")
    a = ap.parse_args()
    systems = a.systems.split(",")
    if os.geteuid() != 0 or not nsmod.available():
        raise SystemExit("bench-proxy: needs root (network namespace, tap device)")
    if "vireo" in systems and not os.path.exists(a.elf):
        raise SystemExit(f"{a.elf} missing: make APP=apps/proxy elf")
    res = {}
    tmp = tempfile.mkdtemp(prefix="vireo-proxy-bench-")
    with nsmod.Netns() as ns:
        be = backend(ns, tmp)
        try:
            for name in systems:
                g = Guest(ns, name, a, os.path.join(tmp, f"{name}-console.log"))
                try:
                    base = f"http://{ns.guest_ip}"
                    for label, path in FILES.items():
                        r = ns.run("curl", "-sS", "--max-time", "20", "-o", "/dev/null", "-w",
                                   "%{http_code} %{size_download}", base + path)
                        want = "200 612" if path == "/index.html" else "200 65536"
                        if r.stdout.decode() != want:
                            raise SystemExit(f"{name} {path}: {r.stdout.decode()} {r.stderr.decode()}")
                    for label, path in FILES.items():
                        for conns in (1, 32):
                            if wrk(ns, conns, 1, base + path)["note"].startswith("wrk failed"):	# warm-up
                                g.why()
                            res[(name, label, conns)] = wrk(ns, conns, a.duration, base + path)
                            v = res[(name, label, conns)]
                            if v["note"].startswith("wrk failed"):
                                g.why()
                            print(f"{name:12} {label:7} c{conns:<3} {v['rps']:9,.0f} req/s  p99 {v['p99_ms']:8.2f} ms"
                                  f"  {v['note']}", flush=True)
                finally:
                    g.stop()
        finally:
            be.kill()
            be.wait()
    print()
    peers = [s for s in systems if s != "vireo"]
    head = f"{'':18}" + "".join(f"{s:>16}" for s in systems)
    if "vireo" in systems:
        head += "".join(f"{'vireo/' + s:>20}" for s in peers)
    print(head)
    for label in FILES:
        for conns in (1, 32):
            for what, unit in (("rps", "req/s"), ("p99_ms", "p99 ms")):
                row = f"{label + ' c' + str(conns) + ' ' + unit:18}"
                for s in systems:
                    v = res[(s, label, conns)][what]
                    row += f"{v:16,.0f}" if what == "rps" else f"{v:16.2f}"
                if "vireo" in systems:
                    for s in peers:
                        pv, vv = res[(s, label, conns)][what], res[("vireo", label, conns)][what]
                        row += f"{(vv / pv if pv else float('nan')):20.2f}"
                print(row)
    print(json.dumps({"duration": a.duration, "mem": a.mem,
                      "figures": {f"{s} {lbl} c{c}": v for (s, lbl, c), v in res.items()}}))


if __name__ == "__main__":
    main()
