"""vireo against a current QEMU's virtio devices: the features Debian 12's
QEMU 7.2 does not offer, proven against QEMU 10.0's implementation instead
of only against vireo's own simulated device (tests/host/simdev).

The QEMU is `make qemu-current`'s (tools/qemu-current.sh: Debian trixie's
source package, x86_64-softmmu only, cached outside the clone). Without it
every test here is skipped with the command that builds it; `make test`
keeps Debian 12's QEMU. Run alone with `make test-qemu-current`; `make
test-matrix` includes them when that QEMU is present.

Every row boots the appliance on a tap device with the feature on and runs
test_matrix.test_appliance's checks (the feature negotiated, as the boot
log's features line says; /, /64k.bin and /healthz byte for byte; ping over
IPv4 and IPv6; UDP echo, fragmented too; a 200,000 B TCP echo; no receive
buffer held, no device reset, no broken queue)."""
import os
import re
import subprocess

import pytest

import test_matrix
from mxlib import Guest

pytestmark = pytest.mark.qemu_current

HERE = os.path.dirname(os.path.abspath(__file__))
SCRIPT = os.path.join(HERE, "..", "..", "tools", "qemu-current.sh")
QEMU10 = subprocess.run([SCRIPT, "--path"], capture_output=True, text=True, check=True).stdout.strip()
BUILD = "make qemu-current"


def built():
    return os.access(QEMU10, os.X_OK)


@pytest.fixture(scope="module", autouse=True)
def qemu10():
    """Every QEMU this module starts is QEMU 10.0 (images/qemu.sh reads
    VIREO_QEMU); skipped, with the reason, where it has not been built."""
    if not built():
        pytest.skip(f"QEMU 10.0 not built ({QEMU10} missing): run `{BUILD}` once "
                    f"(Debian trixie's source, cached outside the clone), then `make test-qemu-current`")
    old = os.environ.get("VIREO_QEMU")
    os.environ["VIREO_QEMU"] = QEMU10
    yield QEMU10
    if old is None:
        del os.environ["VIREO_QEMU"]
    else:
        os.environ["VIREO_QEMU"] = old


def props(qemu, device):
    """The property names `-device DEVICE,help` lists."""
    r = subprocess.run([qemu, "-device", f"{device},help"], capture_output=True, text=True, timeout=60)
    assert r.returncode == 0, r.stderr
    return {m.group(1) for m in re.finditer(r"^\s+([\w-]+)=", r.stdout, re.M)}


def offers(prop, device="virtio-net-pci"):
    return built() and prop in props(QEMU10, device)


def test_is_qemu_10():
    r = subprocess.run([QEMU10, "--version"], capture_output=True, text=True, timeout=60)
    assert re.match(r"QEMU emulator version 10\.0\.", r.stdout), r.stdout


# Properties QEMU 10.0's virtio-net-pci, virtio-rng-pci and virtio-serial-pci
# have and the system QEMU's (7.2) lack, and what vireo makes of each. A
# property not listed fails test_new_properties_accounted: a new pin must say
# what it brings.
NEW_PROPS = {
    "in_order": "VIRTIO_F_IN_ORDER: the rows below, split and packed, net, rng and console",
    "guest_uso4": "VIRTIO_NET_F_GUEST_USO4 (bit 54): UDP segmentation offload, not negotiated by vireo",
    "guest_uso6": "VIRTIO_NET_F_GUEST_USO6 (bit 55): likewise",
    "host_uso": "VIRTIO_NET_F_HOST_USO (bit 56): likewise (test_net asserts no unnamed bit is taken)",
    "ebpf-rss-fds": "the host's RSS eBPF program, no guest-visible feature",
    "busnr": "PCI bus number (for expander bridges), not a virtio feature",
    "x-max-bounce-buffer-size": "QEMU-internal DMA bounce buffer size",
    "x-pcie-ari-nextfn-1": "experimental PCIe ARI knob, not a virtio feature",
    "x-pcie-err-unc-mask": "experimental PCIe AER knob, not a virtio feature",
    "x-pcie-ext-tag": "experimental PCIe extended-tag knob, not a virtio feature",
    "x-pcie-pm-no-soft-reset": "experimental PCIe power-management knob, not a virtio feature",
}


def test_new_properties_accounted():
    new = {}
    for dev in ("virtio-net-pci", "virtio-rng-pci", "virtio-serial-pci"):
        new[dev] = props(QEMU10, dev) - props("qemu-system-x86_64", dev)
    print("\nproperties QEMU 10.0 adds over the system QEMU:", {d: sorted(p) for d, p in new.items()})
    assert "in_order" in new["virtio-net-pci"], new
    for dev, p in new.items():
        assert p <= set(NEW_PROPS), (dev, sorted(p - set(NEW_PROPS)))


NOTIF = pytest.mark.skipif(built() and not offers("notification_data"), reason=(
    "QEMU 10.0's emulated virtio devices have no notification_data property: only vhost "
    "backends (vhost-user, vDPA) pass VIRTIO_F_NOTIFICATION_DATA through, and none runs here; "
    "NOTIFICATION_DATA stays proven against tests/host/simdev only"))

# id: (virtio-net-pci options, features that must be negotiated, must not)
NET_ROWS = [
    pytest.param("disable-legacy=on,in_order=on", {"IN_ORDER", "MRG_RXBUF", "EVENT_IDX"}, {"RING_PACKED"},
                 id="in_order-split"),
    pytest.param("disable-legacy=on,packed=on,in_order=on", {"IN_ORDER", "RING_PACKED", "MRG_RXBUF"}, set(),
                 id="in_order-packed"),
    pytest.param("disable-legacy=on,in_order=on,mrg_rxbuf=off,indirect_desc=off", {"IN_ORDER"},
                 {"MRG_RXBUF", "INDIRECT_DESC"}, id="in_order-split-big-direct"),
    pytest.param("disable-legacy=on,packed=on,in_order=on,event_idx=off,vectors=0", {"IN_ORDER", "RING_PACKED"},
                 {"EVENT_IDX"}, id="in_order-packed-intx-no-event_idx"),
    pytest.param("disable-legacy=on,ioeventfd=off,notification_data=on", {"NOTIFICATION_DATA"}, set(),
                 id="notification_data-split", marks=NOTIF),
    pytest.param("disable-legacy=on,ioeventfd=off,packed=on,notification_data=on,in_order=on",
                 {"NOTIFICATION_DATA", "RING_PACKED", "IN_ORDER"}, set(), id="notification_data-packed", marks=NOTIF),
]


@pytest.mark.parametrize("opts,must,must_not", NET_ROWS)
def test_net(opts, must, must_not):
    test_matrix.test_appliance(opts, "q35", 64, [], None, must, must_not)


def test_no_unnamed_feature():
    """vireo names every bit it negotiates; a "bitNN" in the features line
    would be one of QEMU 10.0's new bits taken without a driver for it."""
    with Guest(device_opts="disable-legacy=on,in_order=on") as g:
        feats = device_features(g.vm.text, "net")
        assert "IN_ORDER" in feats and not [f for f in feats if f.startswith("bit")], sorted(feats)


def device_features(text, kind):
    """The features line of the first PCI device of KIND (net, rng, console)."""
    m = re.search(rf"^(virtio\d+): pci \S+ modern, {kind}\b", text, re.M)
    assert m, text[-3000:]
    return set(re.search(rf"^{m.group(1)}: features (.*)$", text, re.M).group(1).split())


@pytest.mark.parametrize("ring", ["split", "packed"])
def test_rng_console(ring, tmp_path_factory):
    """virtio-rng and virtio-console with IN_ORDER: the entropy read, and a
    shell command typed on the virtconsole answered there (its receive and
    transmit queues both used; the socket connects after boot, so the boot
    log's replay went to no one)."""
    from test_console import Chardev  # tests/qemu, on the path through mxlib

    packed = ",packed=on" if ring == "packed" else ""
    opts = f"disable-legacy=on,in_order=on{packed}"
    sock = os.path.join(tmp_path_factory.mktemp("q10", numbered=True), "c0.sock")
    if len(sock) > 100:
        sock = os.path.join("/tmp", f"q10-{os.getpid()}-{ring}.sock")
    extra = ["-chardev", f"socket,id=c0,path={sock},server=on,wait=off",
             "-device", f"virtio-rng-pci,{opts}", "-device", f"virtio-serial-pci,{opts}",
             "-device", "virtconsole,chardev=c0"]
    with Guest(device_opts=opts, extra=extra, cmdline="echo=tcp,udp") as g:
        con = Chardev(sock)
        try:
            for kind in ("net", "rng", "console"):
                feats = device_features(g.vm.text, kind)
                want = {"IN_ORDER"} | ({"RING_PACKED"} if packed else set())
                assert want <= feats, (kind, sorted(feats))
            assert re.search(r"^virtio\d+: rng: 256 bytes of entropy mixed in", g.vm.text, re.M), g.vm.text[-3000:]
            mark = len(con.text)
            con.send("vcons\r")
            m = con.wait_for(r"^virtio\d+: console: port 0 console.*: out (\d+) B, in (\d+) B, dropped (\d+) B$",
                             timeout=30, start=mark)
            assert int(m.group(2)) >= len("vcons\r") and int(m.group(3)) == 0, m.group(0)
            g.serves()
            g.tcp_echo(bytes(i % 251 for i in range(65536)))
            met = g.metrics()
            assert met["vireo_vnet_rx_buffers_held"] == 0
            assert met["vireo_vnet_device_resets_total"] == 0
            g.log_clean()
        finally:
            con.close()
