"""The store on a real virtio-blk disk under QEMU (apps/kv's PVH ELF, which
links the block path; docs/storage.md): a blank data disk chosen by serial is formatted;
then kill -9 trials: the guest writes a known workload (store.selftest=,
storage/disk.c: 4 writers, 64 keys, values of 6..3005 bytes that encode
their write number, which goes on from boot to boot), QEMU is killed with SIGKILL after a random number of
acknowledgements, and the next boot (store.check=1) reads every key back:
each value is exact (never torn) and no older than the last write of its
key the guest acknowledged before the kill. Killing QEMU loses nothing the
host already holds, so these trials test ordering and recovery through the
driver; the host tests (tests/host/storage/test_store.c) test what a lost
cache does. A disk that holds data but no store is never formatted. Then
apps/kv over HTTP: acknowledged PUTs and DELETEs survive a kill -9 (values
and ETags; the store's /metrics pass promtool), and a FLUSH that fails (QEMU
blkdebug) is 503 and read-only."""
import os
import random
import re
import signal
import subprocess
import tempfile

import pytest

from vm import ROOT, Vm

IMAGE = os.path.join(ROOT, "build", "apps", "kv", "vireo.img")
# Every boot but one is the PVH ELF (-kernel: about a second to a store that
# is open, against 5 s or more through OVMF); test_no_disk_of_that_serial
# boots the image through OVMF, where the boot disk is a virtio-blk disk too.
ELF = os.path.join(ROOT, "build", "apps", "kv", "vireo.elf")
TRIALS = int(os.environ.get("VIREO_STORE_TRIALS", "2"))


def boot(disk, cmdline, serial="vireo-data", ovmf=False):
    return Vm(image=IMAGE, kernel=None if ovmf else ELF, cmdline=cmdline, extra=[
        "-netdev", "user,id=n0,restrict=on", "-device", "virtio-net-pci,netdev=n0,id=nic0,romfile=",
        "-drive", f"if=none,id=d0,format=raw,file={disk}",
        "-device", f"virtio-blk-pci,drive=d0,serial={serial}"])


@pytest.fixture
def disk():
    assert os.path.exists(IMAGE) and os.path.exists(ELF), "make APP=apps/kv image elf first (make test-apps does)"
    d = tempfile.mkdtemp(prefix="vireo-store-")
    path = os.path.join(d, "data.img")
    with open(path, "wb") as f:
        f.truncate(16 << 20)
    yield path
    os.unlink(path)
    os.rmdir(d)


def check_boot(disk):
    """Boots with store.check=1: {key: write number} as the guest read them."""
    vm = boot(disk, "store.check=1")
    try:
        m = vm.wait_for(r"^store: check done: (\d+) bad", timeout=120)
        text = vm.text
    finally:
        vm.stop()
    assert int(m.group(1)) == 0, text
    assert not re.search(r"BAD|read failed", text), text
    opened = re.search(r"^store: opened virtio\d+ \(serial vireo-data\): \d+ keys.*$", text, re.M)
    assert opened and "read-only" not in opened.group(0), text
    got = {int(k): int(i) for k, i in re.findall(r"^store: check st/(\d+) i=(\d+)$", text, re.M)}
    return got, text


def test_kill9_trials(disk):
    rng = random.Random(os.environ.get("VIREO_STORE_SEED", "31"))
    last_acked = {}
    for trial in range(TRIALS):
        vm = boot(disk, "store.selftest=100000000")
        try:
            if trial == 0:
                vm.wait_for(r"^store: formatted virtio\d+ \(serial vireo-data\)", timeout=120)
            want = rng.randint(20, 400)
            # Wait for that many acknowledgements in this boot, then SIGKILL.
            start = len(vm.text)
            vm.wait_for(r"^store: ack \d+$", timeout=120, start=start)
            while len(re.findall(r"^store: ack \d+$", vm.text[start:], re.M)) < want:
                vm.wait_for(r"^store: ack \d+$", timeout=60, start=len(vm.text) - 1)
            os.killpg(vm.proc.pid, signal.SIGKILL)
            vm.proc.wait(timeout=10)
            text = vm.text
        finally:
            vm.stop()
        acks = [int(i) for i in re.findall(r"^store: ack (\d+)$", text, re.M)]
        assert len(acks) >= want
        for i in acks:
            k = i % 64
            last_acked[k] = max(last_acked.get(k, -1), i)
        got, ctext = check_boot(disk)
        # Every key the guest acknowledged a write to holds that write or a
        # later one (the guest checked the bytes: exact, never torn).
        for k, i in last_acked.items():
            assert k in got, f"trial {trial}: key {k} lost (acknowledged write {i})\n{ctext}"
            assert got[k] >= i, f"trial {trial}: key {k} holds write {got[k]}, acknowledged {i}\n{ctext}"
        # Write numbers go on across boots (the guest starts each run past
        # the store's newest record): what this boot found is the new floor.
        for k, i in got.items():
            last_acked[k] = max(last_acked.get(k, -1), i)


def test_refuses_foreign_disk(disk):
    """Data but no store: never formatted, said so, nothing written."""
    with open(disk, "r+b") as f:
        f.write(b"\xeb\x3c\x90MSDOS5.0" + bytes(500))
    before = open(disk, "rb").read()
    vm = boot(disk, "")
    try:
        vm.wait_for(r"^store: cannot open the store on virtio\d+ \(serial vireo-data\): no valid superblock "
                    r".*not formatted", timeout=120)
        vm.wait_for(r"kv: the data disk cannot be written \(-74\)", timeout=30)
    finally:
        vm.stop()
    assert open(disk, "rb").read() == before


def test_no_disk_of_that_serial(disk):
    vm = boot(disk, "", serial="something-else", ovmf=True)
    try:
        vm.wait_for(r"^store: no virtio-blk disk with serial vireo-data: nothing is kept", timeout=120)
        vm.wait_for(r"^kv: no data disk: values are kept in memory only", timeout=30)
    finally:
        vm.stop()
    assert open(disk, "rb").read(1 << 20) == bytes(1 << 20)


def kv_boot(disk, port):
    return Vm(kernel=ELF, cmdline="", extra=[
        "-netdev", f"user,id=n0,restrict=on,hostfwd=tcp:127.0.0.1:{port}-:80",
        "-device", "virtio-net-pci,netdev=n0,id=nic0,romfile=",
        "-drive", f"if=none,id=d0,format=raw,file={disk}",
        "-device", "virtio-blk-pci,drive=d0,serial=vireo-data"])


def kv_req(port, method, path, body=None):
    import http.client
    c = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
    c.request(method, path, body=body)
    r = c.getresponse()
    out = (r.status, r.getheader("ETag"), r.read())
    c.close()
    return out


def test_kv_acknowledged_puts_survive_kill9(disk):
    """apps/kv on the data disk: every PUT and DELETE answered before a
    SIGKILL is there after the reboot, value and ETag alike."""
    from httpc import free_tcp_port
    port = free_tcp_port()
    rng = random.Random(7)
    want, tags = {}, {}
    vm = kv_boot(disk, port)
    try:
        vm.wait_for(r"^kv: 0 keys loaded from the data disk \(0 skipped\); PUT and DELETE answer once durable",
                    timeout=120)
        vm.wait_for(r"^vireo: ready ip=", timeout=60)
        for i in range(40):
            key = f"k{i % 25}"
            val = bytes(rng.randrange(256) for _ in range(rng.randrange(1, 5000)))
            st, tag, _ = kv_req(port, "PUT", f"/kv/{key}", val)
            assert st in (201, 204), st
            want[key], tags[key] = val, tag
        st, _, _ = kv_req(port, "DELETE", "/kv/k3")
        assert st == 204
        del want["k3"]
        os.killpg(vm.proc.pid, signal.SIGKILL)
        vm.proc.wait(timeout=10)
    finally:
        vm.stop()
    vm = kv_boot(disk, port)
    try:
        vm.wait_for(r"^kv: 24 keys loaded from the data disk \(0 skipped\)", timeout=120)
        vm.wait_for(r"^vireo: ready ip=", timeout=60)
        for key, val in want.items():
            st, tag, body = kv_req(port, "GET", f"/kv/{key}")
            assert (st, body) == (200, val), key
            assert tag == tags[key], key	# the ETag secret is on the disk
        assert kv_req(port, "GET", "/kv/k3")[0] == 404
        # The store's /metrics (vireo_store_*): what recovery found, and
        # names promtool accepts.
        from httpc import promtool_findings
        st, _, body = kv_req(port, "GET", "/metrics")
        text = body.decode()
        assert st == 200
        # 24 keys and the ETag secret kv keeps under a key of its own.
        assert re.search(r"^vireo_store_keys 25$", text, re.M), text
        assert re.search(r"^kv_durable 1$", text, re.M), text
        assert re.search(r"^vireo_store_read_only 0$", text, re.M), text
        assert re.search(r"^vireo_store_live_bytes [1-9]\d*$", text, re.M), text
        assert re.search(r'^vireo_store_errors_total\{op="flush"\} 0$', text, re.M), text
        store = "\n".join(line for line in text.splitlines() if "vireo_store_" in line) + "\n"
        assert store.count("# TYPE vireo_store_") >= 20, store
        assert promtool_findings(store) == [], store
    finally:
        vm.stop()


BLKDEBUG_FIFTH_FLUSH = """[set-state]
event = "flush_to_disk"
state = "1"
new_state = "2"

[set-state]
event = "flush_to_disk"
state = "2"
new_state = "3"

[set-state]
event = "flush_to_disk"
state = "3"
new_state = "4"

[set-state]
event = "flush_to_disk"
state = "4"
new_state = "5"

[inject-error]
event = "flush_to_disk"
state = "5"
errno = "5"
"""


def test_kv_flush_error_read_only(disk):
    """QEMU's blkdebug fails every FLUSH from the fifth on (the format's two,
    the ETag secret's and the first PUT's pass): the PUT whose FLUSH failed
    is 503, the store turns read-only and says why, the next PUT is 503 too,
    reads and /metrics are served, and the memory copy is what the disk
    holds: the first value, not the one whose FLUSH failed."""
    from httpc import free_tcp_port
    conf = disk + ".blkdebug"
    with open(conf, "w") as f:
        f.write(BLKDEBUG_FIFTH_FLUSH)
    port = free_tcp_port()
    vm = Vm(kernel=ELF, extra=[
        "-netdev", f"user,id=n0,restrict=on,hostfwd=tcp:127.0.0.1:{port}-:80",
        "-device", "virtio-net-pci,netdev=n0,id=nic0,romfile=",
        "-drive", f"if=none,id=d0,format=raw,file=blkdebug:{conf}:{disk}",
        "-device", "virtio-blk-pci,drive=d0,serial=vireo-data"])
    try:
        vm.wait_for(r"^kv: 0 keys loaded from the data disk", timeout=120)
        vm.wait_for(r"^vireo: ready ip=", timeout=60)
        st, tag, _ = kv_req(port, "PUT", "/kv/a", b"one")
        assert st == 201
        st, _, body = kv_req(port, "PUT", "/kv/a", b"two")
        assert (st, b"read-only" in body) == (503, True), body
        vm.wait_for(r"^store: flush failed \(-5\) for batch \d+ .*; read-only", timeout=10)
        assert kv_req(port, "PUT", "/kv/b", b"two")[0] == 503
        # The memory copy went back to what the disk holds: served.
        assert kv_req(port, "GET", "/kv/a") == (200, tag, b"one")
        assert kv_req(port, "GET", "/kv/b")[0] == 404
        assert kv_req(port, "GET", "/metrics")[0] == 200
    finally:
        vm.stop()
        os.unlink(conf)


def test_kv_power_off_completes_commits_in_flight(disk):
    """A power-button press with shutdown.grace=0 cuts every connection at
    once, but the store's batch in flight reaches the disk before S5 (kernel/
    power.c's settle phase, storage/disk.c's drain): QEMU's blkdebug holds
    the batch's write (a one-shot breakpoint on the next pwritev) from
    before the PUTs until a second after the press, so the write is in
    flight at the press on any machine; what the store had taken in is all
    there after the next boot, though the clients never saw an answer.
    Without the drain the guest powers off at the press, the batch unwritten."""
    import socket
    import time
    from httpc import free_tcp_port
    port = free_tcp_port()
    vals = {f"p{i}": bytes([65 + i]) * (1000 + i) for i in range(4)}
    vm = Vm(kernel=ELF, cmdline="shutdown.grace=0", extra=[
        "-netdev", f"user,id=n0,restrict=on,hostfwd=tcp:127.0.0.1:{port}-:80",
        "-device", "virtio-net-pci,netdev=n0,id=nic0,romfile=",
        "-drive", f"if=none,id=d0,format=raw,file=blkdebug::{disk}",
        "-device", "virtio-blk-pci,drive=d0,serial=vireo-data"])
    socks = []
    try:
        vm.wait_for(r"^kv: 0 keys loaded from the data disk", timeout=180)
        vm.wait_for(r"^vireo: ready ip=", timeout=60)
        vm.hmp('qemu-io d0 "break pwritev held"')
        for key, val in vals.items():
            s = socket.create_connection(("127.0.0.1", port), timeout=10)
            s.sendall(f"PUT /kv/{key} HTTP/1.1\r\nHost: v\r\nContent-Length: {len(val)}\r\n\r\n".encode() + val)
            socks.append(s)
        time.sleep(2)  # the guest takes them in; their batch's write is held
        vm.qmp("system_powerdown")
        vm.wait_for(r"^power: button pressed: ", timeout=30)
        time.sleep(1)
        assert vm.proc.poll() is None, "powered off with the batch's write held:\n" + vm.text
        vm.hmp('qemu-io d0 "resume held"')
        vm.proc.wait(timeout=60)
        text = vm.text
    finally:
        for s in socks:
            s.close()
        vm.stop()
    assert re.search(r"^vireo: power off: \d+ drained, \d+ idle closed, \d+ cut after \d+ ms$", text, re.M), text
    # Every write the store had taken in (the held batch, then those queued
    # behind it; a PUT whose connection was cut before kv handed it over is
    # the client's loss, never answered) is on the disk: the next open finds
    # exactly as many keys (kv's ETag secret is one of them), no torn batch.
    m = re.search(r"^store: every write reached the disk before power off \((\d+) puts and deletes", text, re.M)
    assert m and int(m.group(1)) >= 2, text
    durable = int(m.group(1))
    vm = kv_boot(disk, port)
    try:
        opened = vm.wait_for(r"^store: opened virtio\d+ \(serial vireo-data\): (\d+) keys", timeout=120)
        vm.wait_for(r"^kv: \d+ keys loaded from the data disk", timeout=60)	# 503 until then
        vm.wait_for(r"^vireo: ready ip=", timeout=60)
        assert int(opened.group(1)) == durable, vm.text
        assert "torn" not in vm.text, vm.text
        found = 0
        for key, val in vals.items():
            st, _, body = kv_req(port, "GET", f"/kv/{key}")
            assert st in (200, 404), (key, st)
            if st == 200:
                assert body == val, key
                found += 1
        assert found == durable - 1, (found, durable)
    finally:
        vm.stop()
