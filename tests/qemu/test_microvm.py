"""QEMU microvm: no PCI, no firmware tables (acpi=off), a PIT without its
port-0x61 gate; build/vireo.elf through PVH (qboot), devices as virtio-mmio
windows QEMU names on the command line. The same drivers as on PCI, over the
third transport: modern and legacy windows, split and packed rings, event
index on and off; virtio-net (HTTP, ping), virtio-rng, virtio-serial with a
virtconsole (the shell)."""
import os
import re
import socket
import tempfile
import time

import pytest

from httpc import free_tcp_port, get_close as get
from test_console import Chardev
from test_poweroff import powerdown_and_wait
from vm import PVH_ELF, ROOT

READY = r"^vireo: ready ip=(\S+) http=(\d+)(?: https=\d+)?$"
SITE = os.path.join(ROOT, "runtime", "default-site")
MACHINE = "microvm,acpi=off"

# Every test here boots build/vireo.elf (conftest.py).
pytestmark = pytest.mark.usefixtures("need_elf")


@pytest.fixture
def sockdir():
    d = tempfile.mkdtemp(prefix="mvm-")
    yield d
    for f in os.listdir(d):
        os.unlink(os.path.join(d, f))
    os.rmdir(d)




def features(text, kind):
    m = re.search(rf"^virtio(\d+): mmio 0x[0-9a-f]+ gsi \d+ (modern|legacy), {kind} ", text, re.M)
    assert m, text
    f = re.search(rf"^virtio{m.group(1)}: features (.*)$", text, re.M)
    assert f, text
    return m.group(2), set(f.group(1).split())


# name -> (global/device options, what must and must not be negotiated on the NIC)
CASES = {
    "modern-split-eventidx": (["-global", "virtio-mmio.force-legacy=false"], "",
                              {"VERSION_1", "EVENT_IDX"}, {"RING_PACKED"}),
    "modern-packed": (["-global", "virtio-mmio.force-legacy=false"], ",packed=on",
                      {"VERSION_1", "RING_PACKED"}, set()),
    "modern-no-eventidx": (["-global", "virtio-mmio.force-legacy=false"], ",event_idx=off",
                           {"VERSION_1"}, {"EVENT_IDX"}),
    "legacy": ([], "", {"EVENT_IDX"}, {"VERSION_1"}),
}


@pytest.mark.parametrize("case", list(CASES))
def test_microvm_serves(boot, sockdir, case):
    glob, devopt, must, must_not = CASES[case]
    port = free_tcp_port()
    con_path = os.path.join(sockdir, "c0.sock")
    vm = boot(kernel=PVH_ELF, machine=MACHINE, mem=16, extra=glob + [
        "-netdev", f"user,id=n0,restrict=on,hostfwd=tcp:127.0.0.1:{port}-:80",
        "-device", f"virtio-net-device,netdev=n0{devopt}",
        "-device", f"virtio-rng-device{devopt}",
        "-chardev", f"socket,id=c0,path={con_path},server=on,wait=off",
        "-device", f"virtio-serial-device{devopt}", "-device", "virtconsole,chardev=c0"])
    con = Chardev(con_path)
    try:
        m = vm.wait_for(READY)
        assert m.group(1) == "10.0.2.15"
        text = vm.text
        assert re.search(r"^cmdline \(pvh\): .*virtio_mmio\.device=512@0xfeb00[0-9a-f]+:\d+", text, re.M), text
        assert re.search(r"^acpi: firmware gave no RSDP", text, re.M), text
        # No ACPI PM timer, no channel-2 gate: the PIT read by latching.
        assert re.search(r"^time: tsc \d+\.\d+ MHz, lapic timer \d+\.\d+ MHz \(against pit-ch0\)$", text, re.M), text
        assert re.search(r"^pci: no ECAM and nothing at port 0xcf8: no PCI, scan skipped$", text, re.M), text
        assert re.search(r"^virtio-mmio: 3 windows \(3 from the command line, 0 from ACPI\)$", text, re.M), text
        layout, feats = features(text, "net")
        assert layout == ("legacy" if case == "legacy" else "modern")
        assert must <= feats and not (must_not & feats), (case, feats)
        assert features(text, "rng")[0] == layout
        assert features(text, "console")[0] == layout
        assert "broken" not in text and "vireo: panic" not in text

        with open(os.path.join(SITE, "index.html"), "rb") as f:
            want = f.read()
        status, _, body = get(port, "/")
        assert status == 200 and body == want
        status, _, body = get(port, "/64k.bin")
        assert status == 200 and body == bytes(i % 251 for i in range(65536))
        assert get(port, "/nope")[0] == 404
        # virtio-rng delivered entropy over the mmio transport.
        vm.wait_for(r"^virtio\d+: rng: \d+ bytes of entropy mixed in", timeout=30)

        # The shell on the virtconsole, and on the UART.
        con.wait_for(r"^vireo: kernel ready$")
        mark = len(con.text)
        con.send("vcons\r")
        m = con.wait_for(r"^virtio\d+: console: port 0 console.*: out (\d+) B, in (\d+) B, dropped (\d+) B$",
                         timeout=20, start=mark)
        assert int(m.group(2)) >= len("vcons\r") and int(m.group(3)) == 0, m.group(0)
        mark = len(vm.text)
        vm.send("stats\r")
        vm.wait_for(r"^uptime (\d+) ms, busy", timeout=30, start=mark)
    finally:
        con.close()


def test_microvm_acpi(boot):
    """microvm with its (hardware-reduced) ACPI tables: QEMU names no
    windows on the command line then; the DSDT's LNRO0005 devices are found,
    on the second IOAPIC's lines."""
    port = free_tcp_port()
    vm = boot(kernel=PVH_ELF, machine="microvm", mem=16, extra=[
        "-global", "virtio-mmio.force-legacy=false",
        "-netdev", f"user,id=n0,restrict=on,hostfwd=tcp:127.0.0.1:{port}-:80",
        "-device", "virtio-net-device,netdev=n0", "-device", "virtio-rng-device"])
    vm.wait_for(READY)
    text = vm.text
    assert re.search(r"^cmdline \(pvh\): \(empty\)$", text, re.M), text
    assert re.search(r"^acpi: rsdp rev 2 oem 'BOCHS ' xsdt: FACP APIC", text, re.M), text
    assert re.search(r"^virtio-mmio: 2 windows \(0 from the command line, 2 from ACPI\)$", text, re.M), text
    assert features(text, "net")[0] == "modern" and features(text, "rng")[0] == "modern"
    assert re.search(r"^time: .*\(against pit-ch0\)$", text, re.M), text
    assert get(port, "/")[0] == 200
    vm.wait_for(r"^virtio\d+: rng: \d+ bytes of entropy mixed in", timeout=30)


def test_microvm_ping_static(boot, netns):
    vm = boot(kernel=PVH_ELF, machine=MACHINE, mem=16, cmdline=f"ip={netns.guest_ip}/24 gw={netns.host_ip}",
              wrap=netns.wrap, extra=["-global", "virtio-mmio.force-legacy=false"] + [
                  a.replace("virtio-net-pci", "virtio-net-device").replace(",romfile=", "")
                  for a in netns.qemu_args()])
    m = vm.wait_for(READY)
    assert m.group(1) == netns.guest_ip
    r = netns.run("ping", "-c", "3", "-i", "0.2", "-W", "5", netns.guest_ip)
    assert r.returncode == 0, r.stdout.decode() + r.stderr.decode()
    r = netns.run("curl", "-sS", "--max-time", "20", f"http://{netns.guest_ip}/64k.bin")
    assert r.stdout == bytes(i % 251 for i in range(65536))


def test_microvm_bad_windows_refused(boot):
    """Hostile virtio_mmio.device= values: malformed, overlapping, a shared
    irq, a window over RAM, one with nothing behind it. Each is refused with
    a warning; QEMU's own window (appended after ours) still works."""
    port = free_tcp_port()
    bad = ("virtio_mmio.device=junk virtio_mmio.device=512@0xfeb00e02:12 "
           "virtio_mmio.device=4K@0x200000:20 "          # RAM: mm refuses the mapping
           "virtio_mmio.device=512@0xd0000000:21 "        # nothing there: no magic
           "virtio_mmio.device=0x300@0xd0000100:22 "      # overlaps the one before
           "virtio_mmio.device=512@0xd0001000:21")        # irq taken
    vm = boot(kernel=PVH_ELF, machine=MACHINE, mem=16, cmdline=bad, extra=[
        "-global", "virtio-mmio.force-legacy=false",
        "-netdev", f"user,id=n0,restrict=on,hostfwd=tcp:127.0.0.1:{port}-:80",
        "-device", "virtio-net-device,netdev=n0"])
    vm.wait_for(READY)
    text = vm.text
    assert re.search(r"^warning: cmdline: virtio_mmio\.device=.*expected <size>@<addr>:<irq>", text, re.M), text
    assert re.search(r"^warning: cmdline: virtio_mmio\.device=.*not 4-byte aligned", text, re.M), text
    assert re.search(r"^warning: cmdline: virtio_mmio\.device=.*overlaps an earlier one", text, re.M), text
    assert re.search(r"^warning: cmdline: virtio_mmio\.device=.*irq already taken", text, re.M), text
    assert re.search(r"^virtio-mmio: window 0x200000\+0x1000 refused$", text, re.M), text
    assert re.search(r"^virtio-mmio: window 0xd0000000\+0x200: no virtio-mmio magic", text, re.M), text
    assert get(port, "/")[0] == 200


@pytest.mark.parametrize("machine,last", [
    ("microvm,acpi=off", "triple fault"),                        # no 0xcf9, no 8042: the last resort
    ("microvm", "ACPI FADT reset register (memory, value 0x42)"),  # hardware-reduced FADT's register
])
def test_microvm_reset(boot, machine, last):
    """The shell's reboot resets by what the platform offers; qboot then
    loads the kernel again and it comes up a second time."""
    vm = boot(kernel=PVH_ELF, machine=machine, mem=16)
    ready = vm.wait_for(r"^vireo: kernel ready$")
    vm.send("reboot\r")
    first = vm.wait_for(r"^vireo: reset: ", start=ready.end())
    again = vm.wait_for(r"^vireo \d+\.\d+\.\d+ \(", start=first.end())
    tried = re.findall(r"^vireo: reset: (.*)$", vm.text[first.start():again.start()], re.M)
    assert tried and tried[-1] == last, tried
    vm.wait_for(r"^vireo: kernel ready$", start=again.end())


def test_microvm_acpi_powerdown(boot):
    """microvm's ACPI is hardware-reduced: QMP system_powerdown raises the
    Generic Event Device's interrupt with the power-down bit in its event
    register; the guest drains (a keep-alive connection is closed)
    and writes S5 to the FADT's sleep control register, which ends QEMU."""
    port = free_tcp_port()
    vm = boot(kernel=PVH_ELF, machine="microvm", mem=16, cmdline="shutdown.grace=5", extra=[
        "-netdev", f"user,id=n0,restrict=on,hostfwd=tcp:127.0.0.1:{port}-:80",
        "-device", "virtio-net-device,netdev=n0"])
    vm.wait_for(READY)
    assert re.search(r"^acpi: power button on GED gsi 9 \(edge, active high\), event register 0xfea00000, "
                     r"sleep control mem 0xfea00200, S5 type 5$", vm.text, re.M), vm.text
    idle = socket.create_connection(("127.0.0.1", port), timeout=20)
    idle.sendall(b"GET /healthz HTTP/1.1\r\nHost: v\r\n\r\n")
    assert idle.recv(4096).startswith(b"HTTP/1.1 200")
    took = powerdown_and_wait(vm, 5 + 1)
    text = vm.text
    # The keep-alive connection is idle or still finishing its response
    # (user networking acknowledges late): closed or drained, never cut.
    m = re.search(r"^power: button pressed: (\d+) busy, (\d+) idle closed; grace 5 s$", text, re.M)
    assert m and int(m.group(1)) + int(m.group(2)) == 1, text
    m = re.search(r"^vireo: power off: (\d+) drained, (\d+) idle closed, 0 cut after \d+ ms$", text, re.M)
    assert m and int(m.group(1)) + int(m.group(2)) == 1, text
    assert vm.proc.returncode == 0, (vm.proc.returncode, took)
    idle.settimeout(5)
    assert idle.recv(4096) == b""


def test_microvm_no_acpi_no_powerdown(boot):
    """With acpi=off microvm has no power-off device at all (no PM1 block,
    no GED, no 8042): the boot says so, and a system_powerdown reaches
    nothing; the appliance keeps serving (stopping the VM is the VMM's)."""
    port = free_tcp_port()
    vm = boot(kernel=PVH_ELF, machine=MACHINE, mem=16, extra=[
        "-netdev", f"user,id=n0,restrict=on,hostfwd=tcp:127.0.0.1:{port}-:80",
        "-device", "virtio-net-device,netdev=n0"])
    vm.wait_for(READY)
    assert re.search(r"^acpi: no FADT: power button not available$", vm.text, re.M), vm.text
    vm.qmp("system_powerdown")
    time.sleep(1)
    assert vm.proc.poll() is None
    assert get(port, "/healthz")[0] == 200
    assert "power: button pressed" not in vm.text
