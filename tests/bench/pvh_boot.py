#!/usr/bin/env python3
"""QEMU start to first HTTP 200, printed (never asserted): the UEFI image
under OVMF vs build/vireo.elf through -kernel (PVH), on each machine given,
user networking with a host forward, TCG. Also the kernel's own
entry -> ready (TSC timeline) and QEMU's peak RSS. BENCH_BOOTS runs each
(default 5); the median is printed with every run.
Usage: pvh_boot.py [MACHINE:MODE ...]  (default q35:ovmf q35:pvh pc:pvh microvm:pvh;
microvm is acpi=off with a modern virtio-mmio NIC)"""
import os
import re
import socket
import statistics
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "qemu"))
from httpc import free_tcp_port  # noqa: E402
from vm import IMAGE, PVH_ELF, Vm  # noqa: E402



def first_200(port, deadline):
    req = b"GET /healthz HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n"
    while time.monotonic() < deadline:
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=0.5) as s:
                s.settimeout(0.5)
                s.sendall(req)
                if s.recv(64).startswith(b"HTTP/1.1 200"):
                    return time.monotonic()
        except OSError:
            pass
        time.sleep(0.01)
    return None


def peak_rss_kib(vm):
    best = 0
    for pid in vm._pids():
        try:
            with open(f"/proc/{pid}/status") as f:
                m = re.search(r"^VmHWM:\s+(\d+) kB", f.read(), re.M)
            if m:
                best = max(best, int(m.group(1)))
        except OSError:
            pass
    return best


def one(machine, mode, mem):
    port = free_tcp_port()
    nic = "virtio-net-device,netdev=n0" if machine == "microvm" else "virtio-net-pci,netdev=n0,romfile="
    extra = ["-netdev", f"user,id=n0,restrict=on,hostfwd=tcp:127.0.0.1:{port}-:80", "-device", nic]
    kw = {"kernel": PVH_ELF} if mode == "pvh" else {"image": IMAGE}
    if machine == "microvm":
        machine = "microvm,acpi=off"
        extra += ["-global", "virtio-mmio.force-legacy=false"]
    t0 = time.monotonic()
    with Vm(machine=machine, mem=mem, extra=extra, **kw) as vm:
        t1 = first_200(port, t0 + 120)
        if t1 is None:
            raise SystemExit(f"{machine}:{mode}: no HTTP 200 within 120 s\n{vm.text[-3000:]}")
        # The last timeline line (printed at `vireo: ready`): kernel ready
        # and serving, both on the guest's own TSC clock.
        tl = re.findall(r"^boot: timeline \(ms since (\S+)\): (.*)$", vm.text, re.M)[-1]
        kv = dict(x.split("=") for x in tl[1].split())
        return t1 - t0, float(kv["ready"]), tl[0], peak_rss_kib(vm), float(kv.get("serving", "nan"))


def main():
    runs = int(os.environ.get("BENCH_BOOTS", "5"))
    configs = sys.argv[1:] or ["q35:ovmf", "q35:pvh", "pc:pvh", "microvm:pvh"]
    for c in configs:
        machine, mode = c.split(":")
        mem = 64 if mode == "ovmf" else 16
        res = [one(machine, mode, mem) for _ in range(runs)]
        walls = [r[0] for r in res]
        readys = [r[1] for r in res]
        servings = [r[4] for r in res]
        print(f"{machine:6s} {mode:5s} -m {mem:<3d} QEMU start -> first HTTP 200: median {statistics.median(walls):6.3f} s"
              f" (runs {', '.join(f'{w:.3f}' for w in walls)}); {res[0][2]} -> kernel ready median"
              f" {statistics.median(readys):.1f} ms ({min(readys):.1f}..{max(readys):.1f}), -> serving median"
              f" {statistics.median(servings):.1f} ms ({min(servings):.1f}..{max(servings):.1f});"
              f" QEMU peak RSS {max(r[3] for r in res) / 1024:.1f} MiB", flush=True)


if __name__ == "__main__":
    main()
