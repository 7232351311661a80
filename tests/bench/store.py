#!/usr/bin/env python3
"""`make bench-store`: durable PUT/s and GET/s of apps/kv on its data disk
against Redis 7 (appendonly yes, appendfsync always) and etcd 3.4 on
Linux (tests/bench/peer/build.sh redis etcd), each in the same QEMU with
the same machine, memory, NIC and data disk options, one after another;
issue 31's figures (docs/storage.md "Figures").

First the bare cost of a flush on this machine, without a guest:
  - host: a 4 KiB O_DIRECT write then fdatasync() on a file next to the
    data disks (what QEMU does for a guest FLUSH with cache=none), N times;
  - QEMU's block layer: qemu-io on a raw image with cache=none (-t none),
    N x (write 4 KiB + flush) against N x (write 4 KiB), the difference
    over N being one flush through QEMU.
One client's durable rate is bounded by it for every system. Both are
measured again after the runs: on a shared disk the cost moves.

Then, per system, one boot (-kernel under TCG: vireo's PVH ELF, the
peers' Debian kernel and initramfs; -m --mem, one CPU, virtio-net-pci on
QEMU's user network with one port forwarded from 127.0.0.1, the data disk
`-drive if=none,format=raw,cache=none,aio=threads` as virtio-blk-pci on a
fresh --disk-mib image in build/bench/store/, zero-filled so that no
system pays the host's block allocation: blank for vireo, ext4 made on
the host for the peers) and one load generator (this script: asyncio,
one keep-alive connection per client, a request at a time each) speaking
each system's protocol: HTTP/1.1 PUT/GET /kv/KEY for vireo, RESP SET/GET
for Redis, the v3 JSON gateway (POST /v3/kv/put, /v3/kv/range) for etcd.
PUTs write 1 KiB values over --keys keys in turn (the store's size stays
fixed), every answer checked (2xx, +OK, a JSON header); GETs read 1 KiB
values back, checked by length. Each figure is --duration seconds after
--warmup seconds, at 1 and 32 clients, with p50 and p99 latency. Prints a
table with ratios against vireo and one JSON line. Figures only: nothing
is asserted about speed.

  store.py [--duration 10] [--warmup 2] [--mem 256] [--disk-mib 256] [--systems vireo,redis,etcd]
"""
import argparse
import asyncio
import base64
import json
import mmap
import os
import re
import shutil
import signal
import subprocess
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "qemu"))
from httpc import free_tcp_port  # noqa: E402

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
OUT = os.path.join(ROOT, "build", "bench", "store")
PEERS = os.environ.get("BENCH_OUT", os.path.join(ROOT, "build", "bench"))
VALUE = 1024


# ---- the bare cost of a flush -------------------------------------------
def host_flush(path, n):
    """n x (4 KiB O_DIRECT write + fdatasync) over the first MiB of a file
    at path, its blocks allocated first: seconds each (sorted)."""
    buf = mmap.mmap(-1, 4096)
    buf.write(b"f" * 4096)
    fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_DIRECT, 0o644)
    times = []
    try:
        for i in range(256):	# allocated first: a flush, not block allocation, is measured
            os.pwritev(fd, [buf], i * 4096)
        os.fsync(fd)
        for i in range(n):
            t = time.perf_counter()
            os.pwritev(fd, [buf], (i % 256) * 4096)
            os.fdatasync(fd)
            times.append(time.perf_counter() - t)
    finally:
        os.close(fd)
        os.unlink(path)
    return sorted(times)


def qemu_io_flush(path, n):
    """Seconds per flush through QEMU's block layer (cache=none): qemu-io
    running n x (write + flush), minus n x write, over n; and the
    write+flush pair's mean."""
    with open(path, "wb") as f:
        f.write(bytes(1 << 20))	# allocated, as in host_flush
        os.fsync(f.fileno())

    def run(flush):
        cmds = []
        for i in range(n):
            cmds += ["-c", f"write -q {(i % 256) * 4096} 4k"]
            if flush:
                cmds += ["-c", "flush"]
        t = time.perf_counter()
        subprocess.run(["qemu-io", "-f", "raw", "-t", "none", "-n"] + cmds + [path], check=True,
                       stdout=subprocess.DEVNULL)
        return time.perf_counter() - t
    try:
        with_f = min(run(True) for _ in range(2))
        without = min(run(False) for _ in range(2))
    finally:
        os.unlink(path)
    return (with_f - without) / n, with_f / n


# ---- the guests ------------------------------------------------------------
SYSTEMS = {
    "vireo": {"port": 80, "ready": r"^kv: \d+ keys loaded from the data disk"},
    "redis": {"port": 6379, "ready": r"READY peer=redis"},
    "etcd": {"port": 2379, "ready": r"READY peer=etcd"},
}


class Guest:
    def __init__(self, name, a):
        self.name = name
        os.makedirs(OUT, exist_ok=True)
        self.disk = os.path.join(OUT, f"{name}-data.img")
        self.log = os.path.join(OUT, f"{name}-console.log")
        with open(self.disk, "wb") as f:	# zero-filled: no system pays the host's block allocation
            chunk = bytes(8 << 20)
            for _ in range(a.disk_mib // 8):
                f.write(chunk)
            os.fsync(f.fileno())
        if os.path.exists(self.log):
            os.unlink(self.log)	# the last run's marker is not this boot's
        if name == "vireo":
            boot = ["-kernel", a.elf]
        else:
            subprocess.run(["mkfs.ext4", "-q", "-F", "-L", "data", self.disk], check=True)
            d = os.path.join(PEERS, f"peer-{name}")
            if not os.path.exists(os.path.join(d, "initrd.img")):
                raise SystemExit(f"{d} missing: tests/bench/peer/build.sh {name} (make bench-store does)")
            boot = ["-kernel", os.path.join(d, "vmlinuz"), "-initrd", os.path.join(d, "initrd.img"),
                    "-append", "console=ttyS0 quiet bench.ip=10.0.2.15/24 bench.gw=10.0.2.2"]
        self.port = free_tcp_port()
        gp = SYSTEMS[name]["port"]
        self.args = ["qemu-system-x86_64", "-machine", "q35", "-accel", "tcg", "-m", str(a.mem), "-smp", "1",
                     "-nodefaults", "-no-user-config", "-display", "none", "-serial", f"file:{self.log}"] + boot + [
            "-netdev", f"user,id=n0,restrict=on,hostfwd=tcp:127.0.0.1:{self.port}-:{gp}",
            "-device", "virtio-net-pci,netdev=n0,romfile=",
            "-drive", f"if=none,id=d0,format=raw,cache=none,aio=threads,file={self.disk}",
            "-device", "virtio-blk-pci,drive=d0,serial=vireo-data"]
        self.t0 = time.monotonic()
        self.proc = subprocess.Popen(self.args, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                                     stderr=subprocess.PIPE, start_new_session=True)
        rx = re.compile(SYSTEMS[name]["ready"], re.M)
        deadline = time.monotonic() + 300
        while True:
            text = open(self.log, errors="replace").read() if os.path.exists(self.log) else ""
            if rx.search(text):
                break
            if "BENCH-FAIL" in text or self.proc.poll() is not None or time.monotonic() > deadline:
                self.stop()
                raise SystemExit(f"{name} did not come up:\n{text[-3000:]}\n{self.proc.stderr.read().decode()}")
            time.sleep(0.1)
        self.ready_s = time.monotonic() - self.t0

    def cpu_s(self):
        with open(f"/proc/{self.proc.pid}/stat") as f:
            st = f.read().rsplit(")", 1)[1].split()
        return (int(st[11]) + int(st[12])) / os.sysconf("SC_CLK_TCK")

    def stop(self):
        if self.proc.poll() is None:
            os.killpg(self.proc.pid, signal.SIGKILL)
            self.proc.wait(timeout=10)
        if os.path.exists(self.disk):
            os.unlink(self.disk)


# ---- the load generator: one driver per protocol -----------------------
class Conn:
    def __init__(self, r, w):
        self.r, self.w = r, w

    async def http(self, method, path, body=b"", ctype=None):
        head = f"{method} {path} HTTP/1.1\r\nHost: bench\r\nContent-Length: {len(body)}\r\n"
        if ctype:
            head += f"Content-Type: {ctype}\r\n"
        self.w.write(head.encode() + b"\r\n" + body)
        status = await self.r.readline()
        code = int(status.split(b" ", 2)[1])
        length, chunked = 0, False
        while True:
            line = await self.r.readline()
            if line in (b"\r\n", b""):
                break
            k, _, v = line.partition(b":")
            k = k.strip().lower()
            if k == b"content-length":
                length = int(v)
            elif k == b"transfer-encoding" and b"chunked" in v.lower():
                chunked = True
        if not chunked:
            return code, await self.r.readexactly(length)
        out = b""
        while True:
            n = int((await self.r.readline()).split(b";")[0], 16)
            if n == 0:
                await self.r.readline()
                return code, out
            out += await self.r.readexactly(n)
            await self.r.readline()

    async def resp(self, *parts):
        msg = f"*{len(parts)}\r\n".encode()
        for p in parts:
            msg += f"${len(p)}\r\n".encode() + p + b"\r\n"
        self.w.write(msg)
        line = await self.r.readline()
        if line[:1] == b"$":
            n = int(line[1:])
            return line, (await self.r.readexactly(n + 2))[:-2] if n >= 0 else None
        return line, None


def b64(s):
    return base64.b64encode(s).decode()


async def op_put(sysname, c, key, val):
    if sysname == "vireo":
        code, _ = await c.http("PUT", f"/kv/{key.decode()}", val)
        if code not in (200, 201, 204):
            raise RuntimeError(f"PUT answered {code}")
    elif sysname == "redis":
        line, _ = await c.resp(b"SET", key, val)
        if line != b"+OK\r\n":
            raise RuntimeError(f"SET answered {line!r}")
    else:
        code, body = await c.http("POST", "/v3/kv/put", json.dumps({"key": b64(key), "value": b64(val)}).encode(),
                                  "application/json")
        if code != 200 or b'"header"' not in body:
            raise RuntimeError(f"put answered {code} {body[:200]!r}")


async def op_get(sysname, c, key):
    if sysname == "vireo":
        code, body = await c.http("GET", f"/kv/{key.decode()}")
        ok = code == 200 and len(body) == VALUE
    elif sysname == "redis":
        _, body = await c.resp(b"GET", key)
        ok = body is not None and len(body) == VALUE
    else:
        code, body = await c.http("POST", "/v3/kv/range", json.dumps({"key": b64(key)}).encode(),
                                  "application/json")
        ok = code == 200 and len(base64.b64decode(json.loads(body)["kvs"][0]["value"])) == VALUE
    if not ok:
        raise RuntimeError(f"GET {key!r}: a wrong answer")


OP_TIMEOUT = 30	# seconds: an answer later than this ends the run


async def connect(sysname, port):
    """One client's connection, proven by a GET answered within 5 s. QEMU's
    user network accepts forwarded connections with a listen backlog of 1:
    a burst of connects leaves some completed by the host's kernel but never
    taken by QEMU, so each is tried again (at most 10 times)."""
    for _ in range(10):
        r, w = await asyncio.open_connection("127.0.0.1", port)
        try:
            await asyncio.wait_for(op_get(sysname, Conn(r, w), b"g0"), 5)
            return Conn(r, w)
        except asyncio.TimeoutError:
            w.close()
    raise RuntimeError("no connection answered in 10 tries")


async def load(sysname, port, kind, conns, warmup, duration, keys):
    """conns clients, a request at a time each, for warmup + duration
    seconds: (ops/s in the measured window, latencies in it, sorted)."""
    val = bytes((i * 7 + 13) % 251 for i in range(VALUE))
    lat = []
    clients = [await connect(sysname, port) for _ in range(conns)]	# one at a time
    t_start = time.monotonic()
    t_meas = t_start + warmup
    t_end = t_meas + duration
    counter = [0]

    async def client(cid, c):
        i = cid
        try:
            while True:
                now = time.monotonic()
                if now >= t_end:
                    break
                key = b"b%d" % (i % keys)
                i += conns
                t = time.monotonic()
                if kind == "put":
                    await asyncio.wait_for(op_put(sysname, c, key, val), OP_TIMEOUT)
                else:
                    await asyncio.wait_for(op_get(sysname, c, b"g%d" % (i % 100)), OP_TIMEOUT)
                done = time.monotonic()
                if t >= t_meas and done <= t_end:
                    lat.append(done - t)
                    counter[0] += 1
        finally:
            c.w.close()
            await c.w.wait_closed()
    await asyncio.gather(*(client(i, c) for i, c in enumerate(clients)))
    return counter[0] / duration, sorted(lat)


async def fill_gets(sysname, port):
    r, w = await asyncio.open_connection("127.0.0.1", port)
    c = Conn(r, w)
    val = bytes((i * 7 + 13) % 251 for i in range(VALUE))
    for i in range(100):
        await op_put(sysname, c, b"g%d" % i, val)
    w.close()
    await w.wait_closed()


def pct(lat, p):
    return lat[min(len(lat) - 1, int(len(lat) * p / 100))] if lat else float("nan")


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--elf", default=os.path.join(ROOT, "build", "apps", "kv", "vireo.elf"))
    ap.add_argument("--duration", type=float, default=10)
    ap.add_argument("--warmup", type=float, default=2)
    ap.add_argument("--mem", type=int, default=256)
    ap.add_argument("--disk-mib", type=int, default=256)
    ap.add_argument("--keys", type=int, default=1000)
    ap.add_argument("--flushes", type=int, default=200)
    ap.add_argument("--systems", default="vireo,redis,etcd")
    a = ap.parse_args()
    os.makedirs(OUT, exist_ok=True)
    res = {"date": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()), "load_before": os.getloadavg()[0],
           "mem": a.mem, "duration": a.duration, "value_bytes": VALUE, "systems": {}}
    ht = host_flush(os.path.join(OUT, "flush-probe"), a.flushes)
    qf, qpair = qemu_io_flush(os.path.join(OUT, "flush-qemu.img"), a.flushes)
    res["flush"] = {"host_write_fdatasync_p50_ms": pct(ht, 50) * 1e3, "host_p99_ms": pct(ht, 99) * 1e3,
                    "host_mean_ms": sum(ht) / len(ht) * 1e3, "qemu_io_flush_ms": qf * 1e3,
                    "qemu_io_write_flush_ms": qpair * 1e3}
    f = res["flush"]
    print(f"flush, host: 4 KiB O_DIRECT write + fdatasync p50 {f['host_write_fdatasync_p50_ms']:.3f} ms, "
          f"p99 {f['host_p99_ms']:.3f} ms, mean {f['host_mean_ms']:.3f} ms ({a.flushes} times; "
          f"<= {1000 / f['host_mean_ms']:,.0f} durable writes/s for one writer)", flush=True)
    print(f"flush, QEMU block layer (qemu-io, cache=none): {f['qemu_io_flush_ms']:.3f} ms a flush "
          f"({f['qemu_io_write_flush_ms']:.3f} ms a 4 KiB write + flush pair)", flush=True)
    for name in a.systems.split(","):
        g = Guest(name, a)
        try:
            r = {"ready_s": g.ready_s}
            asyncio.run(fill_gets(name, g.port))
            cpu0, me0 = g.cpu_s(), time.process_time()
            t0 = time.monotonic()
            for kind in ("put", "get"):
                for conns in (1, 32):
                    # The last figure's connections closed (vireo's table holds 64 per
                    # source, and each close lingers up to 2 s for the client's FIN).
                    time.sleep(3)
                    rate, lat = asyncio.run(load(name, g.port, kind, conns, a.warmup, a.duration, a.keys))
                    r[f"{kind}_c{conns}"] = {"rate": rate, "p50_ms": pct(lat, 50) * 1e3, "p99_ms": pct(lat, 99) * 1e3}
                    print(f"{name:6} {kind} c{conns:<3}: {rate:9,.0f}/s  p50 {pct(lat, 50) * 1e3:7.2f} ms  "
                          f"p99 {pct(lat, 99) * 1e3:7.2f} ms", flush=True)
            r["qemu_cpu_share"] = (g.cpu_s() - cpu0) / (time.monotonic() - t0)
            r["driver_cpu_share"] = (time.process_time() - me0) / (time.monotonic() - t0)
            res["systems"][name] = r
        finally:
            g.stop()
    res["load_after"] = os.getloadavg()[0]
    # The flush again: on a shared disk its cost moves from minute to minute.
    ht = host_flush(os.path.join(OUT, "flush-probe"), a.flushes)
    qf, qpair = qemu_io_flush(os.path.join(OUT, "flush-qemu.img"), a.flushes)
    res["flush_after"] = {"host_write_fdatasync_p50_ms": pct(ht, 50) * 1e3, "host_p99_ms": pct(ht, 99) * 1e3,
                          "host_mean_ms": sum(ht) / len(ht) * 1e3, "qemu_io_flush_ms": qf * 1e3,
                          "qemu_io_write_flush_ms": qpair * 1e3}
    f = res["flush_after"]
    print(f"flush after the runs: host p50 {f['host_write_fdatasync_p50_ms']:.3f} ms, p99 {f['host_p99_ms']:.3f} ms, "
          f"mean {f['host_mean_ms']:.3f} ms; qemu-io {f['qemu_io_flush_ms']:.3f} ms a flush "
          f"({f['qemu_io_write_flush_ms']:.3f} ms a pair)", flush=True)
    names = list(res["systems"])
    base = names[0]
    print(f"\n{'figure':16}" + "".join(f"{n:>22}" for n in names) +
          "".join(f"{base + '/' + n:>14}" for n in names[1:]))
    for kind in ("put", "get"):
        for conns in (1, 32):
            k = f"{kind}_c{conns}"
            row = f"{('durable PUT/s' if kind == 'put' else 'GET/s') + f' c{conns}':16}"
            for n in names:
                v = res["systems"][n][k]
                row += f"{v['rate']:>9,.0f} ({v['p50_ms']:.1f}/{v['p99_ms']:.1f})".rjust(22)
            for n in names[1:]:
                row += f"{res['systems'][base][k]['rate'] / res['systems'][n][k]['rate']:>13.2f}x"
            print(row)
    print("(rate, then p50/p99 latency in ms; CPU share of QEMU / of the load generator while loaded: " +
          ", ".join(f"{n} {res['systems'][n]['qemu_cpu_share']:.2f} / {res['systems'][n]['driver_cpu_share']:.2f}"
                    for n in names) +
          f"; load average {res['load_before']:.2f} before, {res['load_after']:.2f} after)")
    print(json.dumps(res))


if __name__ == "__main__":
    main()
