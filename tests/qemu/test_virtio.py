"""Virtio core under OVMF: bus, both PCI transports, split and packed rings,
driven end to end by the virtio-rng driver (the smallest queue user)."""
import re
import time

import pytest

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


# ---- the virtio core's recovery paths, driven by selftest= on virtio-rng ----

RING_OPTS = {"split": "", "packed": ",disable-legacy=on,packed=on"}
# What QEMU's virtio_error() prints for the descriptor virtq_debug_corrupt_next() malforms.
QEMU_ERROR = {"split": r"Desc next is \d+", "packed": r"Invalid size for indirect buffer table"}


def selftest_verdict(vm, name):
    """Waits for the self-test's one final line; returns (verdict, match)."""
    m = vm.wait_for(rf"^selftest: {name}: (pass|FAIL|skipped)( \((.*)\))?$", timeout=40)
    return m.group(1), m


def shell_answers(vm, start):
    """The kernel still runs its loop: the serial shell answers a command."""
    time.sleep(0.3)
    vm.send("help\r")
    return vm.wait_for(r"^  timeline +boot timeline$", timeout=20, start=start)


def count(text, pattern):
    return len(re.findall(pattern, text, re.M))


@pytest.mark.parametrize("ring", ["split", "packed"])
def test_needs_reset_recovery(boot, ring):
    """A malformed descriptor makes QEMU flag DEVICE_NEEDS_RESET; vireo resets
    and re-probes the device once, and the rng delivers entropy again."""
    vm = boot(cmdline="selftest=virtio-needs-reset",
              extra=["-device", "virtio-rng-pci,addr=0x10" + RING_OPTS[ring]])
    verdict, done = selftest_verdict(vm, "virtio-needs-reset")
    text = vm.text
    assert verdict == "pass", text
    idx, _ = virtio_index(text, 0x10)
    posted = re.search(rf"^selftest: virtio-needs-reset: virtio{idx} queue 0: posting a malformed descriptor "
                       rf"\({ring}: .*\)$", text, re.M)
    error = re.search(rf"^qemu-system-x86_64: {QEMU_ERROR[ring]}$", text, re.M)
    reset = re.search(rf"^virtio{idx}: device needs reset; resetting and probing again$", text, re.M)
    assert posted and error and reset, text
    # In order: bad buffer, QEMU's error, vireo's reset, a fresh bind, entropy again, pass.
    rebound = vm.wait_for(rf"^virtio{idx}: virtio-rng driver bound, status "
                          r"ACKNOWLEDGE\|DRIVER\|DRIVER_OK\|FEATURES_OK$", start=reset.end())
    again = vm.wait_for(rf"^virtio{idx}: rng: 256 bytes of entropy mixed in \((\w+) ring", start=rebound.end())
    assert posted.start() < error.start() < reset.start() < again.start() < done.start(), text
    assert again.group(1) == ring
    assert f"selftest: virtio-needs-reset: virtio{idx} recovered after 1 reset" in text
    # Still alive, and one bad self-test gave exactly one recovery.
    shell_answers(vm, done.end())
    time.sleep(1)
    text = vm.text
    assert count(text, rf"^virtio{idx}: device needs reset") == 1, text
    assert count(text, rf"^virtio{idx}: rng: 256 bytes of entropy mixed in") == 2, text
    assert count(text, rf"^virtio{idx}: virtio-rng driver bound") == 2, text
    assert count(text, r"^qemu-system-x86_64: ") == 1, text
    assert count(text, r"^selftest: virtio-needs-reset: (pass|FAIL|skipped)") == 1, text
    assert re.search(READY, text, re.M)
    assert "broken" not in text and "vireo: panic" not in text


@pytest.mark.parametrize("ring", ["split", "packed"])
def test_ring_reset_cycle(boot, ring):
    """RING_RESET (QEMU 7.2 offers it by default): reset queue 0 alone with a
    buffer in flight, detach it, re-enable the queue and refill it."""
    vm = boot(cmdline="selftest=virtio-ring-reset",
              extra=["-device", "virtio-rng-pci,addr=0x10" + RING_OPTS[ring]])
    verdict, done = selftest_verdict(vm, "virtio-ring-reset")
    text = vm.text
    assert verdict == "pass", text
    idx, _ = virtio_index(text, 0x10)
    assert "RING_RESET" in features(text, idx)
    assert re.search(rf"^selftest: virtio-ring-reset: virtio{idx} queue 0 \({ring} ring\): "
                     r"resetting with one buffer in flight$", text, re.M), text
    cycle = re.search(rf"^selftest: virtio-ring-reset: virtio{idx} queue 0 reset, 1 buffer detached, re-enabled$",
                      text, re.M)
    assert cycle, text
    after = vm.wait_for(rf"^virtio{idx}: rng: 256 bytes of entropy mixed in \((\w+) ring", start=cycle.end())
    assert after.group(1) == ring and after.start() < done.start()
    shell_answers(vm, done.end())
    text = vm.text
    assert count(text, rf"^virtio{idx}: rng: 256 bytes of entropy mixed in") == 2, text
    # The queue alone was reset: no device reset, no second probe, no device error.
    assert count(text, rf"^virtio{idx}: virtio-rng driver bound") == 1, text
    assert "needs reset" not in text and not re.search(r"^qemu-system-x86_64: ", text, re.M), text
    assert "broken" not in text


def test_ring_reset_skipped_without_feature(boot):
    vm = boot(cmdline="selftest=virtio-ring-reset",
              extra=["-device", "virtio-rng-pci,addr=0x10,queue_reset=off"])
    verdict, done = selftest_verdict(vm, "virtio-ring-reset")
    text = vm.text
    assert verdict == "skipped" and done.group(3) == "RING_RESET not negotiated", text
    idx, _ = virtio_index(text, 0x10)
    assert "RING_RESET" not in features(text, idx)
    assert f"selftest: virtio-ring-reset: virtio{idx}: RING_RESET not negotiated (device does not offer it)" in text
    shell_answers(vm, done.end())
    assert count(vm.text, rf"^virtio{idx}: rng: 256 bytes of entropy mixed in") == 1
