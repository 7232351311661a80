"""virtio-blk under QEMU in every layout the driver claims, and the store's
faults on a real disk (docs/storage.md "Tests"). Every boot is apps/kv's
PVH ELF (-kernel: about a second to a store that is open), with a NIC (the
appliance, and with it the store, starts only with one) and a 16 MiB data
disk of serial vireo-data.

Rows: modern PCI (split, packed, indirect descriptors off, event index off,
a ring of 8 without indirect descriptors, split and packed, a write-through
disk, CONFIG_WCE off, DISCARD and WRITE_ZEROES off, 4 KiB blocks, behind
QEMU's intel-iommu), legacy PCI, and virtio-mmio on microvm (modern split
and packed, legacy). Each row formats a blank disk and runs the store's own
workload (store.selftest=: 4 writers, 64 keys, each write acknowledged only
after its FLUSH), is killed with SIGKILL once every write is acknowledged,
and boots again on the same disk with store.check=1: every key holds
exactly its last write, byte for byte (the guest compares). The driver's
line must name what the row asks for (ring, ring size, event index, cache
mode, block size, discard) and the transport line its layout, so a row
that fell back to another mode fails. QEMU's own counters
(query-blockstats) show whether FLUSH went to the device: never on a
write-through disk, on every other.

Faults (QEMU blkdebug and throttling, and bytes changed in the disk file
between boots): a write that fails (503, read-only, reads served; the next
boot finds what was acknowledged); reads that fail at open (once: retried;
always: the store is refused with the sector named, the disk untouched)
and while kv loads its keys (that key 503, never 404); a rotten superblock
copy (the other is used and named) and both (refused, kv in memory, the
disk untouched); a record corrupted in the middle of the log, in the
newest segment and in the oldest after compaction (damage reported,
read-only with what came before it, the disk untouched); a read-only
disk; a write held past blk.timeout= (the device reset and probed again,
the write failed, read-only); a key past kv.max_bytes (503, never 404).
"""
import os
import re
import signal
import tempfile

import pytest

from vm import ROOT, Vm

ELF = os.path.join(ROOT, "build", "apps", "kv", "vireo.elf")
WRITES = 100		# per row: more than the 64 keys, so keys are overwritten
# VIREO_BLK_ROW_WRITES=4000: each row writes that many on an 8 MiB disk
# instead, so the guest compacts (checked: the superblock's start moved);
# about 6 s a row.
ROW_WRITES = int(os.environ.get("VIREO_BLK_ROW_WRITES", WRITES))
MICROVM = "microvm,acpi=off"
MODERN_MMIO = ["-global", "virtio-mmio.force-legacy=false"]
BLK_LINE = r"^virtio(\d+): blk: \d+ sectors .*$"


@pytest.fixture
def disk():
    assert os.path.exists(ELF), "make APP=apps/kv elf first (make test-apps does)"
    d = tempfile.mkdtemp(prefix="vireo-blkrow-")
    path = os.path.join(d, "data.img")
    with open(path, "wb") as f:
        f.truncate(16 << 20)
    yield path
    for f in os.listdir(d):
        os.unlink(os.path.join(d, f))
    os.rmdir(d)


def boot(disk, cmdline="", machine="q35", dev="virtio-blk-pci", devopt="", drive="", glob=(), port=None,
         file=None, netopt=""):
    """apps/kv's PVH ELF with the data disk; port: host port forwarded to 80."""
    mmio = machine.startswith("microvm")
    net = "user,id=n0,restrict=on" + (f",hostfwd=tcp:127.0.0.1:{port}-:80" if port else "")
    return Vm(kernel=ELF, machine=machine, cmdline=cmdline, extra=list(glob) + [
        "-netdev", net, "-device", "virtio-net-device,netdev=n0" if mmio else "virtio-net-pci,netdev=n0,romfile=" + netopt,
        "-drive", f"if=none,id=d0,format=raw,file={file or disk}{drive}",
        "-device", f"{dev},drive=d0,serial=vireo-data{devopt}"])


def kill9(vm):
    os.killpg(vm.proc.pid, signal.SIGKILL)
    vm.proc.wait(timeout=10)
    text = vm.text
    vm.stop()
    return text


def blk_lines(text):
    """(transport line, driver line, features) of the data disk's device."""
    m = re.search(BLK_LINE, text, re.M)
    assert m, text
    n = m.group(1)
    t = re.search(rf"^virtio{n}: (?:pci \S+|mmio 0x[0-9a-f]+ gsi \d+) (modern|legacy), block", text, re.M)
    f = re.search(rf"^virtio{n}: features (.*)$", text, re.M)
    assert t and f, text
    return t.group(1), m.group(0), set(f.group(1).split())


def expected(acks):
    """Key -> the last acknowledged write of it (key = write % 64)."""
    want = {}
    for i in acks:
        want[i % 64] = max(want.get(i % 64, -1), i)
    return want


def selftest(disk, writes=WRITES, **kw):
    """Boot on a blank disk: formatted, `writes` writes all acknowledged;
    SIGKILL. Returns (acknowledged write numbers, console, blockstats)."""
    vm = boot(disk, f"store.selftest={writes}", **kw)
    try:
        vm.wait_for(r"^store: formatted virtio\d+ \(serial vireo-data\)", timeout=60)
        vm.wait_for(rf"^store: selftest done: {writes} acknowledged, 0 failed$", timeout=120)
        stats = {s["device"]: s["stats"] for s in vm.qmp("query-blockstats")}["d0"]
        text = kill9(vm)
    finally:
        vm.stop()
    acks = [int(i) for i in re.findall(r"^store: ack (\d+)$", text, re.M)]
    assert len(acks) == writes, text
    return acks, text, stats


def check(disk, readonly=False, stats=None, **kw):
    """Boot with store.check=1: (key -> write number read back, console).
    The guest compares every byte of every value with the write it names.
    stats: a dict to fill with QEMU's counters of the disk."""
    vm = boot(disk, "store.check=1", **kw)
    try:
        m = vm.wait_for(r"^store: check done: (\d+) bad$", timeout=60)
        if stats is not None:
            stats.update({s["device"]: s["stats"] for s in vm.qmp("query-blockstats")}["d0"])
        text = vm.text
    finally:
        vm.stop()
    assert int(m.group(1)) == 0 and not re.search(r"BAD|read failed", text), text
    opened = re.search(r"^store: opened virtio\d+ \(serial vireo-data\): \d+ keys.*$", text, re.M)
    assert opened and ("read-only" in opened.group(0)) == readonly, text
    assert "torn" not in text, text
    return {int(k): int(i) for k, i in re.findall(r"^store: check st/(\d+) i=(\d+)$", text, re.M)}, text


# name -> boot() arguments, what the driver line must and must not say,
# features that must and must not be negotiated, the transport's layout,
# and whether FLUSH must reach the device.
ROWS = {
    "pci-split": (dict(), ["split ring", " event idx", "writeback cache", "block 512 (physical 512)",
                           ", discard, write-zeroes"], ["packed"],
                  {"VERSION_1", "INDIRECT_DESC", "EVENT_IDX", "FLUSH", "CONFIG_WCE"}, {"RING_PACKED"}, "modern",
                  True),
    "pci-packed": (dict(devopt=",packed=on"), ["packed ring", " event idx", "writeback cache"], ["split"],
                   {"VERSION_1", "RING_PACKED", "INDIRECT_DESC", "EVENT_IDX"}, set(), "modern", True),
    "pci-legacy": (dict(devopt=",disable-modern=on,disable-legacy=off"), ["split ring", " event idx",
                   "writeback cache"], ["packed"], {"EVENT_IDX", "INDIRECT_DESC", "FLUSH"}, {"VERSION_1"},
                   "legacy", True),
    "pci-no-indirect": (dict(devopt=",indirect_desc=off"), ["split ring", " event idx"], [],
                        {"VERSION_1", "EVENT_IDX"}, {"INDIRECT_DESC"}, "modern", True),
    "pci-no-event-idx": (dict(devopt=",event_idx=off"), ["split ring"], [" event idx"],
                         {"VERSION_1", "INDIRECT_DESC"}, {"EVENT_IDX"}, "modern", True),
    "pci-write-through": (dict(drive=",cache=writethrough"), ["write-through cache"], ["writeback"],
                          {"FLUSH", "CONFIG_WCE"}, set(), "modern", False),
    "pci-no-config-wce": (dict(devopt=",config-wce=off"), ["writeback cache"], ["write-through"],
                          {"FLUSH"}, {"CONFIG_WCE"}, "modern", True),
    "pci-no-discard": (dict(devopt=",discard=off,write-zeroes=off"), ["split ring"], ["discard", "write-zeroes"],
                       {"VERSION_1"}, {"DISCARD", "WRITE_ZEROES"}, "modern", True),
    "pci-4k-blocks": (dict(devopt=",logical_block_size=4096,physical_block_size=4096"),
                      ["block 4096 (physical 4096)"], [], {"BLK_SIZE"}, set(), "modern", True),
    "pci-ring-8-direct": (dict(devopt=",queue-size=8,indirect_desc=off"), ["split ring 8"], [],
                          {"VERSION_1"}, {"INDIRECT_DESC"}, "modern", True),
    "pci-packed-ring-8-direct": (dict(devopt=",queue-size=8,indirect_desc=off,packed=on"), ["packed ring 8"], [],
                                 {"VERSION_1", "RING_PACKED"}, {"INDIRECT_DESC"}, "modern", True),
    "pci-intel-iommu": (dict(glob=["-device", "intel-iommu"], devopt=",disable-legacy=on,iommu_platform=on",
                             netopt=",disable-legacy=on,iommu_platform=on"), ["split ring"], [],
                        {"VERSION_1", "ACCESS_PLATFORM"}, set(), "modern", True),
    "mmio-split": (dict(machine=MICROVM, dev="virtio-blk-device", glob=MODERN_MMIO),
                   ["split ring", " event idx", "writeback cache"], ["packed"], {"VERSION_1", "EVENT_IDX"},
                   {"RING_PACKED"}, "modern", True),
    "mmio-packed": (dict(machine=MICROVM, dev="virtio-blk-device", devopt=",packed=on", glob=MODERN_MMIO),
                    ["packed ring"], ["split"], {"VERSION_1", "RING_PACKED"}, set(), "modern", True),
    "mmio-legacy": (dict(machine=MICROVM, dev="virtio-blk-device"), ["split ring", "writeback cache"], ["packed"],
                    {"FLUSH"}, {"VERSION_1"}, "legacy", True),
}


@pytest.mark.parametrize("row", list(ROWS))
def test_row(disk, row):
    kw, says, never, must, must_not, layout, flushes = ROWS[row]
    if ROW_WRITES > 1000:
        os.truncate(disk, 8 << 20)
    acks, text, stats = selftest(disk, writes=ROW_WRITES, **kw)
    if ROW_WRITES > 1000:
        import struct
        with open(disk, "rb") as f:
            sb = f.read(8192)
        assert max(struct.unpack_from("<Q", sb, c * 4096 + 128)[0] for c in (0, 1)) > 0, "no compaction ran"
    got_layout, line, feats = blk_lines(text)
    assert got_layout == layout, (row, text)
    assert all(s in line for s in says) and not any(s in line for s in never), (row, line)
    assert must <= feats and not (must_not & feats), (row, feats)
    assert "broken" not in text and "vireo: panic" not in text, text
    if "intel-iommu" in kw.get("glob", ()):
        # translated: the disk's DMA goes through vireo's IOVA windows
        assert re.search(r"^vtd0: translation on ", text, re.M), text
    # FLUSH reached the device, or (write-through) never did.
    assert stats["wr_operations"] > 0, stats
    assert (stats["flush_operations"] > 0) == flushes, (row, stats)
    got, ctext = check(disk, **kw)
    assert got == expected(acks), (row, ctext)
    assert blk_lines(ctext)[1] == line, ctext


# ---- faults ----

def kv_req(port, method, path, body=None):
    import http.client
    c = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
    c.request(method, path, body=body)
    r = c.getresponse()
    out = (r.status, r.read())
    c.close()
    return out


def serving(vm):
    vm.wait_for(r"^vireo: ready ip=", timeout=60)


BLKDEBUG_WRITE_AFTER_4_FLUSHES = "".join(f"""[set-state]
event = "flush_to_disk"
state = "{i}"
new_state = "{i + 1}"

""" for i in range(1, 5)) + """[inject-error]
event = "write_aio"
state = "5"
errno = "5"
"""


def test_write_error(disk):
    """Every write fails once four FLUSHes have passed (the format's two, kv's
    ETag secret, one PUT): the next PUT is 503 and the store read-only, said
    why; the next PUT 503 too; GETs and /metrics served. The next boot,
    without the fault, opens writable with what was acknowledged."""
    from httpc import free_tcp_port
    conf = disk + ".blkdebug"
    with open(conf, "w") as f:
        f.write(BLKDEBUG_WRITE_AFTER_4_FLUSHES)
    port = free_tcp_port()
    vm = boot(disk, port=port, file=f"blkdebug:{conf}:{disk}")
    try:
        vm.wait_for(r"^kv: 0 keys loaded from the data disk", timeout=60)
        serving(vm)
        assert kv_req(port, "PUT", "/kv/pre", b"kept")[0] == 201
        st, body = kv_req(port, "PUT", "/kv/a", b"one")
        assert (st, b"read-only" in body) == (503, True), (st, body)
        vm.wait_for(r"^store: write failed \(-5\) for batch \d+ .*; read-only", timeout=10)
        assert kv_req(port, "PUT", "/kv/b", b"two")[0] == 503
        assert kv_req(port, "GET", "/kv/pre") == (200, b"kept")
        st, body = kv_req(port, "GET", "/metrics")
        assert st == 200 and re.search(rb"^vireo_store_read_only 1$", body, re.M), body
        assert re.search(rb'^vireo_store_errors_total\{op="write"\} 1$', body, re.M), body
        text = vm.text
    finally:
        vm.stop()
    assert "vireo: panic" not in text, text
    vm = boot(disk, port=port)
    try:
        opened = vm.wait_for(r"^store: opened virtio\d+ \(serial vireo-data\): (\d+) keys.*$", timeout=60)
        # kv answers 503 until it has loaded every key: pre
        vm.wait_for(r"^kv: 1 keys loaded from the data disk \(0 skipped\); PUT and DELETE answer once durable",
                    timeout=60)
        serving(vm)
        assert "read-only" not in opened.group(0) and "torn" not in vm.text, vm.text
        assert kv_req(port, "GET", "/kv/pre") == (200, b"kept")
        assert kv_req(port, "GET", "/kv/a")[0] == 404
        assert kv_req(port, "PUT", "/kv/c", b"three")[0] == 201
    finally:
        vm.stop()


def blkdebug_read(path, sector=None, once=False):
    with open(path, "w") as f:
        f.write('[inject-error]\nevent = "read_aio"\nerrno = "5"\n' + (f'sector = "{sector}"\n' if sector is not None
                                                                    else "") + ('once = "on"\n' if once else ""))


def test_read_errors_at_open(disk):
    """A read that fails once is retried (storage/blk.c) and the store opens
    with every value; a sector of the log that never reads is named, the
    store refused, kv in memory and saying so, nothing written."""
    acks, _, _ = selftest(disk)
    # The sector holding write 50's record (in segment 0, past the superblocks).
    data = open(disk, "rb").read()
    sector = data.index(b"i=50;", 8192) // 512
    conf = disk + ".blkdebug"
    blkdebug_read(conf, sector=sector, once=True)
    stats = {}
    got, _ = check(disk, file=f"blkdebug:{conf}:{disk}", stats=stats)
    assert got == expected(acks)
    assert stats["failed_rd_operations"] == 1, stats	# the fault happened
    blkdebug_read(conf, sector=sector)
    from httpc import free_tcp_port
    port = free_tcp_port()
    vm = boot(disk, port=port, file=f"blkdebug:{conf}:{disk}")
    try:
        m = vm.wait_for(r"^store: cannot open the store on virtio\d+ \(serial vireo-data\): I/O error \(-5\) at "
                        r"sector (\d+) while opening", timeout=60)
        assert int(m.group(1)) <= sector, m.group(0)
        vm.wait_for(r"^warning: kv: the data disk cannot be written \(-5\): values are kept in memory only", timeout=30)
        serving(vm)
        st, body = kv_req(port, "GET", "/metrics")
        assert st == 200 and re.search(rb"^kv_durable 0$", body, re.M), body
        assert kv_req(port, "PUT", "/kv/x", b"mem")[0] == 201
        assert kv_req(port, "GET", "/kv/x") == (200, b"mem")
    finally:
        vm.stop()
    assert open(disk, "rb").read() == data


def test_superblock_rot(disk):
    """Copy A rotten: copy B is used and the console names copy A; every
    value is back. Both rotten: the disk is refused (never formatted), kv
    keeps values in memory and says so, and the disk is not written."""
    acks, _, _ = selftest(disk)
    with open(disk, "r+b") as f:
        f.seek(100)	# copy A's label: covered by its checksum
        b = f.read(1)
        f.seek(100)
        f.write(bytes([b[0] ^ 0x5a]))
    got, text = check(disk)
    assert got == expected(acks)
    assert re.search(r"^store: superblock: superblock copy A is bad \(bad checksum\)$", text, re.M), text
    with open(disk, "r+b") as f:
        f.seek(4096 + 100)
        b = f.read(1)
        f.seek(4096 + 100)
        f.write(bytes([b[0] ^ 0x5a]))
    data = open(disk, "rb").read()
    from httpc import free_tcp_port
    port = free_tcp_port()
    vm = boot(disk, port=port)
    try:
        vm.wait_for(r"^store: cannot open the store on virtio\d+ \(serial vireo-data\): no valid superblock "
                    r"\(copy A: bad checksum, copy B: bad checksum\); not formatted", timeout=60)
        vm.wait_for(r"^warning: kv: the data disk cannot be written \(-74\): values are kept in memory only", timeout=30)
        serving(vm)
        st, body = kv_req(port, "GET", "/metrics")
        assert st == 200 and re.search(rb"^kv_durable 0$", body, re.M), body
        assert kv_req(port, "PUT", "/kv/x", b"mem")[0] == 201
    finally:
        vm.stop()
    assert open(disk, "rb").read() == data


def test_record_corrupted_mid_log(disk):
    """A byte of one record in the middle of the log changed between boots:
    recovery reports damage (a valid batch lies past the bad one) and opens
    read-only with exactly the state before the bad batch: every key holds
    its last write from before it, nothing from it or after it, and the
    disk is not written."""
    writes = 200
    acks, _, _ = selftest(disk, writes=writes)
    c = sorted(acks)[writes // 2]
    assert (c * 37) % 3000 > 8	# write c's value has bytes past "i=c;"
    data = bytearray(open(disk, "rb").read())
    at = data.index(f"i={c};".encode(), 8192) + len(f"i={c};") + 4
    data[at] ^= 0x01
    with open(disk, "wb") as f:
        f.write(data)
    got, text = check(disk, readonly=True)
    m = re.search(r"^store: opened .*read-only: log damaged: the log ends in segment 0 at \d+, but batch \d+ "
                  r"lies past it; read-only$", text, re.M)
    assert m, text
    assert re.search(r"^kv: \d+ keys loaded from the data disk \(0 skipped\); it is read-only", text, re.M), text
    # Exactly a prefix of the writes, ending before write c.
    assert got, text
    upto = max(got.values()) + 1
    assert upto <= c, (upto, c)
    assert got == expected([i for i in acks if i < upto]), text
    assert open(disk, "rb").read() == bytes(data)


THROTTLE_OFF = dict(bps=0, bps_rd=0, bps_wr=0, iops=0, iops_rd=0, iops_wr=0)


def test_request_timeout_resets(disk):
    """A write the device holds past blk.timeout= (QEMU throttles writes to
    256 B/s: the first write passes, the next waits about 12 s): the driver
    resets the device and probes it again, the write in flight fails with
    an I/O error (503, read-only, said why), reads are served; the next
    boot opens writable with every acknowledged value. (A blkdebug
    breakpoint cannot stand in for the stalled device: QEMU's reset waits
    for the held request with its lock taken, so nothing could resume it.)"""
    import time
    from httpc import free_tcp_port
    port = free_tcp_port()
    vm = boot(disk, "blk.timeout=2000", port=port)
    try:
        vm.wait_for(r"^kv: 0 keys loaded from the data disk", timeout=60)
        serving(vm)
        assert kv_req(port, "PUT", "/kv/pre", b"kept")[0] == 201
        vm.qmp("block_set_io_throttle", device="d0", **dict(THROTTLE_OFF, bps_wr=256))
        assert kv_req(port, "PUT", "/kv/a", b"one" * 1000)[0] == 201
        t0 = time.monotonic()
        st, body = kv_req(port, "PUT", "/kv/c", b"cee" * 1000)
        took = time.monotonic() - t0
        vm.qmp("block_set_io_throttle", device="d0", **THROTTLE_OFF)
        assert (st, b"read-only" in body) == (503, True), (st, body)
        assert took < 10, took	# the deadline, not the throttle, ended it
        m = vm.wait_for(r"^virtio(\d+): blk: write of \d+ bytes at sector \d+ not completed within 2000 ms", timeout=10)
        n = m.group(1)
        vm.wait_for(rf"^virtio{n}: driver asked for a reset; resetting and probing again$", timeout=10)
        vm.wait_for(r"^store: write failed \(-5\) for batch \d+ .*; read-only$", timeout=10)
        assert len(re.findall(rf"^virtio{n}: virtio-blk driver bound", vm.text, re.M)) == 2, vm.text
        assert kv_req(port, "GET", "/kv/pre") == (200, b"kept")
        assert kv_req(port, "GET", "/kv/a") == (200, b"one" * 1000)
        assert kv_req(port, "PUT", "/kv/b", b"two")[0] == 503
        text = vm.text
    finally:
        vm.stop()
    assert "vireo: panic" not in text and "given up" not in text, text
    vm = boot(disk, port=port)
    try:
        opened = vm.wait_for(r"^store: opened virtio\d+ \(serial vireo-data\): (\d+) keys.*$", timeout=60)
        # every key loaded (kv answers 503 until then): pre, a, maybe c
        vm.wait_for(r"^kv: [23] keys loaded from the data disk \(0 skipped\); PUT and DELETE answer once durable",
                    timeout=60)
        serving(vm)
        assert "read-only" not in opened.group(0), vm.text
        assert kv_req(port, "GET", "/kv/pre") == (200, b"kept")
        assert kv_req(port, "GET", "/kv/a") == (200, b"one" * 1000)
        assert kv_req(port, "GET", "/kv/b")[0] == 404
        # c's write reached QEMU before the reset: it may be there (its
        # client was told 503: unknown), whole or not at all.
        st, body = kv_req(port, "GET", "/kv/c")
        assert st == 404 or (st, body) == (200, b"cee" * 1000), (st, body)
    finally:
        vm.stop()


def test_kv_key_not_loaded(disk):
    """A key on the disk that kv could not load at boot (here: past
    kv.max_bytes; a read error takes the same path) is never answered as
    absent: GET, DELETE and a conditional PUT are 503 (a 404 for it would
    be false, and a DELETE answered 404 would leave it on the disk to come
    back). A plain PUT replaces it, durably; a key the disk lacks is 404."""
    from httpc import free_tcp_port
    port = free_tcp_port()
    vals = {f"k{i}": bytes([48 + i]) * 40000 for i in range(1, 4)}
    vm = boot(disk, port=port)
    try:
        vm.wait_for(r"^kv: 0 keys loaded from the data disk", timeout=60)
        serving(vm)
        for k, v in vals.items():
            assert kv_req(port, "PUT", f"/kv/{k}", v)[0] == 201
    finally:
        vm.stop()
    vm = boot(disk, "kv.max_bytes=100000", port=port)
    try:
        vm.wait_for(r"^kv: 2 keys loaded from the data disk \(1 skipped\)", timeout=60)
        serving(vm)
        assert re.search(r"^warning: kv: key k3 from the data disk not loaded", vm.text, re.M), vm.text
        assert kv_req(port, "GET", "/kv/k1") == (200, vals["k1"])
        st, body = kv_req(port, "GET", "/kv/k3")
        assert (st, b"could not be loaded" in body) == (503, True), (st, body)
        assert kv_req(port, "DELETE", "/kv/k3")[0] == 503
        import http.client
        c = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
        c.request("PUT", "/kv/k3", body=b"x", headers={"If-None-Match": "*"})
        r = c.getresponse()
        assert (r.status, r.read().count(b"could not be loaded")) == (503, 1)
        c.close()
        assert kv_req(port, "GET", "/kv/nope")[0] == 404
        assert kv_req(port, "PUT", "/kv/k3", b"small")[0] in (201, 204)
        assert kv_req(port, "GET", "/kv/k3") == (200, b"small")
    finally:
        vm.stop()
    vm = boot(disk, port=port)
    try:
        vm.wait_for(r"^kv: 3 keys loaded from the data disk \(0 skipped\)", timeout=60)
        serving(vm)
        assert kv_req(port, "GET", "/kv/k3") == (200, b"small")
        assert kv_req(port, "GET", "/kv/k2") == (200, vals["k2"])
    finally:
        vm.stop()


def test_record_corrupted_in_older_segment(disk):
    """The same in the log's oldest segment, after compaction has run: an
    8 MiB disk (7 segments of 1 MiB) takes 4000 writes, so the guest
    compacts several times (the superblocks' start moves) and the log
    spans segments. A record in the middle of the oldest live segment
    changed: the open reports that segment ending before the log does,
    opens read-only with the log before it (every value read back is a
    real write older than the damaged one), and writes nothing."""
    import struct
    os.truncate(disk, 8 << 20)
    writes = 4000
    acks, _, _ = selftest(disk, writes=writes)
    data = bytearray(open(disk, "rb").read())
    sbs = [struct.unpack_from("<Q", data, c * 4096 + 16)[0] for c in (0, 1)]	# gen
    start = struct.unpack_from("<Q", data, (0 if sbs[0] >= sbs[1] else 1) * 4096 + 128)[0]
    assert start > 0, "no compaction ran"
    # The live segments (logfmt.h: data_off 8192, 1 MiB each; a batch
    # header's magic at 0, its seq at 8), oldest first.
    firsts = []
    for seg in range(7):
        off = 8192 + (seg << 20)
        if data[off:off + 4] == b"VSB1":
            firsts.append((struct.unpack_from("<Q", data, off + 8)[0], seg))
    live = sorted(f for f in firsts if f[0] >= start)
    assert len(live) >= 2, live
    oldest = live[0][1]
    m = re.compile(rb"i=(\d+);").search(bytes(data), 8192 + (oldest << 20) + (1 << 19))
    c = int(m.group(1))
    assert c in acks and 8192 + (oldest << 20) < m.end() < 8192 + ((oldest + 1) << 20)
    data[m.end() + 4] ^= 0x01
    with open(disk, "wb") as f:
        f.write(data)
    got, text = check(disk, readonly=True)
    assert re.search(rf"^store: opened .*read-only: log damaged: segment {oldest} ends at \d+ \(.*\) before the log "
                     r"does; read-only$", text, re.M), text
    assert got and all(i < c and i in acks for i in got.values()), (c, got)
    assert open(disk, "rb").read() == bytes(data)


BLKDEBUG_READS_FAIL_AFTER_FLUSH = """[set-state]
event = "flush_to_disk"
state = "1"
new_state = "2"

[inject-error]
event = "read_aio"
state = "2"
errno = "5"
sector = "{sector}"
"""


def test_read_error_while_loading(disk):
    """A read that fails after the open, while kv loads its keys: that key
    is skipped and named, and its GET is 503 (never 404); the other keys
    are served. To fail only reads after recovery's, the last batch is
    broken in the file (a tear): the open zeroes it and FLUSHes once it
    has read the log, and that FLUSH switches blkdebug to failing every
    read of a sector in the middle of b's value."""
    from httpc import free_tcp_port
    port = free_tcp_port()
    vals = {"a": b"A" * 2000, "b": b"B" * 2000, "c": b"C" * 2000, "d": b"D" * 100}
    vm = boot(disk, port=port)
    try:
        vm.wait_for(r"^kv: 0 keys loaded from the data disk", timeout=60)
        serving(vm)
        for k, v in vals.items():
            assert kv_req(port, "PUT", f"/kv/{k}", v)[0] == 201
    finally:
        vm.stop()
    data = bytearray(open(disk, "rb").read())
    data[data.index(vals["d"]) + 50] ^= 0x01	# d's batch, the last: now torn
    with open(disk, "wb") as f:
        f.write(data)
    sector = (data.index(vals["b"]) + 1000) // 512
    conf = disk + ".blkdebug"
    with open(conf, "w") as f:
        f.write(BLKDEBUG_READS_FAIL_AFTER_FLUSH.format(sector=sector))
    vm = boot(disk, port=port, file=f"blkdebug:{conf}:{disk}")
    try:
        vm.wait_for(r"^kv: 2 keys loaded from the data disk \(1 skipped\); PUT and DELETE answer once durable",
                    timeout=60)
        serving(vm)
        text = vm.text
        assert re.search(r"^store: recovery dropped the torn batch \d+ \(1 records", text, re.M), text
        assert re.search(r"^warning: kv: key b from the data disk not loaded \(-5/", text, re.M), text
        st, body = kv_req(port, "GET", "/kv/b")
        assert (st, b"could not be loaded" in body) == (503, True), (st, body)
        assert kv_req(port, "GET", "/kv/a") == (200, vals["a"])
        assert kv_req(port, "GET", "/kv/c") == (200, vals["c"])
        assert kv_req(port, "GET", "/kv/d")[0] == 404
        stats = {s["device"]: s["stats"] for s in vm.qmp("query-blockstats")}["d0"]
        assert stats["failed_rd_operations"] == 3, stats	# storage/blk.c's three tries
    finally:
        vm.stop()


def test_read_only_disk(disk):
    """A disk QEMU offers read-only (VIRTIO_BLK_F_RO): the driver says so,
    the store opens read-only with every value, kv serves them and keeps
    new ones in memory only; a blank read-only disk is never formatted."""
    acks, _, _ = selftest(disk)
    data = open(disk, "rb").read()
    got, text = check(disk, readonly=True, drive=",readonly=on")
    assert got == expected(acks)
    _, line, feats = blk_lines(text)
    assert "read-only, " in line and "RO" in feats, (line, feats)
    assert re.search(r"^store: opened .*, read-only: opened read-only$", text, re.M), text
    assert re.search(r"^kv: \d+ keys loaded from the data disk \(0 skipped\); it is read-only", text, re.M), text
    assert open(disk, "rb").read() == data
    blank = disk + ".blank"
    with open(blank, "wb") as f:
        f.truncate(16 << 20)
    vm = boot(disk, file=blank, drive=",readonly=on")
    try:
        vm.wait_for(r"^store: cannot open the store on virtio\d+ \(serial vireo-data\): no store on this disk "
                    r"\(blank\)", timeout=60)
    finally:
        vm.stop()
    assert open(blank, "rb").read(1 << 20) == bytes(1 << 20)
