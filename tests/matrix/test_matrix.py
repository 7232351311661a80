"""The appliance under every virtio-net configuration QEMU offers that vireo
drives: transports, ring layouts, ring features, offloads, interrupt modes,
queue sizes, jumbo frames, ACCESS_PLATFORM, both machines, with and without
the other virtio devices, and the smallest memory OVMF boots with. Each
configuration boots one guest on a tap device and checks / (byte for byte),
/64k.bin, /healthz, ping (IPv4 and IPv6), UDP and TCP echo, and that no
receive buffer is left held. `quick` marks the subset `make test` runs."""
import re

import pytest

from mxlib import GUEST_LL, Guest

Q = pytest.mark.quick
RNG_CONSOLE = ["-chardev", "null,id=mxc0", "-device", "virtio-rng-pci", "-device", "virtio-serial-pci",
               "-device", "virtconsole,chardev=mxc0"]

# id: (device options, machine, mem, extra QEMU args, tap mtu, features that
# must be negotiated, features that must not be)
CONFIGS = [
    pytest.param("", "q35", 64, [], None, {"VERSION_1", "MRG_RXBUF", "CSUM", "GUEST_CSUM", "EVENT_IDX",
                                              "INDIRECT_DESC", "HOST_TSO4", "HOST_TSO6", "GUEST_TSO4", "GUEST_TSO6"},
                 {"RING_PACKED"},
                 id="default"),
    pytest.param("disable-modern=on", "q35", 64, [], None, {"MRG_RXBUF"}, {"VERSION_1"}, id="legacy"),
    pytest.param("disable-legacy=on", "q35", 64, [], None, {"VERSION_1"}, {"RING_PACKED"}, id="modern-only"),
    pytest.param("disable-legacy=on,packed=on", "q35", 64, [], None, {"VERSION_1", "RING_PACKED"}, set(),
                 id="packed", marks=Q),
    pytest.param("event_idx=off", "q35", 64, [], None, set(), {"EVENT_IDX"}, id="event_idx-off"),
    pytest.param("packed=on,event_idx=off", "q35", 64, [], None, {"RING_PACKED"}, {"EVENT_IDX"},
                 id="packed-event_idx-off"),
    pytest.param("indirect_desc=off", "q35", 64, [], None, set(), {"INDIRECT_DESC"}, id="indirect-off"),
    pytest.param("packed=on,indirect_desc=off", "q35", 64, [], None, {"RING_PACKED"}, {"INDIRECT_DESC"},
                 id="packed-indirect-off"),
    pytest.param("mrg_rxbuf=off", "q35", 64, [], None, set(), {"MRG_RXBUF"}, id="mrg_rxbuf-off"),
    pytest.param("csum=off,guest_csum=off", "q35", 64, [], None, set(), {"CSUM", "GUEST_CSUM", "HOST_TSO4"},
                 id="csum-off"),
    pytest.param("host_tso4=off", "q35", 64, [], None, {"CSUM", "HOST_TSO6"}, {"HOST_TSO4"}, id="host_tso4-off"),
    pytest.param("guest_tso4=off", "q35", 64, [], None, {"GUEST_CSUM", "GUEST_TSO6"}, {"GUEST_TSO4"},
                 id="guest_tso4-off"),
    pytest.param("vectors=0,mrg_rxbuf=off", "q35", 64, [], None, set(), {"MRG_RXBUF"}, id="intx-mrg_rxbuf-off",
                 marks=Q),
    pytest.param("vectors=0", "q35", 64, [], None, set(), set(), id="intx"),
    pytest.param("rx_queue_size=1024,tx_queue_size=1024", "q35", 64, [], None, set(), set(), id="queues-1024"),
    pytest.param("host_mtu=9000", "q35", 64, [], 9000, {"MTU", "MRG_RXBUF"}, set(), id="jumbo", marks=Q),
    pytest.param("host_mtu=9000,mrg_rxbuf=off", "q35", 64, [], 9000, {"MTU"}, {"MRG_RXBUF"}, id="jumbo-mrg_rxbuf-off"),
    pytest.param("disable-legacy=on,iommu_platform=on", "q35", 64, [], None, {"ACCESS_PLATFORM"}, set(),
                 id="iommu_platform"),
    pytest.param("disable-legacy=on,iommu_platform=on", "q35", 64, ["-device", "intel-iommu"], None,
                 {"ACCESS_PLATFORM"}, set(), id="iommu_platform-intel-iommu"),
    pytest.param("", "pc", 64, [], None, {"VERSION_1"}, set(), id="pc"),
    pytest.param("disable-modern=on", "pc", 64, [], None, set(), {"VERSION_1"}, id="pc-legacy", marks=Q),
    pytest.param("disable-legacy=on,packed=on,vectors=0", "pc", 64, [], None, {"RING_PACKED"}, set(),
                 id="pc-packed-intx"),
    pytest.param("", "q35", 64, RNG_CONSOLE, None, set(), set(), id="with-rng-console"),
    pytest.param("", "q35", 48, [], None, set(), set(), id="mem48"),
    pytest.param("disable-modern=on,vectors=0,mrg_rxbuf=off,csum=off,guest_csum=off", "pc", 48, RNG_CONSOLE, None,
                 set(), {"VERSION_1", "MRG_RXBUF", "CSUM"}, id="pc-legacy-everything-off-48m"),
]


def net_lines(text):
    m = re.search(r"^(virtio\d+): pci \S+ (modern|legacy), net ", text, re.M)
    assert m, text[-3000:]
    dev = m.group(1)
    feats = set(re.search(rf"^{dev}: features (.*)$", text, re.M).group(1).split())
    probe = re.search(rf"^{dev}: net: mac \S+ mtu (\d+), rx (\d+) x (\d+) B( mergeable)?, tx ring (\d+)", text, re.M)
    lwip = re.search(r"^net: lwIP \S+ on virtio\d+, mtu (\d+), checksums: tx (\w+), rx (\w+); "
                     r"segmentation offload: ([\w ]+); receive offload: ([\w ]+)$", text, re.M)
    assert probe and lwip, text[-3000:]
    return m.group(2), feats, probe, lwip


@pytest.mark.parametrize("opts,machine,mem,extra,tap_mtu,must,must_not", CONFIGS)
def test_appliance(opts, machine, mem, extra, tap_mtu, must, must_not):
    with Guest(device_opts=opts, machine=machine, mem=mem, extra=extra, tap_mtu=tap_mtu,
               cmdline="echo=tcp,udp") as g:
        transport, feats, probe, lwip = net_lines(g.vm.text)
        assert transport == ("legacy" if "disable-modern=on" in opts else "modern")
        assert must <= feats and not (must_not & feats), (opts, sorted(feats))
        assert (probe.group(4) is not None) == ("MRG_RXBUF" in feats)
        csum = "offloaded" if "CSUM" in feats else "software"
        assert lwip.group(2) == csum and lwip.group(3) == ("offloaded" if "GUEST_CSUM" in feats else "software")
        tso = " ".join(t for t in ("tso4", "tso6") if f"HOST_{t.upper()}" in feats and "CSUM" in feats)
        assert lwip.group(4) == (tso or "off"), (lwip.group(4), sorted(feats))
        # receive TSO needs GUEST_CSUM and, by vireo's choice, MRG_RXBUF
        rx = " ".join(t for t in ("tso4", "tso6") if f"GUEST_{t.upper()}" in feats)
        assert not rx or {"GUEST_CSUM", "MRG_RXBUF"} <= feats, sorted(feats)
        if "MRG_RXBUF" not in feats:
            assert not {"GUEST_TSO4", "GUEST_TSO6"} & feats, sorted(feats)
        assert lwip.group(5) == (rx or "off"), (lwip.group(5), sorted(feats))
        mtu = 9000 if "host_mtu=9000" in opts else 1500
        assert int(probe.group(1)) == mtu and int(lwip.group(1)) == mtu

        g.serves()
        g.ping()
        r = g.ns.run("ping", "-6", "-c", "2", "-i", "0.3", "-W", "10", f"{GUEST_LL}%{g.ns.tap}", timeout=90)
        assert r.returncode == 0, r.stdout.decode() + r.stderr.decode()
        g.udp_echo(bytes(range(256)) * 5)
        g.udp_echo(bytes(range(256)) * 16)  # 4 KiB: fragmented both ways
        g.tcp_echo(bytes(range(256)) * 80)
        g.tcp_echo(bytes(i % 253 for i in range(200000)))  # echo's copied segments, merged where offered
        if mtu == 9000:
            # big frames both ways, unfragmented: ICMP with DF, a UDP datagram
            # that fills most of a jumbo frame
            g.ping("-M", "do", "-s", str(9000 - 28))
            g.udp_echo(bytes(i & 0xff for i in range(8900)))
            rx = g.metrics()
            assert rx['vireo_vnet_rx_drops_total{reason="frame_too_big"}'] == 0
        if "intel-iommu" in extra:
            # translated, not identity: the NIC's addresses are in vireo's
            # IOVA windows, nothing is mapped at physical addresses
            assert re.search(r"^vtd0: translation on ", g.vm.text, re.M), g.vm.text[-3000:]
            assert re.search(r"^vtd0: 00:02\.0 translated in domain \d+$", g.vm.text, re.M)
            assert "vtd0: fault" not in g.vm.text
        if extra is RNG_CONSOLE:
            assert re.search(r"^virtio\d+: rng: 256 bytes of entropy mixed in", g.vm.text, re.M)
            assert re.search(r"^virtio\d+: console: ", g.vm.text, re.M)

        m = g.metrics()
        assert m["vireo_vnet_rx_buffers_held"] == 0
        assert m["vireo_vnet_device_resets_total"] == 0
        g.log_clean()
