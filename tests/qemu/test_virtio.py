"""Virtio core under OVMF: bus, both PCI transports, split and packed rings,
driven end to end by the virtio-rng driver (the smallest queue user)."""
import re

READY = r"^vireo: kernel ready$"

# slot -> (device options, features that must be negotiated, must not be, ring, msi-x)
RNG_MATRIX = {
    0x10: ("", {"VERSION_1", "EVENT_IDX", "INDIRECT_DESC"}, {"RING_PACKED"}, "split", True),
    0x11: ("disable-modern=on", {"EVENT_IDX", "INDIRECT_DESC"}, {"VERSION_1"}, "split", True),
    0x12: ("disable-legacy=on,packed=on", {"VERSION_1", "RING_PACKED"}, set(), "packed", True),
    0x13: ("event_idx=off", {"VERSION_1"}, {"EVENT_IDX"}, "split", True),
    0x14: ("indirect_desc=off", {"VERSION_1", "EVENT_IDX"}, {"INDIRECT_DESC"}, "split", True),
    0x15: ("disable-legacy=on,iommu_platform=on", {"VERSION_1", "ACCESS_PLATFORM"}, set(), "split", True),
    0x16: ("vectors=0", {"VERSION_1"}, set(), "split", False),
}


def rng_args(matrix):
    args = []
    for slot, (opts, *_rest) in matrix.items():
        args += ["-device", f"virtio-rng-pci,addr={slot:#x}" + (f",{opts}" if opts else "")]
    return args


def virtio_index(text, slot, bus=0):
    m = re.search(rf"^virtio(\d+): pci {bus:02x}:{slot:02x}\.0 (modern|legacy), rng", text, re.M)
    assert m, text
    return int(m.group(1)), m.group(2)


def features(text, idx):
    return set(re.search(rf"^virtio{idx}: features (.*)$", text, re.M).group(1).split())


def entropy_line(vm, idx):
    return vm.wait_for(rf"^virtio{idx}: rng: 256 bytes of entropy mixed in \((\w+) ring([^)]*)\)$", timeout=30)


def test_transport_and_ring_matrix(boot):
    vm = boot(extra=rng_args(RNG_MATRIX))
    vm.wait_for(READY)
    for slot, (opts, must, must_not, ring, msix) in RNG_MATRIX.items():
        idx, transport = virtio_index(vm.text, slot)
        assert transport == ("legacy" if "disable-modern=on" in opts else "modern"), opts
        status = re.search(rf"^virtio{idx}: virtio-rng driver bound, status (\S+)$", vm.text, re.M).group(1)
        expect = "ACKNOWLEDGE|DRIVER|DRIVER_OK" + ("" if transport == "legacy" else "|FEATURES_OK")
        assert status == expect, (opts, status)
        got = features(vm.text, idx)
        assert must <= got and not (must_not & got), (opts, got)
        m = entropy_line(vm, idx)
        assert m.group(1) == ring, (opts, m.group(0))
        assert (", msi-x" in m.group(2)) == msix, (opts, m.group(0))
        assert ("event idx" in m.group(2)) == ("EVENT_IDX" in got)
    assert "broken" not in vm.text


def test_feature_lockdown_masks_packed_ring(boot):
    mask = 0xFFFFFFFFFFFFFFFF & ~(1 << 34)  # everything but RING_PACKED
    vm = boot(cmdline=f"virtio.features={mask:#x}",
              extra=["-device", "virtio-rng-pci,addr=0x10,disable-legacy=on,packed=on"])
    vm.wait_for(READY)
    idx, _ = virtio_index(vm.text, 0x10)
    assert "RING_PACKED" not in features(vm.text, idx)
    assert entropy_line(vm, idx).group(1) == "split"


def test_feature_lockdown_without_version_1_fails_modern_device(boot):
    mask = 0xFFFFFFFFFFFFFFFF & ~(1 << 32)  # no VERSION_1
    vm = boot(cmdline=f"virtio.features={mask:#x}",
              extra=["-device", "virtio-rng-pci,addr=0x10,disable-legacy=on",
                     "-device", "virtio-rng-pci,addr=0x11,disable-modern=on"])
    vm.wait_for(READY)
    bad, _ = virtio_index(vm.text, 0x10)
    good, _ = virtio_index(vm.text, 0x11)
    assert re.search(rf"^virtio{bad}: VERSION_1 is locked out by virtio.features", vm.text, re.M)
    assert re.search(rf"^virtio{bad}: virtio-rng probe failed \(-\d+\), status \S*FAILED", vm.text, re.M)
    entropy_line(vm, good)  # the legacy device works without VERSION_1


def test_pc_machine_legacy_and_modern(boot):
    vm = boot(machine="pc", extra=["-device", "virtio-rng-pci,addr=0x10",
                                   "-device", "virtio-rng-pci,addr=0x11,disable-modern=on,vectors=0"])
    vm.wait_for(READY)
    for slot in (0x10, 0x11):
        idx, _ = virtio_index(vm.text, slot)
        entropy_line(vm, idx)
