"""Graceful power off: QMP system_powerdown presses the ACPI power button;
the guest drains its HTTP connections within shutdown.grace= seconds and
enters S5, which ends the QEMU process. Idle (q35 and pc), with a slow
reader mid-response and an idle keep-alive connection (tap in a namespace
of the test's own, so the reader's small window really holds the guest
back), and with a reader that never reads (cut when the grace ends)."""
import json
import re
import subprocess
import sys
import time

import pytest

from vm import Vm

READY = r"^vireo: ready ip=(\S+) http=(\d+)(?: https=\d+)?$"
OFF = r"^vireo: power off: (\d+) drained, (\d+) idle closed, (\d+) cut after (\d+) ms$"
BODY_64K = bytes(i % 251 for i in range(65536))

# Runs inside the namespace. A: keep-alive, one request, then idle. B: GET
# /64k.bin with a small receive buffer, reads `rate` bytes every 50 ms (0:
# never reads after the first chunk). Prints READY once B has a first chunk,
# then one JSON line when both are done or `limit` seconds passed.
CLIENT = r"""
import json, socket, sys, time
ip, rate, limit = sys.argv[1], int(sys.argv[2]), float(sys.argv[3])
a = socket.create_connection((ip, 80), timeout=20)
a.sendall(b"GET /healthz HTTP/1.1\r\nHost: v\r\n\r\n")
got = b""
while not got.endswith(b"ok\n"):
    c = a.recv(4096)
    assert c, "A closed early"
    got += c
b = socket.socket()
b.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
b.settimeout(20)
b.connect((ip, 80))
b.sendall(b"GET /64k.bin HTTP/1.1\r\nHost: v\r\n\r\n")
data = b.recv(1024)
print("READY", flush=True)
sys.stdin.readline()                  # the test has sent system_powerdown
t0 = time.monotonic()
a.setblocking(False)
a_eof = None
b_eof = None
while time.monotonic() - t0 < limit and (a_eof is None or b_eof is None):
    if a_eof is None:
        try:
            if a.recv(4096) == b"":
                a_eof = time.monotonic() - t0
        except BlockingIOError:
            pass
        except OSError:
            a_eof = -1.0
    if b_eof is None and rate:
        try:
            c = b.recv(rate)
            if c == b"":
                b_eof = time.monotonic() - t0
            data += c
        except OSError:
            b_eof = -1.0
    time.sleep(0.05)
head, _, body = data.partition(b"\r\n\r\n")
print(json.dumps({"head": head.decode("latin-1"), "body": body.hex(), "a_eof": a_eof, "b_eof": b_eof}),
      flush=True)
"""


def powerdown_and_wait(vm, bound):
    """system_powerdown; returns seconds until the QEMU process ended (fails
    the test, with the console, if it outlives `bound`)."""
    t0 = time.monotonic()
    vm.qmp("system_powerdown")
    try:
        vm.proc.wait(timeout=bound + 30)
    except subprocess.TimeoutExpired:
        pytest.fail(f"QEMU still running {bound + 30} s after system_powerdown:\n{vm.text}")
    took = time.monotonic() - t0
    assert took <= bound, f"QEMU ended {took:.1f} s after system_powerdown (bound {bound} s):\n{vm.text}"
    return took


@pytest.mark.parametrize("machine", ["q35", "pc"])
def test_idle_powerdown(boot, machine):
    # A bad value warns and keeps the default, 10 s.
    vm = boot(machine=machine, cmdline="shutdown.grace=3601",
              extra=["-netdev", "user,id=n0,restrict=on", "-device", "virtio-net-pci,netdev=n0,romfile="])
    vm.wait_for(READY, timeout=120)
    assert re.search(r"^warning: cmdline: shutdown.grace=3601", vm.text, re.M), vm.text
    assert re.search(r"^acpi: power button on SCI irq 9 .*S5 type \d/\d$", vm.text, re.M), vm.text
    took = powerdown_and_wait(vm, 10 + 1)
    print(f"{machine}: idle power off in {took:.2f} s")
    assert re.search(r"^power: button pressed: 0 busy, 0 idle closed; grace 10 s$", vm.text, re.M), vm.text
    m = re.search(OFF, vm.text, re.M)
    assert m, vm.text
    assert m.group(1, 2, 3) == ("0", "0", "0")
    assert vm.proc.returncode == 0


def run_client(netns, vm, rate, limit, bound):
    cl = netns.popen(sys.executable, "-c", CLIENT, netns.guest_ip, str(rate), str(limit),
                     stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        line = cl.stdout.readline()
        assert line.strip() == "READY", cl.stderr.read()
        cl.stdin.write("go\n")
        cl.stdin.flush()
        took = powerdown_and_wait(vm, bound)
        out, err = cl.communicate(timeout=limit + 30)
    finally:
        if cl.poll() is None:
            cl.kill()
            cl.wait()
    assert cl.returncode == 0, err
    return took, json.loads(out.strip().splitlines()[-1])


def test_powerdown_drains_slow_reader(boot, netns):
    vm = boot(cmdline=f"ip={netns.guest_ip}/24", wrap=netns.wrap, extra=netns.qemu_args())
    vm.wait_for(READY, timeout=120)
    # 2 KiB per 50 ms: the 64 KiB body takes 1.6 s or more to read, well
    # inside the 10 s grace even on a loaded host.
    took, res = run_client(netns, vm, 2048, 20, 10 + 1)
    print(f"slow reader: power off in {took:.2f} s, keep-alive closed after {res['a_eof']:.2f} s")
    assert res["head"].startswith("HTTP/1.1 200"), res["head"]
    assert bytes.fromhex(res["body"]) == BODY_64K
    assert res["a_eof"] is not None and res["a_eof"] >= 0, res   # keep-alive closed with a FIN
    assert res["b_eof"] is not None and res["b_eof"] >= 0, res
    m = re.search(OFF, vm.text, re.M)
    assert m, vm.text
    assert m.group(1, 2, 3) == ("1", "1", "0"), m.group(0)
    # The idle one went at once; the power off waited for the reader.
    assert res["a_eof"] < took and took >= 1.0, (res, took)


def test_powerdown_cuts_after_grace(boot, netns):
    vm = boot(cmdline=f"ip={netns.guest_ip}/24 shutdown.grace=2", wrap=netns.wrap, extra=netns.qemu_args())
    vm.wait_for(READY, timeout=120)
    took, res = run_client(netns, vm, 0, 5, 2 + 1)
    print(f"stalled reader, grace 2 s: power off in {took:.2f} s")
    m = re.search(OFF, vm.text, re.M)
    assert m, vm.text
    assert m.group(1, 2, 3) == ("0", "1", "1"), m.group(0)
    assert int(m.group(4)) >= 2000
    assert res["a_eof"] is not None, res
    assert len(bytes.fromhex(res["body"])) < 65536


def test_without_acpi_the_button_is_not_available(boot):
    """No ACPI tables (QEMU's acpi=off; microvm has none either): the log
    says so, and a press changes nothing."""
    vm = boot(machine="q35,acpi=off", extra=["-netdev", "user,id=n0,restrict=on",
                                             "-device", "virtio-net-pci,netdev=n0,romfile="])
    vm.wait_for(READY, timeout=120)
    assert re.search(r"^acpi: no FADT: power button not available$", vm.text, re.M), vm.text
    vm.qmp("system_powerdown")
    time.sleep(2)
    assert vm.proc.poll() is None
    assert "power:" not in vm.text and not re.search(OFF, vm.text, re.M)
