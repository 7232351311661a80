"""DMA through QEMU's emulated Intel VT-d unit (`-device intel-iommu`).

A device that negotiated ACCESS_PLATFORM is given addresses in vireo's IOVA
windows (128 GiB and up for read-only memory, 256 GiB and up for writable),
never physical ones: that it serves at all proves translation is on, since
nothing is mapped at the physical addresses. iommu=strict (the default): a
virtio device without ACCESS_PLATFORM is refused (FAILED, one console line)
and every function not driven is in the blocking domain (the boot disk
images/qemu.sh adds, which the default image has no driver for, among
them). iommu=permissive: a device without ACCESS_PLATFORM keeps
pass-through and is driven. A buffer the device writes handed out at its read-only
address (the debug shell's `iommu-stray`, or `iommu.stray=N` at boot) makes
the device's write fault: the unit's fault is logged once with the device,
address and reason, and the device is reset and probed again while the
appliance keeps serving.

Interrupt remapping: QEMU 7.2 needs `kernel-irqchip=split` for it only with
KVM's in-kernel irqchip; under TCG `intremap=on` (and the default `auto`)
advertises it (ECAP.IR and the DMAR's INTR_REMAP flag). vireo turns it on
after translation: every MSI-X vector and routed IOAPIC pin goes through a
table entry that names its requester, and compatibility-format interrupts
are blocked (GCMD.CFI clear). The NIC's MSI-X messages are then remappable
(handle, not vector): that the appliance serves at all proves they arrive
through the entries. QEMU 7.2 itself still delivers compatibility-format
messages whatever CFI says, and records no interrupt-remapping fault (it
drops the message and prints on its own stderr), so the blocking and the
fault log cannot be shown here (docs/architecture.md, VT-d, "Interrupt remapping")."""
import re
import time

import pytest

from mxlib import Guest, Vm, nsmod

IOMMU = ["-device", "intel-iommu"]
RNG_CONSOLE_IOMMU = ["-chardev", "null,id=mxc0",
                     "-device", "virtio-rng-pci,disable-legacy=on,iommu_platform=on",
                     "-device", "virtio-serial-pci,disable-legacy=on,iommu_platform=on",
                     "-device", "virtconsole,chardev=mxc0"]
ON = r"^vtd0: translation on \(3-level tables, (queued|register) invalidation, windows ro 0x2000000000 rw 0x4000000000\)$"
STRICT = r"^vtd: iommu=strict: functions start blocked; a device is driven only translated \(ACCESS_PLATFORM\)$"
POLICY = r"^iommu: vtd0 iommu=(\S+): functions translated (\d+) blocked (\d+) pass-through (\d+)$"


def refused(text, name, bdf):
    """The strict policy's line for a virtio device without ACCESS_PLATFORM,
    and its FAILED status after it: the virtio index."""
    m = re.search(rf"^virtio(\d+): {name} \(pci {re.escape(bdf)} modern\) refused: an IOMMU confines it "
                  r"\(iommu=strict\) but it does not offer ACCESS_PLATFORM; to drive it, boot with "
                  r"iommu=permissive or give the QEMU device iommu_platform=on$", text, re.M)
    assert m, text[-3000:]
    assert re.search(rf"^virtio{m.group(1)}: {name} probe failed \(-1\), status \S*FAILED", text[m.end():], re.M), \
        text[-3000:]
    return m.group(1)


def policy(g_vm):
    """The `iommu` verb's policy line: (mode, translated, blocked, pass-through)."""
    mark = len(g_vm.text)
    g_vm.send("iommu\n")
    m = g_vm.wait_for(POLICY, timeout=30, start=mark)
    return (m.group(1),) + tuple(map(int, m.groups()[1:]))


def iommu_domains(g):
    """The `iommu` shell command's domains: {bdf: {ro, rw, faults, unmapped, inval_page, inval_dom, flushes}}."""
    mark = len(g.vm.text)
    g.vm.send("iommu\n")
    g.vm.wait_for(r"^iommu: vtd0 translation on", timeout=30, start=mark)
    time.sleep(1)
    doms = {}
    for m in re.finditer(r"^iommu: domain \d+ (\S+) pages ro (\d+) rw (\d+) tables \d+ faults (\d+) "
                         r"unmapped (\d+) invalidations page (\d+) domain (\d+) flushes (\d+)$", g.vm.text[mark:], re.M):
        doms[m.group(1)] = dict(zip(("ro", "rw", "faults", "unmapped", "inval_page", "inval_dom", "flushes"),
                                    map(int, m.groups()[1:])))
    return doms


IR_ON = (r"^vtd0: interrupt remapping on \(256 entries, (\d+) IOAPIC pin\(s\) remapped, xAPIC\), "
         r"compatibility-format interrupts blocked$")
IR_SHOW = (r"^iommu: vtd0 interrupt remapping (on|off)(?:, (\d+) of 256 entries in use \((\d+) MSI, (\d+) IOAPIC "
           r"programmed\), compatibility format (blocked|allowed))?$")


def ir_show(g):
    """The `iommu` verb's interrupt remapping line: (state, entries in use,
    MSI programmed, IOAPIC programmed, compatibility format)."""
    mark = len(g.vm.text)
    g.vm.send("iommu\n")
    m = g.vm.wait_for(IR_SHOW, timeout=30, start=mark)
    return m.group(1), int(m.group(2) or 0), int(m.group(3) or 0), int(m.group(4) or 0), m.group(5)


AUDIT = r"^dma: audit: (\d+) device-writable pages, (\d+) shared, (\d+) reserved-region$"


def dma_audit(g):
    """The `iommu` verb's audit: (device-writable pages, shared with
    non-DMA memory, reserved-region identity pages), every domain."""
    mark = len(g.vm.text)
    g.vm.send("iommu\n")
    m = g.vm.wait_for(AUDIT, timeout=30, start=mark)
    return tuple(map(int, m.groups()))


READ_AUDIT = r"^dma: audit: (\d+) device-readable pages, (\d+) image read-only, (\d+) other; (\d+) other since boot$"


def dma_read_audit(g):
    """The audit's readable half: (device-readable pages now, of them the
    image's read-only data, of them other memory; readable maps of other
    memory since boot, counted at map time)."""
    mark = len(g.vm.text)
    g.vm.send("iommu\n")
    m = g.vm.wait_for(READ_AUDIT, timeout=30, start=mark)
    return tuple(map(int, m.groups()))


def iommu_show(g):
    """{bdf: (ro pages, rw pages, faults)}."""
    return {k: (d["ro"], d["rw"], d["faults"]) for k, d in iommu_domains(g).items()}


def bulk(g):
    g.serves()
    for _ in range(20):
        status, _, body = g.get("/64k.bin")
        assert status == 200 and len(body) == 65536
    g.tcp_echo(bytes(i % 251 for i in range(200000)))


@pytest.mark.parametrize("opts,extra", [
    # interrupt remapping asked for explicitly (intremap=on)
    pytest.param("disable-legacy=on,iommu_platform=on", ["-device", "intel-iommu,intremap=on"] + RNG_CONSOLE_IOMMU,
                 id="split-rng-console"),
    # ATS offered and the unit's device-TLB capability on: vireo's context
    # entries do not enable device TLBs (translation type 0), so the device
    # still goes through the unit for every access
    pytest.param("disable-legacy=on,iommu_platform=on,packed=on,ats=on",
                 ["-device", "intel-iommu,caching-mode=on,device-iotlb=on"], id="packed-caching-mode-ats"),
])
def test_translated(opts, extra):
    with Guest(device_opts=opts, extra=extra, cmdline="echo=tcp,udp") as g:
        text = g.vm.text
        assert re.search(ON, text, re.M), text[-3000:]
        assert re.search(r"^vtd0: covers \d+ device\(s\):.* 00:02\.0", text, re.M)
        assert re.search(r"^vtd0: 00:02\.0 translated in domain \d+$", text, re.M)
        # strict by default: everything blocked until its driver attaches it
        assert re.search(STRICT, text, re.M), text[-3000:]
        assert " refused: " not in text
        if "caching-mode=on" in extra[1]:
            assert re.search(r"^vtd0: .*caching mode", text, re.M)
        bulk(g)
        doms = iommu_show(g)
        ro, rw, faults = doms["00:02.0"]
        # transmit buffers and site bodies read-only, rings and receive
        # pools writable; nothing faulted
        assert ro > 0 and rw > 0 and faults == 0, doms
        # confined, transmit is bounced (issue 30): every segment outside
        # the image's read-only data is copied into DMA-only pages mapped
        # once, so another round of the same traffic leaves the read-only
        # count where it was (site bodies and the bounce pool, mapped once)
        # and maps no heap page at all
        first = iommu_domains(g)["00:02.0"]
        # batched: never more flushes than pages unmapped
        assert first["flushes"] <= first["unmapped"], first
        bulk(g)
        time.sleep(1)
        again = iommu_domains(g)["00:02.0"]
        assert again["ro"] <= first["ro"], (first, again)
        assert again["faults"] == 0
        readable, image, other, since = dma_read_audit(g)
        assert readable > 0 and other == 0 and since == 0, (readable, image, other, since)
        # nothing the kernel relies on is on a page a device can write:
        # rings, receive buffers, control and rng replies are DMA-only pages
        writable, shared, reserved = dma_audit(g)
        assert writable >= rw and shared == 0 and reserved == 0, (writable, shared, reserved, g.vm.text[-2000:])
        translated = 3 if "virtio-rng-pci" in " ".join(extra) else 1
        mode, n_tr, n_bl, n_pt = policy(g.vm)
        # q35's host bridge, LPC, SATA, SMBus and the (undriven) boot disk
        assert (mode, n_tr, n_pt) == ("strict", translated, 0) and n_bl >= 5, (mode, n_tr, n_bl, n_pt)
        if extra is not None and "virtio-rng-pci" in " ".join(extra):
            assert len(doms) == 3, doms
            # interrupt remapping: the serial console's and the ACPI SCI's
            # IOAPIC pins moved over at bring-up; every MSI-X vector of the
            # NIC, the rng and the console (config + queues, >= 2 each) has
            # its own entry, and the NIC serving proves they are delivered
            ir = re.search(IR_ON, text, re.M)
            assert ir and int(ir.group(1)) >= 1, text[-3000:]
            state, used, msi, ioapic, compat = ir_show(g)
            assert state == "on" and compat == "blocked", (state, compat)
            assert msi >= 6 and ioapic == int(ir.group(1)) and used >= 6 + ioapic, (used, msi, ioapic)
            m = g.metrics()
            assert m["vireo_iommu_intremap_units"] == 1
            assert m["vireo_iommu_intremap_entries"] == used
            assert re.search(r"^virtio\d+: rng: 256 bytes of entropy mixed in", g.vm.text, re.M)
            assert re.search(r"^virtio\d+: console: ", g.vm.text, re.M)
        m = g.metrics()
        assert m["vireo_vnet_device_resets_total"] == 0
        fn = {s: m[f'vireo_iommu_functions{{mode="strict",state="{s}"}}'] for s in ("translated", "blocked",
                                                                                    "pass-through")}
        assert fn == {"translated": translated, "blocked": n_bl, "pass-through": 0}, fn
        # strict by default under translation (dma.rx=auto): every frame is
        # copied out of the device's pages before lwIP reads it
        assert m["vireo_rxmem_copied_frames_total"] >= 100, m["vireo_rxmem_copied_frames_total"]
        assert m["vireo_vnet_tx_bounced_frames_total"] >= 100, m["vireo_vnet_tx_bounced_frames_total"]
        assert "vtd0: fault" not in g.vm.text
        g.log_clean()


def test_permissive_pass_through_without_access_platform():
    """iommu=permissive: the NIC without iommu_platform keeps physical
    addresses behind the same unit (pass-through context entry) and works;
    every other function is in pass-through too. The unit without
    interrupt remapping (intremap=off: no ECAP.IR): translation alone, the
    interrupts in compatibility format as before."""
    with Guest(device_opts="disable-legacy=on", extra=["-device", "intel-iommu,intremap=off"],
               cmdline="iommu=permissive") as g:
        text = g.vm.text
        assert re.search(ON, text, re.M), text[-3000:]
        assert re.search(r"^vtd: iommu=permissive: functions start in pass-through; ", text, re.M)
        assert "interrupt remapping on" not in text
        assert ir_show(g)[0] == "off"
        assert "vireo_iommu_intremap_units" not in g.metrics()
        assert not re.search(r"^vtd0: 00:02\.0 translated", text, re.M)
        assert " refused: " not in text
        g.serves()
        assert iommu_show(g) == {}
        mode, n_tr, n_bl, n_pt = policy(g.vm)
        assert (mode, n_tr, n_bl) == ("permissive", 0, 0) and n_pt >= 6, (mode, n_tr, n_bl, n_pt)
        m = g.metrics()
        assert m['vireo_iommu_functions{mode="permissive",state="pass-through"}'] == n_pt
        # not confined: zero-copy receive (dma.rx=auto)
        assert m["vireo_rxmem_copied_frames_total"] == 0
        assert dma_audit(g) == (0, 0, 0)
        assert dma_read_audit(g) == (0, 0, 0, 0)
        # not confined: zero-copy transmit
        assert g.metrics()["vireo_vnet_tx_bounced_frames_total"] == 0
        g.log_clean()


@pytest.mark.quick
def test_strict_refuses_nic_without_access_platform():
    """iommu=strict (the default): the NIC without iommu_platform, behind the
    unit, is refused with one line saying how to allow it; it is FAILED and
    blocked, so the appliance has no network. The rng and console beside it
    negotiated ACCESS_PLATFORM and are translated and driven."""
    ns = nsmod.Netns()
    vm = None
    try:
        vm = Vm(cmdline=f"ip={ns.guest_ip}/24 gw={ns.host_ip}", wrap=ns.wrap,
                extra=ns.qemu_args("disable-legacy=on") + IOMMU + RNG_CONSOLE_IOMMU)
        vm.wait_for(r"^net: no virtio-net device; the appliance is not started$", timeout=180)
        text = vm.text
        assert re.search(STRICT, text, re.M), text[-3000:]
        refused(text, "virtio-net", "00:02.0")
        assert not re.search(r"^vtd0: 00:02\.0 translated", text, re.M)
        assert len(re.findall(r"^vtd0: \S+ translated in domain \d+$", text, re.M)) == 2, text[-3000:]
        vm.wait_for(r"^virtio\d+: rng: 256 bytes of entropy mixed in", timeout=60)
        mode, n_tr, n_bl, n_pt = policy(vm)
        assert (mode, n_tr, n_pt) == ("strict", 2, 0) and n_bl >= 6, (mode, n_tr, n_bl, n_pt)
        r = ns.run("ping", "-c", "2", "-i", "0.3", "-W", "2", ns.guest_ip, timeout=30)
        assert r.returncode != 0, "the refused NIC answered"
        assert "vireo: panic" not in vm.text and "vtd0: fault" not in vm.text
    finally:
        if vm is not None:
            vm.stop()
        ns.close()


@pytest.mark.quick
def test_stray_write_faults_and_recovers():
    """One receive buffer handed out at its read-only address: QEMU's unit
    refuses the device's write (reason 5), vireo logs it once, resets the
    NIC and probes it again, and serving continues."""
    with Guest(device_opts="disable-legacy=on,iommu_platform=on", extra=IOMMU, cmdline="debug echo=tcp,udp") as g:
        g.serves()
        mark = len(g.vm.text)
        g.vm.send("iommu-stray\n")
        g.vm.wait_for(r"^iommu-stray: armed", timeout=30, start=mark)
        # the next re-posted receive buffer gets the bad address; frames until
        # the device reaches it (it has ~255 good ones posted before it)
        fault = re.compile(r"^vtd0: fault: 00:02\.0 write at (0x[0-9a-f]+): write to a page without write "
                           r"permission \(reason 0x5\); resetting the device$", re.M)
        deadline = time.monotonic() + 180
        while not fault.search(g.vm.text, mark) and time.monotonic() < deadline:
            g.ns.run("ping", "-q", "-c", "100", "-i", "0.01", "-W", "1", g.ip, timeout=120)
        m = g.vm.wait_for(fault.pattern, timeout=10, start=mark)
        addr = int(m.group(1), 16)
        assert 0x2000000000 <= addr < 0x4000000000, hex(addr)  # the read-only window
        stray = g.vm.wait_for(r"^vtd0: iommu.stray: handing 00:02\.0 the read-only address (0x[0-9a-f]+) ",
                              timeout=10, start=mark)
        assert int(stray.group(1), 16) & ~0xfff == addr
        reset = g.vm.wait_for(r"^virtio(\d+): DMA fault; resetting and probing again$", timeout=30, start=mark)
        g.vm.wait_for(rf"^virtio{reset.group(1)}: virtio-net driver bound, status \S*DRIVER_OK", timeout=60,
                      start=reset.end())
        time.sleep(2)
        bulk(g)
        text = g.vm.text
        assert len(fault.findall(text)) == 1, text[-3000:]
        assert len(re.findall(r"^virtio\d+: DMA fault; resetting", text, re.M)) == 1
        assert g.metrics()["vireo_vnet_device_resets_total"] == 1
        ro, rw, faults = iommu_show(g)["00:02.0"]
        assert faults >= 1 and ro > 0 and rw > 0
        g.log_clean()


@pytest.mark.quick
def test_selftest_iommu_fault():
    """selftest=iommu-fault: once the translated virtio-rng has delivered its
    boot entropy, a buffer it writes is handed out at its read-only address.
    The unit refuses the write and reports the fault once, naming the rng;
    the rng is reset and probed again and delivers entropy anew; the NIC,
    translated behind the same unit, is never touched and keeps serving."""
    with Guest(device_opts="disable-legacy=on,iommu_platform=on", extra=IOMMU + RNG_CONSOLE_IOMMU,
               cmdline="selftest=iommu-fault echo=tcp,udp") as g:
        text = g.vm.text
        assert re.search(ON, text, re.M), text[-3000:]
        armed = g.vm.wait_for(r"^selftest: iommu-fault: armed on virtio(\d+);", timeout=30)
        rng = armed.group(1)
        verdict = g.vm.wait_for(r"^selftest: iommu-fault: (pass|FAIL|skipped)\b.*$", timeout=120)
        assert verdict.group(1) == "pass", g.vm.text[-3000:]
        text = g.vm.text
        posted = re.search(rf"^selftest: iommu-fault: virtio{rng} queue 0: handing the device a buffer it "
                           r"writes at its read-only address$", text, re.M)
        assert posted, text[-3000:]
        stray = re.search(r"^vtd0: iommu.stray: handing (\S+) the read-only address (0x[0-9a-f]+) ", text, re.M)
        assert stray and stray.start() > posted.start(), text[-3000:]
        rng_bdf = stray.group(1)
        assert rng_bdf != "00:02.0", "the stray buffer went to the NIC, not the rng"
        faults = re.findall(rf"^vtd0: fault: {re.escape(rng_bdf)} write at (0x[0-9a-f]+): .*; resetting the "
                            r"device$", text, re.M)
        assert len(faults) == 1, text[-3000:]
        assert int(faults[0], 16) & ~0xfff == int(stray.group(2), 16) & ~0xfff
        assert 0x2000000000 <= int(faults[0], 16) < 0x4000000000  # the read-only window
        assert len(re.findall(rf"^virtio{rng}: DMA fault; resetting and probing again$", text, re.M)) == 1
        assert re.search(rf"^selftest: iommu-fault: virtio{rng} recovered after 1 reset, 1 of them for a DMA "
                         r"fault$", text, re.M)
        # the rng's new queue delivered again; the NIC never faulted
        mixed = re.findall(rf"^virtio{rng}: rng: \d+ bytes of entropy mixed in", text, re.M)
        assert len(mixed) == 2, text[-3000:]
        bulk(g)
        doms = iommu_show(g)
        assert doms["00:02.0"][2] == 0 and doms[rng_bdf][2] >= 1, doms
        assert g.metrics()["vireo_vnet_device_resets_total"] == 0
        assert "vtd0: fault: 00:02.0" not in g.vm.text
        g.log_clean()


@pytest.mark.quick
def test_selftest_iommu_fault_skipped_without_translation():
    """No IOMMU device: the rng is not translated, so the self-test says it
    skipped (it cannot provoke a fault) rather than passing."""
    with Guest(device_opts="disable-legacy=on", extra=RNG_CONSOLE_IOMMU, cmdline="selftest=iommu-fault") as g:
        verdict = g.vm.wait_for(r"^selftest: iommu-fault: (pass|FAIL|skipped)\b.*$", timeout=120)
        assert verdict.group(0) == ("selftest: iommu-fault: skipped (the device is not behind a translating "
                                    "IOMMU)"), g.vm.text[-3000:]
        assert "DMA fault" not in g.vm.text
        g.serves()
        g.log_clean()


@pytest.mark.quick
def test_interrupt_source_id_checked():
    """Source-id validation holds: the debug shell's `iommu-ir-sid` makes the
    NIC's remapping entries name another requester (00:03.0), and the unit
    refuses every interrupt the NIC sends (QEMU 7.2 records no fault: it
    drops the message and says so on its stderr, the console here); no
    receive interrupt arrives while traffic flows (vireo's fallback poll
    still moves it, slowly). Named back, interrupts return. Also the quick
    suite's check that remapping comes up under intremap=on."""
    key = 'vireo_vnet_interrupts_total{queue="rx"}'
    with Guest(device_opts="disable-legacy=on,iommu_platform=on", extra=["-device", "intel-iommu,intremap=on"],
               cmdline="debug echo=tcp,udp") as g:
        text = g.vm.text
        ir = re.search(IR_ON, text, re.M)
        assert ir, text[-3000:]
        g.serves()
        state, used, msi, ioapic, compat = ir_show(g)
        assert state == "on" and compat == "blocked" and msi >= 2 and used >= msi, (state, used, msi, compat)
        mark = len(g.vm.text)
        g.vm.send("iommu-ir-sid 00:02.0 00:03.0\n")
        m = g.vm.wait_for(r"^iommu-ir-sid: (\d+) entr(?:y|ies) of 00:02\.0 now name 00:03\.0$", timeout=30,
                          start=mark)
        assert int(m.group(1)) >= 2, m.group(0)  # config and queue vectors
        time.sleep(1)
        before = g.metrics()[key]
        g.ns.run("ping", "-q", "-c", "20", "-i", "0.05", "-W", "2", g.ip, timeout=60, check=False)
        blocked = g.metrics()[key]
        # QEMU's words: the requester (0x10 = 00:02.0) is not the entry's (0x18)
        refused = re.search(r"vtd_irte_get: invalid IRTE SID \(index=(\d+), sid=16, source_id=24\)",
                            g.vm.text[mark:])
        assert refused, g.vm.text[mark:][-2000:]
        assert blocked == before, (before, blocked)
        mark = len(g.vm.text)
        g.vm.send("iommu-ir-sid 00:03.0 00:02.0\n")
        g.vm.wait_for(r"^iommu-ir-sid: \d+ entr(?:y|ies) of 00:03\.0 now name 00:02\.0$", timeout=30, start=mark)
        time.sleep(1)
        bulk(g)
        assert g.metrics()[key] > blocked + 10
        assert "vtd0: fault" not in g.vm.text
