"""Bulk bodies: /1m.bin and /16m.bin (synthesized by APP_EXTRA into a test
build of their own, never into the default image) come back byte for byte,
over a clean tap and through a lossy, reordering path.

The lossy path: a relay of the test's own between QEMU (socket netdev) and
the namespace's tap drops 1% of the frames each way and holds back 3% until
the next frame has passed (out of order), data and ACKs alike (LossyWire
below; this machine's kernel has no netem). The transfer is bounded (curl
--max-time); its time is printed."""
import fcntl
import hashlib
import os
import random
import select
import socket
import struct
import subprocess
import threading
import time

import pytest

from mxlib import READY, ROOT, Guest, Vm, _setns, extra_site_image, nsmod

SITE_BUILD = os.path.join(ROOT, "build", "bulk-site")
EXTRA = "64k.bin=65536 1m.bin=1048576 16m.bin=16777216"
TRANSFER_LIMIT_S = 600


def pattern_sha256(n):
    """SHA-256 of mksite's synthesized n-byte file (byte i is i % 251)."""
    period = bytes(range(251))
    h = hashlib.sha256()
    block = period * 4096
    full, rest = divmod(n, len(block))
    for _ in range(full):
        h.update(block)
    h.update((period * (rest // 251 + 1))[:rest])
    return h.hexdigest()


@pytest.fixture(scope="module")
def bulk_image():
    """build/vireo.img's objects relinked with a site that has /1m.bin and
    /16m.bin (mksite writes them as string literals: seconds to compile)."""
    return extra_site_image(SITE_BUILD, EXTRA)


def fetch_sha256(wrap, url, out):
    """curl the URL (from inside a namespace: wrap) into out; its SHA-256,
    size and the seconds it took."""
    t0 = time.monotonic()
    r = subprocess.run(wrap + ["curl", "-sS", "--http1.1", "--max-time", str(TRANSFER_LIMIT_S), "-o", out, url],
                       capture_output=True, timeout=TRANSFER_LIMIT_S + 60)
    took = time.monotonic() - t0
    assert r.returncode == 0, f"curl {url}: {r.stderr.decode()} after {took:.1f} s"
    h = hashlib.sha256()
    with open(out, "rb") as f:
        for chunk in iter(lambda: f.read(1 << 20), b""):
            h.update(chunk)
    return h.hexdigest(), os.path.getsize(out), took


def test_large_bodies_byte_identical(bulk_image, tmp_path):
    with Guest(image=bulk_image, mem=128) as g:
        for name, size in (("1m.bin", 1 << 20), ("16m.bin", 16 << 20), ("1m.bin", 1 << 20)):
            digest, got, took = fetch_sha256(g.ns.wrap, f"http://{g.ip}/{name}", str(tmp_path / name))
            assert got == size, (name, got)
            assert digest == pattern_sha256(size), name
            print(f"/{name}: {size} bytes in {took:.2f} s ({size / took / 1e6:.1f} MB/s)")
        m = g.metrics()
        assert m["vireo_lwip_heap_bad_frees_total"] == 0
        g.log_clean()


class LossyWire:
    """A wire of our own between the guest and its namespace's tap: QEMU's
    socket netdev on loopback (one Ethernet frame per UDP datagram) on one
    side, the tap (opened here, inside the namespace) on the other, and in
    between a relay that drops `loss` of the frames each way and holds back
    `reorder` of them until the next frame has gone, so they arrive out of
    order. netem would do this in the kernel, but this machine's kernel has
    no sch_netem; the relay needs nothing but a tap. The socket netdev has
    no offloads: every frame is MTU-sized and dropped alone."""

    TUNSETIFF = 0x400454CA
    IFF_TAP, IFF_NO_PI = 0x0002, 0x1000

    def __init__(self, ns, loss=0.01, reorder=0.03, seed=15):
        self.rng = random.Random(seed)
        self.loss, self.reorder = loss, reorder
        self.dropped = {"to_guest": 0, "from_guest": 0}
        self.reordered = {"to_guest": 0, "from_guest": 0}
        self.udp = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
        self.udp.bind(("127.0.0.1", 0))
        probe = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
        probe.bind(("127.0.0.1", 0))
        self.qemu_port = probe.getsockname()[1]
        probe.close()
        own = os.open("/proc/thread-self/ns/net", os.O_RDONLY)
        nsfd = os.open(f"/run/netns/{ns.name}", os.O_RDONLY)
        try:
            _setns(nsfd)
            try:
                self.tap = os.open("/dev/net/tun", os.O_RDWR)
                fcntl.ioctl(self.tap, self.TUNSETIFF,
                            struct.pack("16sH", ns.tap.encode(), self.IFF_TAP | self.IFF_NO_PI))
            finally:
                _setns(own)
        finally:
            os.close(own)
            os.close(nsfd)
        self.stop = threading.Event()
        self.thread = threading.Thread(target=self._run, daemon=True)
        self.thread.start()

    def qemu_args(self, mac="52:54:00:12:34:56"):
        return ["-netdev", f"socket,id=n0,udp=127.0.0.1:{self.udp.getsockname()[1]},"
                f"localaddr=127.0.0.1:{self.qemu_port}",
                "-device", f"virtio-net-pci,netdev=n0,id=nic0,romfile=,mac={mac}"]

    def _run(self):
        held = {"to_guest": None, "from_guest": None}
        send = {"to_guest": lambda f: self.udp.sendto(f, ("127.0.0.1", self.qemu_port)),
                "from_guest": lambda f: os.write(self.tap, f)}
        while not self.stop.is_set():
            r, _, _ = select.select([self.udp, self.tap], [], [], 0.1)
            for src in r:
                if src is self.udp:
                    frame, way = self.udp.recv(65536), "from_guest"
                else:
                    frame, way = os.read(self.tap, 65536), "to_guest"
                x = self.rng.random()
                if x < self.loss:
                    self.dropped[way] += 1
                    continue
                try:
                    if held[way] is None and x < self.loss + self.reorder:
                        held[way] = frame
                        self.reordered[way] += 1
                        continue
                    send[way](frame)
                    if held[way] is not None:
                        send[way](held[way])
                        held[way] = None
                except OSError:
                    pass

    def close(self):
        self.stop.set()
        self.thread.join(5)
        self.udp.close()
        os.close(self.tap)


def test_16m_through_loss_and_reordering(bulk_image, tmp_path):
    ns = nsmod.Netns()
    wire = vm = None
    try:
        wire = LossyWire(ns)
        vm = Vm(cmdline=f"ip={ns.guest_ip}/24 gw={ns.host_ip}", mem=128, image=bulk_image,
                extra=wire.qemu_args())
        ready = vm.wait_for(READY, timeout=180)
        assert ready.group(1) == ns.guest_ip
        digest, got, took = fetch_sha256(ns.wrap, f"http://{ns.guest_ip}/16m.bin", str(tmp_path / "16m.bin"))
        assert got == 16 << 20
        assert digest == pattern_sha256(16 << 20)
        print(f"16 MiB through 1% loss and reordering: {took:.1f} s ({(16 << 20) / took / 1e6:.2f} MB/s); "
              f"dropped {wire.dropped}, held back {wire.reordered}")
        # the wire did drop and reorder both ways: otherwise this proves nothing
        assert min(wire.dropped.values()) > 0 and min(wire.reordered.values()) > 0, wire.dropped
        # and the appliance still serves
        r = ns.run("curl", "-sS", "--max-time", "60", f"http://{ns.guest_ip}/healthz", timeout=90)
        assert r.returncode == 0 and r.stdout == b"ok\n", r.stderr
        for bad in ("vireo: panic", "broken"):
            assert bad not in vm.text
    finally:
        if vm is not None:
            vm.stop()
        if wire is not None:
            wire.close()
        ns.close()
