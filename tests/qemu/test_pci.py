"""ACPI and PCI under OVMF: the boot listing against QEMU's own view of the bus."""
import re

READY = r"^vireo: kernel ready$"

Q35_DEVICES = [
    "-device", "virtio-net-pci,netdev=n0,romfile=",
    "-netdev", "user,id=n0,restrict=on",
    "-device", "pcie-root-port,id=rp1,chassis=1,slot=1",
    "-device", "virtio-serial-pci,bus=rp1",
    "-device", "virtio-rng-pci,vectors=0",
]


def guest_listing(text):
    """{(bus, dev, fn): (vendor, device)} from the kernel's pci: lines."""
    out = {}
    for m in re.finditer(r"^pci: ([0-9a-f]{2}):([0-9a-f]{2})\.(\d) ([0-9a-f]{4}):([0-9a-f]{4}) ", text, re.M):
        out[(int(m.group(1), 16), int(m.group(2), 16), int(m.group(3)))] = (m.group(4), m.group(5))
    return out


def qemu_listing(info_pci):
    """The same map from the QEMU monitor's `info pci`."""
    info_pci = info_pci.replace("\r\n", "\n")
    out = {}
    for m in re.finditer(r"Bus\s+(\d+), device\s+(\d+), function (\d+):\n\s+.*?: PCI device ([0-9a-f]{4}):([0-9a-f]{4})",
                         info_pci):
        out[(int(m.group(1)), int(m.group(2)), int(m.group(3)))] = (m.group(4), m.group(5))
    return out


def device_block(text, vendor_device):
    m = re.search(r"^pci: \S+ " + vendor_device + r" .*\n(?:       .*\n)*", text, re.M)
    assert m, text
    return m.group(0)


def test_q35_listing_matches_qemu_with_ecam(boot):
    vm = boot(extra=Q35_DEVICES)
    vm.wait_for(READY)
    text = vm.text
    assert re.search(r"^acpi: rsdp rev 2 .*xsdt:.* FACP .*APIC.*MCFG", text, re.M)
    assert re.search(r"^acpi: ecam 0xb0000000 segment 0 buses 0-255$", text, re.M)
    assert "pci: config access through ECAM" in text
    assert re.search(r"^pci: \d+ functions, chipset q35$", text, re.M)
    ours, theirs = guest_listing(text), qemu_listing(vm.hmp("info pci"))
    assert theirs and ours == theirs
    # The serial device sits behind the root port, on the bus the port opens.
    port = device_block(text, "1b36:000c")
    sec = int(re.search(r"bus (\d+)-(\d+)", port).group(1))
    assert any(b == sec and v == ("1af4", "1043") for (b, d, f), v in ours.items())
    # Modern virtio-net: MSI-X and a 64-bit prefetchable BAR, INTx routed too.
    net = device_block(text, "1af4:1000")
    assert re.search(r"caps: msix\(\d+\) vndr", net)
    assert re.search(r"bar4 mem64 pref 0x[0-9a-f]+ 16 KiB", net)
    assert re.search(r"INTA -> gsi (2[0-3]) level", net)


def test_vectors_0_device_gets_intx_route(boot):
    vm = boot(extra=Q35_DEVICES)
    vm.wait_for(READY)
    rng = device_block(vm.text, "1af4:1005")
    assert "msix" not in rng
    # q35 root slot s, INTA: PIRQ E-H by (s mod 4), IOAPIC inputs 20-23.
    slot = int(re.search(r"^pci: 00:([0-9a-f]{2})\.0", rng).group(1), 16)
    assert re.search(rf"INTA -> gsi {16 + 4 + slot % 4} level", rng), rng


def test_pc_machine_uses_port_io_and_piix_routing(boot):
    vm = boot(machine="pc", extra=["-device", "virtio-net-pci,netdev=n0,romfile=,vectors=0",
                                   "-netdev", "user,id=n0,restrict=on"])
    vm.wait_for(READY)
    text = vm.text
    assert "pci: config access through ports 0xcf8/0xcfc" in text
    assert re.search(r"^pci: \d+ functions, chipset i440fx/piix3$", text, re.M)
    assert "acpi: ecam" not in text
    ours, theirs = guest_listing(text), qemu_listing(vm.hmp("info pci"))
    assert theirs and ours == theirs
    net = device_block(text, "1af4:1000")
    # PIIX3: the ISA IRQ the firmware steered this PIRQ to (OVMF uses 10/11).
    assert re.search(r"INTA -> gsi 1[01] level", net), net
