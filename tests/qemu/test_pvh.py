"""The PVH entry: build/vireo.elf booted with QEMU's -kernel (SeaBIOS loads
PVH kernels on q35 and pc), no OVMF, no disk. The same kernel behind it as
the UEFI image: ready, the appliance's HTTP answers, the console, ping."""
import calendar
import os
import re
import time

import pytest

from httpc import free_tcp_port, get_close as get
from vm import PVH_ELF, ROOT

READY = r"^vireo: ready ip=(\S+) http=(\d+)(?: https=\d+)?$"
SITE = os.path.join(ROOT, "runtime", "default-site")

# Every test here boots build/vireo.elf (conftest.py).
pytestmark = pytest.mark.usefixtures("need_elf")


def check_timeline(text):
    """The boot timeline starts at the PVH entry, then long mode, then the
    kernel's own stages, in order."""
    tl = re.search(r"^boot: timeline \(ms since pvh_entry\): (.*)$", text, re.M)
    assert tl, text
    names = [kv.split("=")[0] for kv in tl.group(1).split()]
    assert names == ["long_mode", "mm", "acpi", "time", "pci", "drivers", "ready"]
    values = [float(kv.split("=")[1]) for kv in tl.group(1).split()]
    assert values == sorted(values)
    assert "exit_boot_services" not in text


@pytest.mark.parametrize("machine", ["q35", "pc"])
def test_pvh_boots_and_serves(boot, machine):
    """-m 16: the PVH path needs no firmware memory, so the appliance serves
    at a size OVMF cannot boot in (it needs 48 MiB)."""
    port = free_tcp_port()
    vm = boot(kernel=PVH_ELF, machine=machine, mem=16, cmdline="http=8080 verbose",
              extra=["-netdev", f"user,id=n0,restrict=on,hostfwd=tcp:127.0.0.1:{port}-:8080",
                     "-device", "virtio-net-pci,netdev=n0,romfile="])
    m = vm.wait_for(READY)
    assert m.group(1) == "10.0.2.15" and m.group(2) == "8080"
    text = vm.text
    assert re.search(r"^cmdline \(pvh\): http=8080 verbose$", text, re.M), text
    check_timeline(text)
    # The loader's E820 map, with the image carved out of RAM at 1 MiB.
    assert re.search(r"^  0x0000100000-0x[0-9a-f]+ loader ", text, re.M), text
    assert re.search(r"^acpi: rsdp rev \d oem 'BOCHS '", text, re.M), text
    assert "vireo: panic" not in text
    # No firmware clock: the CMOS RTC's (QEMU's counts UTC from the host's)
    clock = re.search(r"^clock: (\S+)Z from the CMOS RTC \(provisional\)$", text, re.M)
    assert clock, text
    assert abs(calendar.timegm(time.strptime(clock.group(1), "%Y-%m-%dT%H:%M:%S")) - time.time()) < 30, clock

    with open(os.path.join(SITE, "index.html"), "rb") as f:
        want = f.read()
    status, headers, body = get(port, "/")
    assert status == 200 and body == want
    assert "date" in {k.lower() for k in headers}, headers	# the provisional clock dates answers
    status, _, body = get(port, "/64k.bin")
    assert status == 200 and body == bytes(i % 251 for i in range(65536))
    assert get(port, "/nope")[0] == 404

    # The console's shell answers on the same serial line.
    start = len(vm.text)
    vm.send("stats\r")
    vm.wait_for(r"^uptime (\d+) ms, busy", timeout=30, start=start)


def test_pvh_ping_static(boot, netns):
    vm = boot(kernel=PVH_ELF, cmdline=f"ip={netns.guest_ip}/24 gw={netns.host_ip}", wrap=netns.wrap,
              extra=netns.qemu_args())
    m = vm.wait_for(READY)
    assert m.group(1) == netns.guest_ip
    r = netns.run("ping", "-c", "3", "-i", "0.2", "-W", "5", netns.guest_ip)
    assert r.returncode == 0, r.stdout.decode() + r.stderr.decode()
    r = netns.run("curl", "-sS", "--max-time", "20", f"http://{netns.guest_ip}/healthz")
    assert r.returncode == 0 and r.stdout, r.stderr.decode()


def test_pvh_bad_cmdline_keeps_serving(boot):
    """A hostile command line through -append is warned about, not fatal."""
    port = free_tcp_port()
    vm = boot(kernel=PVH_ELF, cmdline="http=99999 ip=1.2.3 \x7f" + "x" * 1500,
              extra=["-netdev", f"user,id=n0,restrict=on,hostfwd=tcp:127.0.0.1:{port}-:80",
                     "-device", "virtio-net-pci,netdev=n0,romfile="])
    vm.wait_for(READY)
    assert re.search(r"^config: \d+ warnings?, those keys keep their earlier values$", vm.text, re.M), vm.text
    assert get(port, "/")[0] == 200
