"""The frame reflector (vnet.echo) on a tap device in a namespace of its own,
for tests/matrix/test_echo_flood.py and tests/bench/echo.py: boot, offered
load from tests/bench/echoflood.c (AF_PACKET on the tap side, bounded in
frames and seconds), the tap's own counters, and slow probes that must come
back.

Frames go to the guest's MAC from PEER_MAC with EtherType 0x88b5 (local
experimental); the reflector sends each back to PEER_MAC, which is not the
tap's address, so the host stack drops the reflections at once and only the
tap's counters see them: rx_packets counts frames QEMU wrote (reflected),
tx_packets frames QEMU read, tx_dropped frames offered that QEMU did not
read in time (its receive ring was full). Nothing else crosses the tap but
the host's own IPv6 chatter, a few frames a second."""
import json
import os
import select
import socket
import struct
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(os.path.dirname(HERE), "qemu"))

import netns as nsmod  # noqa: E402
from mxlib import _setns  # noqa: E402
from vm import IMAGE, ROOT, Vm  # noqa: E402

GUEST_MAC = bytes.fromhex("525400123456")
PEER_MAC = bytes.fromhex("020000000001")
ETHERTYPE = 0x88b5
FLOODER_SRC = os.path.join(ROOT, "tests", "bench", "echoflood.c")
FLOODER = os.path.join(ROOT, "build", "bench", "echoflood")
SIZES = (60, 590, 1514)


def build_flooder():
    """Builds tests/bench/echoflood.c into build/bench/ when missing or
    older than its source; returns the binary's path."""
    if not os.path.exists(FLOODER) or os.path.getmtime(FLOODER) < os.path.getmtime(FLOODER_SRC):
        os.makedirs(os.path.dirname(FLOODER), exist_ok=True)
        subprocess.run([os.environ.get("CC", "cc"), "-O2", "-Wall", "-o", FLOODER, FLOODER_SRC], check=True)
    return FLOODER


class EchoGuest:
    """vireo with vnet.echo on a tap in a namespace of its own.
    device_opts: virtio-net-pci properties; extra_cmdline: more of the
    kernel command line; mem: MiB; qemu_extra: more QEMU arguments;
    nice: QEMU's niceness (None: inherited). A negative one keeps QEMU's
    vCPU thread and its I/O thread on CPUs at the same time on a busy
    host, as on an idle one: the device completing transmits while the
    driver re-arms needs both running (test_echo_flood.py)."""

    def __init__(self, device_opts="", extra_cmdline="", mem=64, image=IMAGE, qemu_extra=(), nice=None):
        self.ns = nsmod.Netns()
        self.vm = None
        try:
            # The tap's queue towards QEMU: what the guest cannot take
            # waits here, then is dropped (tx_dropped).
            self.ns.run("ip", "link", "set", self.ns.tap, "txqueuelen", "1000", check=True)
            cl = "vnet.echo" + (f" {extra_cmdline}" if extra_cmdline else "")
            wrap = self.ns.wrap + (["nice", "-n", str(nice)] if nice is not None else [])
            self.vm = Vm(cmdline=cl, mem=mem, image=image, wrap=wrap,
                         extra=self.ns.qemu_args(device_opts) + list(qemu_extra))
            self.vm.wait_for(r"^virtio\d+: net: echo attached$", timeout=180)
            self.vm.wait_for(r"^virtio\d+: net: link up$", timeout=60)
            self._nsfd = os.open(f"/run/netns/{self.ns.name}", os.O_RDONLY)
        except BaseException:
            self.close()
            raise

    def close(self):
        if getattr(self, "_nsfd", None) is not None:
            os.close(self._nsfd)
            self._nsfd = None
        if self.vm:
            self.vm.stop()
            self.vm = None
        self.ns.close()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    # ---- the tap's counters ----

    def counters(self):
        """The tap's packet counters (host side): rx = frames from QEMU,
        tx = frames QEMU read, tx_dropped = not read in time."""
        r = self.ns.run("ip", "-s", "-j", "link", "show", self.ns.tap, check=True)
        st = json.loads(r.stdout)[0]["stats64"]
        return {"rx": st["rx"]["packets"], "tx": st["tx"]["packets"], "tx_dropped": st["tx"]["dropped"]}

    # ---- the receive ring, as the device sees it ----

    def _nic_path(self):
        if not getattr(self, "_path", None):
            self._path = next(d["path"] for d in self.vm.qmp("x-query-virtio") if d["name"] == "virtio-net")
        return self._path

    def _u16(self, gpa):
        out = self.vm.hmp(f"xp /1hx {gpa:#x}")
        return int(out.split()[-1], 16)

    def rx_posted(self):
        """Receive buffers the guest has made available and the device has
        not used (split ring): avail idx - used idx, read from guest memory
        (QEMU's own shadow of avail idx is only refreshed when it needs a
        buffer). At rest every buffer of the driver's pool is posted: one
        missing is held, by the reflector, for a transmit not yet reclaimed."""
        q = self.vm.qmp("x-query-virtio-queue-status", path=self._nic_path(), queue=0)
        return (self._u16(q["vring-avail"] + 2) - self._u16(q["vring-used"] + 2)) & 0xffff, q["vring-num"]

    def wait_rx_posted(self, want, timeout=3.0):
        """Waits until want receive buffers are posted; returns the last
        count seen."""
        deadline = time.monotonic() + timeout
        while True:
            n, _ = self.rx_posted()
            if n >= want or time.monotonic() > deadline:
                return n
            time.sleep(0.1)

    # ---- load ----

    def flood(self, size, rate, secs):
        """Offered load from echoflood (rate 0: as fast as the socket takes
        frames); returns its JSON plus the tap's counter deltas over the
        run and a settle time after it (reflections still queued in the
        guest come out)."""
        before = self.counters()
        r = self.ns.run(build_flooder(), self.ns.tap, str(size), str(rate), str(secs), timeout=secs + 30,
                        check=True)
        out = json.loads(r.stdout)
        time.sleep(0.5)
        after = self.counters()
        out.update({k: after[k] - before[k] for k in after})
        return out

    # ---- probes ----

    def packet_socket(self):
        own = os.open("/proc/thread-self/ns/net", os.O_RDONLY)
        try:
            _setns(self._nsfd)
            try:
                s = socket.socket(socket.AF_PACKET, socket.SOCK_RAW, socket.htons(ETHERTYPE))
            finally:
                _setns(own)
        finally:
            os.close(own)
        s.bind((self.ns.tap, ETHERTYPE))
        return s

    def probe(self, n, tag, timeout=3.0):
        """n probe frames, one at a time, each waited for (at most timeout
        seconds); returns how many came back, checked byte for byte (the
        reflector swaps the addresses)."""
        back = 0
        with self.packet_socket() as s:
            for i in range(n):
                payload = b"vireo-probe" + struct.pack(">QI", tag, i) + bytes(k & 0xff for k in range(64))
                s.send(GUEST_MAC + PEER_MAC + struct.pack(">H", ETHERTYPE) + payload)
                want = PEER_MAC + GUEST_MAC + struct.pack(">H", ETHERTYPE) + payload
                deadline = time.monotonic() + timeout
                while time.monotonic() < deadline:
                    if not select.select([s], [], [], max(0.0, deadline - time.monotonic()))[0]:
                        break
                    got = s.recv(2048)
                    if got[:len(want)] == want:
                        back += 1
                        break
        return back
