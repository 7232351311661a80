#!/usr/bin/env python3
"""`make bench-recovery`: how long the store's recovery takes against the
size of its log (issue 31: up to 1 GiB; goal under 1 s per 100 MiB of log;
docs/storage.md "Recovery time").

For each size in --sizes (MiB):
  1. tests/bench/store_log.c (--tool) makes a data disk in
     build/bench/recovery/ with the store's own code run on the host: a
     format, then puts of 1..4 KiB values over --keys keys in turn from 32
     writers at once (group commit) until the batches written reach the
     size. The disk is the size plus an eighth plus 16 MiB, so compaction
     never runs: the whole log is replayed at open.
  2. apps/kv's PVH ELF boots on it (-kernel, q35, TCG, one CPU, -m --mem;
     the data disk `cache=none,aio=threads` as virtio-blk-pci, as `make
     bench-store` gives it; kv.max_bytes and app.mem raised so that kv
     loads every key). The guest's console line gives the open's time
     (superblocks and recovery, measured in the guest) and the bytes it
     read; the script times QEMU's start to the first answered GET (the
     boot, the recovery, and kv loading every value into memory).
  3. Every key is read back over HTTP and compared with the value the
     tool wrote last for it (the same formula as store_log.c), and the
     console's key count must be the keys written: a recovery that lost or
     mixed anything fails the run instead of looking fast.

Prints a table (log MiB, MiB read, recovery ms, MiB/s, s per 100 MiB,
first GET) and one JSON line. Figures only: speed is not asserted.

  recovery.py --elf build/apps/kv/vireo.elf --tool build/bench/store_log
              [--sizes "64 256 512 1024"] [--keys 1024] [--mem 256] [--keep]
"""
import argparse
import http.client
import json
import os
import re
import signal
import subprocess
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "qemu"))
from httpc import free_tcp_port  # noqa: E402

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
OUT = os.path.join(ROOT, "build", "bench", "recovery")
OPENED = re.compile(r"^store: opened virtio\d+ \(serial vireo-data\): (\d+) keys, (\d+) records in (\d+) batches "
                    r"over (\d+) segments \((\d+) KiB\); (\d+) KiB read in (\d+) ms \((\d+) ms checking and replaying\)(.*)$", re.M)
LOADED = re.compile(r"^kv: (\d+) keys loaded from the data disk \((\d+) skipped\)", re.M)


def value(k, v):
    """store_log.c's recovery_value(k, v)."""
    n = (1024 + ((k * 7919 + v * 104729) & 0xffffffff) % 3073)
    head = f"k={k};v={v};".encode()
    base = 37 * k + 11 * v
    return head + bytes((base + j) & 0xff for j in range(len(head), n))


def loadavg():
    with open("/proc/loadavg") as f:
        return float(f.read().split()[0])


def get(port, key, timeout=5):
    c = http.client.HTTPConnection("127.0.0.1", port, timeout=timeout)
    try:
        c.request("GET", f"/kv/{key}")
        r = c.getresponse()
        return r.status, r.read()
    finally:
        c.close()


def run_size(a, mib):
    os.makedirs(OUT, exist_ok=True)
    disk = os.path.join(OUT, f"log-{mib}.img")
    log = os.path.join(OUT, f"log-{mib}-console.log")
    t = time.monotonic()
    made = json.loads(subprocess.run([a.tool, disk, str(mib), str(a.keys)], check=True, capture_output=True,
                                     text=True).stdout)
    make_s = time.monotonic() - t
    if made["compactions"]:
        raise SystemExit(f"{mib} MiB: compaction ran while the log was made")
    writes, keys = made["writes"], made["keys"]
    want = {}
    for k in range(min(keys, writes)):
        want[f"r{k:05d}"] = value(k, writes // keys + (1 if k < writes % keys else 0) - 1)
    if os.path.exists(log):
        os.unlink(log)
    port = free_tcp_port()
    args = ["qemu-system-x86_64", "-machine", "q35", "-accel", "tcg", "-m", str(a.mem), "-smp", "1",
            "-nodefaults", "-no-user-config", "-display", "none", "-serial", f"file:{log}",
            "-kernel", a.elf, "-append", f"kv.max_bytes={16 << 20} app.mem={32 << 20}",
            "-netdev", f"user,id=n0,restrict=on,hostfwd=tcp:127.0.0.1:{port}-:80",
            "-device", "virtio-net-pci,netdev=n0,romfile=",
            "-drive", f"if=none,id=d0,format=raw,cache=none,aio=threads,file={disk}",
            "-device", "virtio-blk-pci,drive=d0,serial=vireo-data"]
    first = "r00000"
    t0 = time.monotonic()
    proc = subprocess.Popen(args, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                            start_new_session=True)
    try:
        deadline = t0 + 300
        # The first answered GET: boot, recovery, kv's load. QEMU's user
        # network takes a connection before the guest listens and then
        # retries its SYN seconds later: GETs start once the console says
        # the guest serves (kv holds them until its load is done), each
        # given 2 s before another is tried.
        while not re.search(r"^vireo: ready ", open(log, errors="replace").read() if os.path.exists(log) else "",
                            re.M):
            if proc.poll() is not None or time.monotonic() > deadline:
                break
            time.sleep(0.01)
        while True:
            try:
                code, body = get(port, first, timeout=2)
                if code == 200:
                    break
            except (OSError, http.client.HTTPException):
                pass
            if proc.poll() is not None or time.monotonic() > deadline:
                text = open(log, errors="replace").read() if os.path.exists(log) else ""
                raise SystemExit(f"{mib} MiB: no answer to GET:\n{text[-3000:]}\n{proc.stderr.read().decode()}")
            time.sleep(0.02)
        first_s = time.monotonic() - t0
        if body != want[first]:
            raise SystemExit(f"{mib} MiB: {first} holds a wrong value ({len(body)} bytes)")
        while True:
            text = open(log, errors="replace").read()
            if LOADED.search(text) or time.monotonic() > deadline:
                break
            time.sleep(0.05)
        op, ld = OPENED.search(text), LOADED.search(text)
        if not op or not ld:
            raise SystemExit(f"{mib} MiB: no recovery line or kv load line:\n{text[-3000:]}")
        if op.group(9):
            raise SystemExit(f"{mib} MiB: not opened writable: {op.group(0)}")
        if int(op.group(1)) != len(want) or int(ld.group(1)) != len(want) or int(ld.group(2)):
            raise SystemExit(f"{mib} MiB: {op.group(1)} keys recovered, {ld.group(1)} loaded "
                             f"({ld.group(2)} skipped): {len(want)} were written")
        if int(op.group(2)) != writes:
            raise SystemExit(f"{mib} MiB: {op.group(2)} records replayed, {writes} were written")
        c = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
        for key, val in want.items():	# every key: a recovery that lost or mixed one fails here
            c.request("GET", f"/kv/{key}")
            r = c.getresponse()
            got = r.read()
            if r.status != 200 or got != val:
                raise SystemExit(f"{mib} MiB: GET {key}: {r.status}, {len(got)} bytes, not the last value written")
        c.request("GET", "/metrics")
        r = c.getresponse()
        metrics = r.read().decode()
        c.close()
        m = re.search(r"^vireo_store_recovery_seconds ([0-9.]+)$", metrics, re.M)
        if not m or abs(float(m.group(1)) * 1000 - int(op.group(7))) > 1:
            raise SystemExit(f"{mib} MiB: vireo_store_recovery_seconds disagrees with the console")
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait(timeout=10)
        if not a.keep and os.path.exists(disk):
            os.unlink(disk)
    ms = int(op.group(7))
    log_mib = int(op.group(5)) / 1024
    return {"size_mib": mib, "log_mib": round(log_mib, 1), "read_mib": round(int(op.group(6)) / 1024, 1),
            "records": writes, "batches": int(op.group(3)), "segments": int(op.group(4)), "keys": len(want),
            "recovery_ms": ms, "cpu_ms": int(op.group(8)), "mib_per_s": round(log_mib / (ms / 1000), 1) if ms else None,
            "s_per_100mib": round(ms / 1000 / log_mib * 100, 3), "first_get_s": round(first_s, 2),
            "make_s": round(make_s, 1)}


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--elf", required=True)
    p.add_argument("--tool", required=True)
    p.add_argument("--sizes", default="64 256 512 1024")
    p.add_argument("--keys", type=int, default=1024)
    p.add_argument("--mem", type=int, default=256)
    p.add_argument("--keep", action="store_true", help="keep the disk images")
    a = p.parse_args()
    sizes = [int(s) for s in a.sizes.split()]
    load0 = loadavg()
    rows = []
    for mib in sizes:
        r = run_size(a, mib)
        rows.append(r)
        print(f"  {mib} MiB: recovery {r['recovery_ms']} ms, first GET {r['first_get_s']} s", file=sys.stderr)
    load1 = loadavg()
    print(f"recovery against log size: apps/kv (PVH ELF, TCG, -m {a.mem}, cache=none), {a.keys} keys of "
          f"1..4 KiB; load average {load0:.1f} before, {load1:.1f} after")
    print(f"{'log MiB':>8} {'read MiB':>9} {'batches':>8} {'records':>9} {'recovery ms':>12} {'MiB/s':>7} "
          f"{'s/100 MiB':>10} {'CPU ms':>7} {'first GET s':>12}")
    for r in rows:
        print(f"{r['log_mib']:>8} {r['read_mib']:>9} {r['batches']:>8} {r['records']:>9} {r['recovery_ms']:>12} "
              f"{r['mib_per_s']:>7} {r['s_per_100mib']:>10} {r['cpu_ms']:>7} {r['first_get_s']:>12}")
    print("every key read back and checked after each boot")
    print(json.dumps({"load_before": load0, "load_after": load1, "mem": a.mem, "rows": rows}))


if __name__ == "__main__":
    main()
