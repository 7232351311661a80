"""Live migration under load (issue 17): vireo (OVMF, TCG) serving on a tap,
a client keeping requests going, the whole machine moved to a second QEMU
on this host, and nothing lost.

Layout, all inside one network namespace of the test's own:

    client (10.77.0.1 on br0) -- br0 --+-- tap0 -- source QEMU
                                       +-- tap1 -- destination QEMU (-incoming)

Both QEMUs get the same command line (the same image read-only, a copy of
the same OVMF variable store: the flash contents travel in the migration
stream anyway, the same devices at the same addresses), the destination
only adds -incoming and its own tap. The bridge learned the guest's MAC on
tap0; after the switch the guest's gratuitous ARP (GUEST_ANNOUNCE: QEMU
sets VIRTIO_NET_S_ANNOUNCE on the destination) moves that entry to tap1.

Checks: zero failed requests across the switch (a connection reset, a
timeout, a short or wrong body all count: TCP must survive), the console
answers a shell command on the destination, a capture on tap1 shows the
gratuitous ARP and an unsolicited neighbour advertisement for each of the
guest's IPv6 addresses (link-local, and a global one it took by SLAAC from
a router advertisement the test sends), the bridge's
entry for the guest's MAC is on tap1. Prints query-migrate's downtime and
total time.

The lock-down pair (virtio.features=): a destination whose NIC does not
offer RING_PACKED refuses a guest that negotiated it (QEMU's virtio_load:
"Features ... unsupported"); the migration fails and the source keeps
running and serving. The same destination accepts a guest booted with the
mask that leaves RING_PACKED out.

Every load loop is bounded (stop() in finally, and a request cap)."""
import os
import socket
import struct
import subprocess
import sys
import time

import pytest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import mxlib  # noqa: E402
from migrlib import GUEST_IP, BridgedNs, MixedLoad, boot, migrate, wait_ok_grows  # noqa: E402
from mxlib import GUEST_MAC, NsClient  # noqa: E402

GUEST_LL = bytes.fromhex("fe80000000000000505400fffe123456")
GUEST_LL_TEXT = mxlib.GUEST_LL
RING_PACKED = 34
NO_PACKED = 0xFFFFFFFFFFFFFFFF & ~(1 << RING_PACKED)

# The split, packed and lock-down tests take about 50-80 s together on the
# shared 2-core host: marked quick, part of make test. The IOMMU row (about
# 20 s more) is make test-matrix only.
Q = pytest.mark.quick
IOMMU = "disable-legacy=on,iommu_platform=on"


def capture(bns, tap, path):
    """tcpdump on tap (ARP and ICMPv6 only), writing packets as they come
    (--immediate-mode: without it libpcap hands packets over a block at a
    time, and what sits in the kernel's unfinished block is lost when
    tcpdump is stopped); returns once it listens."""
    p = bns.ns.popen("tcpdump", "-i", tap, "--immediate-mode", "-U", "-n", "-w", path, "arp or icmp6",
                     stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    line = p.stderr.readline().decode()
    assert "listening" in line, line
    return p


def pcap_frames(path):
    with open(path, "rb") as f:
        data = f.read()
    if len(data) < 24:
        return []  # the file header not written yet
    magic = struct.unpack_from("<I", data)[0]
    end = "<" if magic in (0xA1B2C3D4, 0xA1B23C4D) else ">"
    off, frames = 24, []
    while off + 16 <= len(data):
        incl = struct.unpack_from(end + "I", data, off + 8)[0]
        frames.append(data[off + 16:off + 16 + incl])
        off += 16 + incl
    return frames


def is_garp(f):
    """An ARP request from the guest claiming its own address (RFC 5227 3)."""
    mac = bytes.fromhex(GUEST_MAC.replace(":", ""))
    ip = bytes(int(x) for x in GUEST_IP.split("."))
    return (len(f) >= 42 and f[12:14] == b"\x08\x06" and f[20:22] == b"\x00\x01" and f[22:28] == mac
            and f[28:32] == ip and f[38:42] == ip)


def na_target(f):
    """The target of an unsolicited (Solicited flag clear) neighbour
    advertisement with Override set, or None."""
    if len(f) < 14 + 40 + 24 or f[12:14] != b"\x86\xdd" or f[14 + 6] != 58:
        return None
    m = f[54:]
    if m[0] != 136 or (m[4] & 0x40) or not (m[4] & 0x20):
        return None
    return bytes(m[8:24])


def wait_ll_valid(bns, timeout=60):
    """Waits until the guest answers on its link-local address: duplicate
    address detection is over (lwIP neither answers for nor announces a
    tentative address), so the announce after the switch covers it."""
    deadline = time.monotonic() + timeout
    while bns.ns.run("ping", "-6", "-c1", "-W1", f"{GUEST_LL_TEXT}%br0").returncode != 0:
        assert time.monotonic() < deadline, "the guest's link-local address never answered"
        time.sleep(0.5)


GLOBAL_PREFIX = "2001:db8:77::"
GUEST_GLOBAL = "2001:db8:77::5054:ff:fe12:3456"  # SLAAC from the MAC (EUI-64)
RA_SCRIPT = """
import sys
from scapy.all import Ether, IPv6, ICMPv6ND_RA, ICMPv6NDOptPrefixInfo, sendp
sendp(Ether(dst="33:33:00:00:00:01") / IPv6(src=sys.argv[1], dst="ff02::1", hlim=255) /
      ICMPv6ND_RA(routerlifetime=0) /
      ICMPv6NDOptPrefixInfo(prefix=sys.argv[2], prefixlen=64, L=1, A=1, validlifetime=86400,
                            preferredlifetime=14400), iface="br0", verbose=False)
"""


def give_global(bns, timeout=60):
    """A global IPv6 address for the guest: router advertisements (lifetime
    0: a prefix, not a default router) for 2001:db8:77::/64 until the
    guest answers on its SLAAC address."""
    bns.ns.run("ip", "-6", "addr", "add", f"{GLOBAL_PREFIX}1/64", "dev", "br0", "nodad", check=True)
    out = bns.ns.run("ip", "-6", "-o", "addr", "show", "dev", "br0", "scope", "link").stdout.decode()
    src = out.split("inet6 ")[1].split("/")[0]
    deadline = time.monotonic() + timeout
    while True:
        bns.ns.run(mxlib.PYTHON, "-c", RA_SCRIPT, src, GLOBAL_PREFIX, check=True, timeout=60)
        if bns.ns.run("ping", "-6", "-c1", "-W2", GUEST_GLOBAL).returncode == 0:
            return
        assert time.monotonic() < deadline, "the guest never answered on its SLAAC address"


def console_answers(vm, cmd="stats", pattern=r"^uptime \d+ ms"):
    start = len(vm.text)
    vm.send(cmd + "\n")
    return vm.wait_for(pattern, timeout=60, start=start)


@pytest.fixture
def bns():
    b = BridgedNs()
    yield b
    b.close()


@pytest.mark.parametrize("ring,opts,more", [
    pytest.param("split", "", [], marks=Q, id="split"),
    pytest.param("packed", "packed=on", [], marks=Q, id="packed"),
    # The device behind QEMU's VT-d model (ACCESS_PLATFORM): its state
    # (and, with translation on, the guest's tables) travels too.
    pytest.param("split", IOMMU, ["-device", "intel-iommu"], id="split-intel-iommu"),
])
def test_migration_under_load(bns, ring, opts, more, tmp_path):
    src = dst = load = dump = None
    client = NsClient(bns.ns, GUEST_IP)
    try:
        src = boot(bns, "tap0", opts, more=more)
        src.wait_for(mxlib.READY, timeout=180)
        feats = src.wait_for(r"^virtio\d+: features.*\bGUEST_ANNOUNCE\b.*$", timeout=5).group(0)
        assert ("RING_PACKED" in feats) == (ring == "packed"), feats
        assert ("ACCESS_PLATFORM" in feats) == bool(more), feats
        wait_ll_valid(bns)
        give_global(bns)
        load = MixedLoad(client).start()
        wait_ok_grows(load, 50)
        assert bns.fdb_port() == "tap0"
        dst = boot(bns, "tap1", opts, incoming=True, more=more)
        pcap = str(tmp_path / "tap1.pcap")
        dump = capture(bns, "tap1", pcap)
        before = load.ok
        t0 = time.monotonic()
        info = migrate(src)
        wall = time.monotonic() - t0
        assert info["status"] == "completed", info
        assert dst.qmp("query-status")["status"] == "running"
        dst.wait_for(r"net: announced: gratuitous ARP, 2 neighbour advertisements", timeout=60)
        wait_ok_grows(load, 100)  # served from the destination
        console_answers(dst)
        load.stop()
        after = load.ok
        row = ring + (", intel-iommu" if more else "")
        print(f"\nmigration ({row}): downtime {info.get('downtime')} ms, total {info.get('total-time')} ms "
              f"(wall {wall:.1f} s), setup {info.get('setup-time')} ms, "
              f"{info.get('ram', {}).get('transferred', 0) / 2**20:.1f} MiB sent; "
              f"{after} requests ({before} before), {len(load.errors)} failed")
        assert not load.errors, load.errors[:5]
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline and not any(is_garp(f) for f in pcap_frames(pcap)):
            time.sleep(0.2)
        time.sleep(0.5)
        dump.terminate()
        dump.wait(10)
        frames = pcap_frames(pcap)
        assert any(is_garp(f) for f in frames), f"no gratuitous ARP on tap1 in {len(frames)} frames"
        targets = {na_target(f) for f in frames} - {None}
        assert GUEST_LL in targets, f"no unsolicited NA for the link-local address: {targets}"
        assert socket.inet_pton(socket.AF_INET6, GUEST_GLOBAL) in targets, \
            f"no unsolicited NA for the global address: {targets}"
        assert bns.fdb_port() == "tap1"
        status, _, body = client.get("/metrics")
        assert status == 200, status
        m = mxlib.parse_prometheus(body.decode())
        assert m.get("vireo_vnet_announces_total", 0) >= 1, m.get("vireo_vnet_announces_total")
    finally:
        if load is not None and not load.stopping.is_set():
            load.stop()
        if dump is not None and dump.poll() is None:
            dump.kill()
            dump.wait(10)
        for vm in (dst, src):
            if vm is not None:
                vm.stop()
        client.close_ns()


@Q
def test_lockdown_refuses_then_accepts(bns):
    """A guest that negotiated RING_PACKED cannot move to a NIC without it:
    the destination refuses it, the source keeps serving. Booted with
    virtio.features= leaving RING_PACKED out, it moves to that NIC."""
    client = NsClient(bns.ns, GUEST_IP)
    src = dst = load = None
    try:
        src = boot(bns, "tap0", "packed=on")
        src.wait_for(mxlib.READY, timeout=180)
        feats = src.wait_for(r"^virtio\d+: features.*\bGUEST_ANNOUNCE\b.*$", timeout=5).group(0)
        assert "RING_PACKED" in feats, feats
        load = MixedLoad(client).start()
        wait_ok_grows(load, 30)
        dst = boot(bns, "tap1", "packed=off", incoming=True)
        info = migrate(src)
        assert info["status"] == "failed", info
        dst.proc.wait(60)
        assert dst.proc.returncode != 0
        refusal = dst.wait_for(r"^.*[Ff]eatures 0x[0-9a-f]+ unsupported.*$", timeout=5).group(0)
        print(f"\nlock-down: the destination refused: {refusal.strip()}")
        dst.stop()
        dst = None
        deadline = time.monotonic() + 30
        while src.qmp("query-status")["status"] != "running":
            assert time.monotonic() < deadline, src.qmp("query-status")
            time.sleep(0.1)
        wait_ok_grows(load, 50)  # the source still serves, nothing was lost
        load.stop()
        assert not load.errors, load.errors[:5]
        src.stop()
        src = None
        load = None

        src = boot(bns, "tap0", "packed=on", cmdline=f"virtio.features={NO_PACKED:#x}")
        src.wait_for(mxlib.READY, timeout=180)
        feats = src.wait_for(r"^virtio\d+: features.*\bGUEST_ANNOUNCE\b.*$", timeout=5).group(0)
        assert "RING_PACKED" not in feats, feats
        load = MixedLoad(client).start()
        wait_ok_grows(load, 30)
        dst = boot(bns, "tap1", "packed=off", incoming=True)
        info = migrate(src)
        assert info["status"] == "completed", info
        wait_ok_grows(load, 50)
        load.stop()
        assert not load.errors, load.errors[:5]
        print(f"\nlock-down: masked guest migrated, downtime {info.get('downtime')} ms, "
              f"total {info.get('total-time')} ms")
    finally:
        if load is not None and not load.stopping.is_set():
            load.stop()
        for vm in (dst, src):
            if vm is not None:
                vm.stop()
        client.close_ns()
