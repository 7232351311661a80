"""Transmit segmentation offload (HOST_TSO4/6) as seen on a wire.

The guest's tap is in namespace A, which routes to a client in namespace B
over a veth pair whose A end has checksum and segmentation offload turned
off: every large frame the guest sends (a GSO frame through the tap) is cut
by Linux's software GSO into MTU-sized frames with real checksums before it
leaves A, exactly as a device would put it on a wire. A packet socket on
that veth end sees those frames: none may be larger than the MTU, every TCP
checksum must be right, and the bytes of each response, put together by
sequence number, must be what the client received. /64k.bin and a 512 KiB
file (built into a test site here, never into the default image) come back
byte for byte; /metrics shows offloaded frames were sent, and none with
vnet.tso=off."""
import os
import re
import socket
import struct
import subprocess
import threading
import uuid

import pytest

from mxlib import BIG, GUEST_LL, ROOT, Guest, _setns, extra_site_image

HALF_MIB = bytes(i % 251 for i in range(1 << 19))
SITE_BUILD = os.path.join(ROOT, "build", "tso-site")
EXTRA = "64k.bin=65536 512k.bin=524288"
NET_A, NET_B = "10.78.0.1", "10.78.0.2"
ETH_P_ALL = 3
PACKET_OUTGOING = 4


@pytest.fixture(scope="module")
def big_image():
    """build/vireo.img's objects relinked with a site that has /512k.bin."""
    return extra_site_image(SITE_BUILD, EXTRA)


class Wire:
    """Namespace B behind a veth from the guest's namespace, with the
    offloads of A's end off, and a capture of what leaves A through it."""

    def __init__(self, guest):
        self.g = guest
        self.b = "vireo-b-" + uuid.uuid4().hex[:8]
        a = guest.ns.name
        sh = lambda *c: subprocess.run(c, check=True, capture_output=True)  # noqa: E731
        sh("ip", "netns", "add", self.b)
        try:
            sh("ip", "-n", a, "link", "add", "va", "type", "veth", "peer", "name", "vb", "netns", self.b)
            sh("ip", "-n", a, "addr", "add", f"{NET_A}/24", "dev", "va")
            sh("ip", "-n", self.b, "addr", "add", f"{NET_B}/24", "dev", "vb")
            sh("ip", "-n", a, "link", "set", "va", "up")
            sh("ip", "-n", self.b, "link", "set", "vb", "up")
            sh("ip", "-n", self.b, "link", "set", "lo", "up")
            sh("ip", "-n", self.b, "route", "add", "default", "via", NET_A)
            sh("ip", "netns", "exec", a, "sysctl", "-qw", "net.ipv4.ip_forward=1")
            sh("ip", "netns", "exec", a, "ethtool", "-K", "va", "tx", "off", "tso", "off", "gso", "off")
            self.frames = []
            self.stop = threading.Event()
            own = os.open("/proc/thread-self/ns/net", os.O_RDONLY)
            try:
                _setns(guest._nsfd)
                try:
                    self.sock = socket.socket(socket.AF_PACKET, socket.SOCK_RAW, socket.htons(ETH_P_ALL))
                finally:
                    _setns(own)
            finally:
                os.close(own)
            self.sock.setsockopt(socket.SOL_SOCKET, 33, 32 << 20)  # SO_RCVBUFFORCE
            self.sock.bind(("va", ETH_P_ALL))
            self.sock.settimeout(0.2)
            self.thread = threading.Thread(target=self._capture, daemon=True)
            self.thread.start()
        except BaseException:
            self.close()
            raise

    def _capture(self):
        # After stop, read on until the socket has been empty for a timeout:
        # under load this thread lags the wire, and the frames queued in the
        # socket's buffer when the last response arrived belong to it.
        while True:
            try:
                data, addr = self.sock.recvfrom(1 << 17)
            except socket.timeout:
                if self.stop.is_set():
                    return
                continue
            except OSError:
                return
            if addr[2] == PACKET_OUTGOING:
                self.frames.append(data)

    def get(self, path):
        """The raw response to a GET from namespace B (curl -i: headers and body as sent)."""
        r = subprocess.run(["ip", "netns", "exec", self.b, "curl", "-s", "-i", "--http1.1", "-m", "120",
                            f"http://{self.g.ip}{path}"], capture_output=True, timeout=180)
        assert r.returncode == 0, r.stderr.decode()
        return r.stdout

    def close(self):
        if hasattr(self, "thread"):
            self.stop.set()
            self.thread.join(5)
            self.sock.close()
        subprocess.run(["ip", "netns", "del", self.b], capture_output=True)

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()


def csum(data):
    if len(data) % 2:
        data += b"\0"
    s = sum(struct.unpack(f"!{len(data) // 2}H", data))
    while s >> 16:
        s = (s & 0xffff) + (s >> 16)
    return s


def check_wire(frames, guest_ip, responses):
    """Every frame fits the MTU; every TCP segment from the guest has a
    right checksum; each response's bytes, by sequence number, are what
    the client got. responses: the raw responses, one per connection, in
    the order the connections were made."""
    streams = {}
    gip = socket.inet_aton(guest_ip)
    for f in frames:
        assert len(f) <= 1514, f"a {len(f)}-byte frame on the wire"
        if f[12:14] != b"\x08\x00" or f[23] != 6 or f[26:30] != gip:
            continue
        ihl = (f[14] & 15) * 4
        tot = struct.unpack("!H", f[16:18])[0]
        seg = f[14 + ihl:14 + tot]
        pseudo = f[26:34] + struct.pack("!BBH", 0, 6, len(seg))
        assert csum(pseudo + seg) == 0xffff, f"bad TCP checksum on a {len(f)}-byte frame"
        dport, seq = struct.unpack("!H", seg[2:4])[0], struct.unpack("!I", seg[4:8])[0]
        data = seg[(seg[12] >> 4) * 4:]
        if data:
            st = streams.setdefault(dport, {})
            # a retransmission must carry the same bytes
            assert st.get(seq, data) == data or data.startswith(st[seq]) or st[seq].startswith(data)
            if len(data) >= len(st.get(seq, b"")):
                st[seq] = data
    assert len(streams) == len(responses), sorted(streams)
    for (port, st), want in zip(sorted(streams.items()), responses):
        start = min(st)
        got = bytearray()
        for seq in sorted(st):
            off = (seq - start) & 0xffffffff
            assert off <= len(got), f"port {port}: a hole in the captured stream at {len(got)}"
            got[off:off + len(st[seq])] = st[seq]
        assert bytes(got) == want, f"port {port}: the wire carried {len(got)} bytes, the client got {len(want)}"


def body(resp):
    head, _, b = resp.partition(b"\r\n\r\n")
    assert head.startswith(b"HTTP/1.1 200"), head[:80]
    return b


@pytest.mark.quick
def test_tso_on_the_wire(big_image):
    with Guest(image=big_image, mem=128) as g, Wire(g) as w:
        assert re.search(r"^net: lwIP .*; segmentation offload: tso4 tso6; receive offload: tso4 tso6$", g.vm.text, re.M), g.vm.text[-3000:]
        before = g.metrics()
        small = w.get("/64k.bin")
        big = w.get("/512k.bin")
        assert body(small) == BIG and body(big) == HALF_MIB
        after = g.metrics()
        w.stop.set()
        w.thread.join(30)
        check_wire(w.frames, g.ip, [small, big])
        frames = after["vireo_vnet_tso_frames_total"] - before["vireo_vnet_tso_frames_total"]
        segs = after["vireo_vnet_tso_segments_total"] - before["vireo_vnet_tso_segments_total"]
        # 512 KiB is at least 360 full segments; most of them travelled merged
        assert frames > 0 and segs >= 2 * frames and segs > 180, (frames, segs)
        # IPv6 (link-local, from the guest's own namespace) is offloaded too
        r = g.ns.run("ping", "-6", "-c", "2", "-i", "0.3", "-W", "10", f"{GUEST_LL}%{g.ns.tap}", timeout=90)
        assert r.returncode == 0, r.stdout.decode() + r.stderr.decode()
        before = g.metrics()
        r = g.ns.run("curl", "-s", "-g", "-m", "120", f"http://[{GUEST_LL}%25{g.ns.tap}]/512k.bin", timeout=180)
        assert r.returncode == 0 and r.stdout == HALF_MIB, (r.returncode, len(r.stdout))
        after = g.metrics()
        assert after["vireo_vnet_tso_frames_total"] > before["vireo_vnet_tso_frames_total"]
        assert after["vireo_vnet_rx_buffers_held"] == 0
        g.log_clean()


def test_tso_off(big_image):
    """vnet.tso=off: not negotiated, said so, nothing offloaded, same bytes."""
    with Guest(image=big_image, mem=128, cmdline="vnet.tso=off") as g, Wire(g) as w:
        assert re.search(r"^net: lwIP .*; segmentation offload: off; receive offload: tso4 tso6$", g.vm.text, re.M), g.vm.text[-3000:]
        net_dev = re.search(r"^(virtio\d+): pci \S+ \w+, net ", g.vm.text, re.M).group(1)
        feats = re.search(rf"^{net_dev}: features (.*)$", g.vm.text, re.M).group(1).split()
        assert "HOST_TSO4" not in feats and "HOST_TSO6" not in feats and "CSUM" in feats, feats
        big = w.get("/512k.bin")
        assert body(big) == HALF_MIB
        w.stop.set()
        w.thread.join(30)
        check_wire(w.frames, g.ip, [big])
        m = g.metrics()
        assert m["vireo_vnet_tso_frames_total"] == 0 and m["vireo_tso_merged_segments_total"] == 0
        g.log_clean()
