"""virtio-net before the IP stack: raw frames out and back (vnet.echo), link
state from the monitor, across device configurations."""
import re
import socket
import time

import pytest

READY = r"^vireo: kernel ready$"
GUEST_MAC = bytes.fromhex("525400123456")
PEER_MAC = bytes.fromhex("020000000001")


def free_udp_port():
    s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    return port


@pytest.mark.parametrize("opts", ["", "disable-modern=on,mrg_rxbuf=off", "disable-legacy=on,packed=on",
                                  "event_idx=off", "vectors=0", "indirect_desc=off"])
def test_raw_frames_echo_back(boot, opts):
    # QEMU's socket netdev: guest frames go to our port as UDP datagrams,
    # and datagrams we send to QEMU's port arrive as frames.
    ours = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    ours.bind(("127.0.0.1", 0))
    ours.settimeout(10)
    qemu_port = free_udp_port()
    dev = "virtio-net-pci,netdev=n0,romfile=,mac=52:54:00:12:34:56" + (f",{opts}" if opts else "")
    vm = boot(cmdline="vnet.echo", extra=[
        "-netdev", f"socket,id=n0,udp=127.0.0.1:{ours.getsockname()[1]},localaddr=127.0.0.1:{qemu_port}",
        "-device", dev])
    vm.wait_for(READY)
    vm.wait_for(r"^virtio\d+: net: link up$")
    try:
        for i, size in enumerate([60, 100, 1000, 1514]):
            payload = bytes((i + k) & 0xff for k in range(size - 14))
            frame = GUEST_MAC + PEER_MAC + b"\x88\xb5" + payload
            ours.sendto(frame, ("127.0.0.1", qemu_port))
            deadline = time.monotonic() + 10
            while True:
                back, _ = ours.recvfrom(65536)
                if back[12:14] == b"\x88\xb5" or time.monotonic() > deadline:
                    break
            assert back[:6] == PEER_MAC and back[6:12] == GUEST_MAC, back[:14].hex()
            assert back[14:14 + len(payload)] == payload
    finally:
        ours.close()
    assert "broken" not in vm.text


def test_link_down_and_up_is_seen(boot):
    vm = boot(extra=["-netdev", "user,id=n0,restrict=on", "-device", "virtio-net-pci,netdev=n0,id=nic0,romfile="])
    vm.wait_for(READY)
    up = vm.wait_for(r"^virtio(\d+): net: link up$")
    idx = up.group(1)
    vm.qmp("set_link", name="nic0", up=False)
    down = vm.wait_for(rf"^virtio{idx}: net: link down$", timeout=20, start=up.end())
    vm.qmp("set_link", name="nic0", up=True)
    vm.wait_for(rf"^virtio{idx}: net: link up$", timeout=20, start=down.end())
