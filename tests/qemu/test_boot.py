"""Boot and kernel core under OVMF with TCG: the serial console contract."""
import re
import time

import pytest

READY = r"^vireo: kernel ready$"


def test_boots_to_ready(boot):
    vm = boot()
    vm.wait_for(r"^vireo \d+\.\d+\.\d+ \(")
    vm.wait_for(READY)
    text = vm.text
    m = re.search(r"^mem: (\d+)\.\d MiB usable \((\d+) KiB reclaimed from boot services\), *(\d+)\.\d MiB free", text, re.M)
    assert m, text
    usable, reclaimed, free = int(m.group(1)), int(m.group(2)), int(m.group(3))
    assert 40 <= usable <= 64 and reclaimed > 0 and 0 < free <= usable
    assert re.search(r"^time: tsc \d+\.\d+ MHz, lapic timer \d+\.\d+ MHz", text, re.M)
    # The timeline has every stage, in order, starting at efi_main.
    tl = re.search(r"^boot: timeline \(ms since efi_main\): (.*)$", text, re.M).group(1)
    names = [kv.split("=")[0] for kv in tl.split()]
    assert names == ["exit_boot_services", "mm", "acpi", "time", "pci", "drivers", "ready"]
    values = [float(kv.split("=")[1]) for kv in tl.split()]
    assert values == sorted(values)
    assert "panic" not in text
    # The banner comes before anything else the kernel prints.
    kernel_out = text[text.index("vireo "):]
    assert kernel_out.startswith("vireo ")
    assert text.count("vireo: kernel ready") == 1


def test_cmdline_reaches_kernel_and_warns_on_bad_keys(boot):
    vm = boot(cmdline='panic=sideways bogus=1 verbose=maybe noequals selftest= panic=halt')
    vm.wait_for(READY)
    text = vm.text
    assert re.search(r"^cmdline \(fw_cfg\): panic=sideways bogus=1", text, re.M)
    assert re.search(r"^warning: cmdline: panic=sideways: .*halt\|reboot", text, re.M)
    assert re.search(r"^warning: cmdline: unknown key 'bogus'", text, re.M)
    assert re.search(r"^warning: cmdline: verbose=maybe", text, re.M)
    assert re.search(r"^warning: cmdline: 'noequals'", text, re.M)
    assert re.search(r"^cmdline: \d+ warnings, continuing", text, re.M)


@pytest.mark.parametrize("kind,expect", [
    ("pagefault", r"exception 14 \(page fault\)[^\n]*\npage fault: cr2=0x00007ff0deadbee0 not-present read"),
    ("null", r"exception 14 \(page fault\)[^\n]*\npage fault: cr2=0x0000000000000000 not-present read"),
    ("ud", r"exception 6 \(invalid opcode\)"),
    ("divzero", r"exception 0 \(divide error\)"),
    ("stack", r"kernel stack overflow"),
    ("wx", r"exception 14 \(page fault\)[^\n]*\npage fault: cr2=\S+ protection write"),
    ("nx", r"exception 14 \(page fault\)[^\n]*\npage fault: cr2=\S+ protection read kernel instruction-fetch"),
])
def test_fault_selftest_panics_with_registers_and_backtrace(boot, kind, expect):
    vm = boot(cmdline=f"selftest={kind}", reboot=False)
    start = vm.wait_for(r"^vireo: panic: ").start()
    vm.wait_for(r"^vireo: halted$")
    dump = vm.text[start:]
    assert re.search(expect, dump), dump
    for reg in ("rax=", "rsp=", "rip=", "cr2=", "cr3="):
        assert reg in dump, dump
    frames = re.findall(r"^  #(\d+) +0x[0-9a-f]{16}  vireo\+0x[0-9a-f]+$", dump, re.M)
    assert len(frames) >= 2, dump
    assert "vireo: kernel ready" not in vm.text


def test_panic_call_prints_backtrace(boot):
    vm = boot(cmdline="selftest=panic", reboot=False)
    vm.wait_for(r"^vireo: panic: selftest: requested panic$")
    vm.wait_for(r"^vireo: halted$")
    assert re.search(r"^  #1 +0x[0-9a-f]{16}  vireo\+0x", vm.text, re.M)


def test_panic_reboot_resets_machine(boot):
    vm = boot(cmdline="selftest=ud panic=reboot")
    first = vm.wait_for(r"^vireo: rebooting$")
    # The firmware runs again and boots vireo a second time.
    vm.wait_for(r"^vireo \d+\.\d+\.\d+ \(", start=first.end())
    vm.wait_for(r"^vireo: panic: ", start=first.end())


def test_serial_input_reaches_shell(boot):
    vm = boot()
    ready = vm.wait_for(READY)
    time.sleep(0.5)
    vm.send("help\r")
    vm.wait_for(r"^  timeline +boot timeline$", timeout=20, start=ready.end())
    vm.send("stats\r")
    m = vm.wait_for(r"^irq: timer \d+, spurious \d+, unhandled (\d+); console rx (\d+) bytes", timeout=20,
                    start=ready.end())
    assert int(m.group(2)) >= len("help\rstats\r")


def test_idle_guest_does_not_spin(boot):
    """Functional, not a benchmark: a spinning idle loop costs a whole core
    under TCG; a halting one costs a few percent. The bound is loose."""
    vm = boot()
    vm.wait_for(READY)
    time.sleep(1)
    c0, t0 = vm.cpu_seconds(), time.monotonic()
    time.sleep(4)
    share = (vm.cpu_seconds() - c0) / (time.monotonic() - t0)
    assert share < 0.5, f"QEMU used {share:.0%} of a core while the guest was idle"
