"""Receive segmentation offload (GUEST_TSO4/6): uploads through TCP echo.

The client is Linux in the guest's namespace, sending to echo (port 7) over
the tap. With GUEST_TSO negotiated QEMU turns the tap's TSO on, so the host's
TCP stack hands the guest segments larger than the MSS (one GSO frame,
several buffers); vireo takes each up as one pbuf chain. The bytes that come
back must be the bytes sent (1 MiB and 16 MiB over IPv4, 1 MiB over IPv6),
/metrics must show that coalesced segments arrived (more wire segments than
frames) and that no frame was dropped, and no receive buffer may stay held.
With vnet.guest_tso=off the offload is not negotiated, the log says so, and
the same upload arrives segment by segment."""
import re
import socket
import subprocess
import threading

from mxlib import GUEST_LL, Guest
import pytest

MIB = 1 << 20


def pattern(n):
    block = bytes(i % 251 for i in range(251 * 64))
    return (block * (n // len(block) + 1))[:n]


def upload(g, payload, family=socket.AF_INET, addr=None, timeout=120):
    """Sends payload to echo from one thread while reading it back in this
    one (echo returns as it receives: neither side may wait for the other);
    returns what came back."""
    s = g.socket(family)
    s.settimeout(timeout)
    err = []
    try:
        s.connect(addr or (g.ip, 7))

        def send():
            try:
                s.sendall(payload)
            except OSError as e:  # reported below, after the reader stops
                err.append(e)

        t = threading.Thread(target=send, daemon=True)
        t.start()
        got = bytearray()
        while len(got) < len(payload):
            c = s.recv(1 << 20)
            if not c:
                break
            got += c
        t.join(timeout)
    finally:
        s.close()
    assert not err, err
    return bytes(got)


def rx_counters(g):
    m = g.metrics()
    drops = {k: v for k, v in m.items() if k.startswith("vireo_vnet_rx_drops_total") and v}
    return m["vireo_vnet_rx_tso_frames_total"], m["vireo_vnet_rx_tso_segments_total"], drops


def features(text):
    dev = re.search(r"^(virtio\d+): pci \S+ \w+, net ", text, re.M).group(1)
    return set(re.search(rf"^{dev}: features (.*)$", text, re.M).group(1).split())


@pytest.mark.quick
def test_upload_rx_tso():
    with Guest(mem=128, cmdline="echo=tcp") as g:
        assert re.search(r"^net: lwIP .*; receive offload: tso4 tso6$", g.vm.text, re.M), g.vm.text[-3000:]
        assert {"GUEST_TSO4", "GUEST_TSO6", "GUEST_CSUM", "MRG_RXBUF"} <= features(g.vm.text)
        f0, s0, _ = rx_counters(g)
        for n in (MIB, 16 * MIB):
            data = pattern(n)
            assert upload(g, data) == data, f"{n} bytes through echo"
        f1, s1, drops = rx_counters(g)
        # coalesced segments arrived: more wire segments than frames, and
        # each frame more than one MSS on average
        assert f1 > f0 and (s1 - s0) > (f1 - f0), (f1 - f0, s1 - s0)
        assert not drops, drops

        # IPv6 (link-local, the tap's scope): GUEST_TSO6
        idx = int(subprocess.run(["ip", "-n", g.ns.name, "-o", "link", "show", g.ns.tap], check=True,
                                 capture_output=True, text=True).stdout.split(":")[0])
        data = pattern(MIB)
        assert upload(g, data, socket.AF_INET6, (GUEST_LL, 7, 0, idx)) == data
        f2, s2, drops = rx_counters(g)
        assert f2 > f1 and s2 - s1 > f2 - f1, (f2 - f1, s2 - s1)
        assert not drops, drops
        assert g.metrics()["vireo_vnet_rx_buffers_held"] == 0
        g.log_clean()


def test_upload_guest_tso_off():
    with Guest(mem=128, cmdline="echo=tcp vnet.guest_tso=off") as g:
        assert re.search(r"^net: lwIP .*; receive offload: off$", g.vm.text, re.M), g.vm.text[-3000:]
        feats = features(g.vm.text)
        assert not {"GUEST_TSO4", "GUEST_TSO6"} & feats and "GUEST_CSUM" in feats, sorted(feats)
        data = pattern(MIB)
        assert upload(g, data) == data
        f, s, drops = rx_counters(g)
        assert f == 0 and s == 0 and not drops, (f, s, drops)
        g.log_clean()
