#!/usr/bin/env python3
"""Writes the seed corpus of every libFuzzer target to tests/fuzz/corpus/<target>/.

Each seed is a small, meaningful input in the target's own format (see the
comment at the top of each tests/fuzz/fuzz_*.c), so a run starts deep in the
code instead of rediscovering the format. Deterministic: running it again
rewrites the same files. `make fuzz-smoke` and `make fuzz` read these
directories next to their working corpus (build/fuzz/corpus-<target>).
"""
import os
import re
import struct
import sys

ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "corpus")
# An app's fuzzer keeps its seeds in the app's folder.
APP_CORPUS = {"fuzz_dns": os.path.join(ROOT, "..", "..", "..", "apps", "dns", "tests", "corpus")}


def le16(v):
    return struct.pack("<H", v & 0xffff)


def le32(v):
    return struct.pack("<I", v & 0xffffffff)


def le64(v):
    return struct.pack("<Q", v)


# ---- fuzz_cmdline: a kernel command line ----
def cmdline():
    return {
        "empty": b"",
        "typical": b"console=ttyS0 ip=10.0.2.15/24 gw=10.0.2.2 echo=tcp,udp debug",
        "quoted": b'name="a b c" small=xyz one= flag flag=0 flag=yes',
        "numbers": b"n1=4096 n2=0x1000 h1=0xffffffffffffffff h2=18446744073709551616 n1=-1",
        "enum": b"mode=reboot mode=halt mode=bogus pair=aa pair=ab custom=7",
        "junk": b"= == =x x= \"unterminated \x01\x7f\xff " + b"k" * 80 + b"=v",
    }


# ---- fuzz_http: byte 0 seeds the chunk sizes, then the connection's bytes ----
def http():
    get = b"GET / HTTP/1.1\r\nHost: vireo\r\n\r\n"
    return {
        "get": b"\x07" + get,
        "pipelined": b"\x03" + get + b"HEAD /index.html HTTP/1.1\r\nHost: v\r\nConnection: close\r\n\r\n",
        "http10": b"\x11GET /metrics HTTP/1.0\r\n\r\n",
        "keepalive": b"\x01GET /a/b?c=d HTTP/1.1\r\nHost: x\r\nConnection: keep-alive\r\nUser-Agent: t\r\n\r\n",
        "dotdot": b"\x05GET /../etc/passwd HTTP/1.1\r\nHost: x\r\n\r\n",
        "bad_method": b"\x02POST / HTTP/1.1\r\nHost: x\r\nContent-Length: 3\r\n\r\nabc",
        "no_host": b"\x09GET / HTTP/1.1\r\n\r\n",
        "long_header": b"\x13GET / HTTP/1.1\r\nHost: x\r\nX-Pad: " + b"a" * 2000 + b"\r\n\r\n",
        "lf_only": b"\x04GET / HTTP/1.1\nHost: x\n\n",
        # Seed bit 4: the app parser, chunked request bodies and what follows them.
        "chunked": b"\x13POST /up HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n"
                   b"5;a=b\r\nhello\r\nA\r\n0123456789\r\n0\r\nT: v\r\n\r\n" + get,
        "chunked_pipelined": b"\x35PUT /a HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: Chunked\r\n\r\n"
                             b"1\r\na\r\n0\r\n\r\nPOST /b HTTP/1.1\r\nHost: x\r\n"
                             b"Transfer-Encoding: chunked\r\n\r\n0\r\n\r\n" + get,
        "chunked_cl": b"\x17POST / HTTP/1.1\r\nHost: x\r\nContent-Length: 4\r\n"
                      b"Transfer-Encoding: chunked\r\n\r\n0\r\n\r\n",
        "chunked_twice": b"\x1bPOST / HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked, chunked\r\n\r\n",
        "te_gzip": b"\x19POST / HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: gzip, chunked\r\n\r\n",
        "chunked_bad_size": b"\x11POST / HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n"
                            b"fffffffffffffffff\r\n" + get,
    }


# ---- fuzz_response: piece size, take size, HEAD flag, then an upstream's bytes ----
def response():
    ok = b"HTTP/1.1 200 OK\r\nContent-Length: 5\r\n\r\nhello"
    ch = b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n5;x=y\r\nhello\r\n0\r\nT: v\r\n\r\n"
    return {
        "length_keepalive": b"\x03\x02\x00" + ok + ok,
        "chunked": b"\x01\x01\x00" + ch + ok,
        "close_delimited": b"\x07\x00\x00HTTP/1.0 200 OK\r\n\r\nuntil eof",
        "head": b"\x05\x00\x01HTTP/1.1 200 OK\r\nContent-Length: 99\r\n\r\n" + ok,
        "interim": b"\x02\x03\x00HTTP/1.1 100 Continue\r\n\r\n" + ok,
        "no_content": b"\x04\x01\x00HTTP/1.1 204 No Content\r\n\r\nHTTP/1.1 304 Not Modified\r\n\r\n" + ch,
        "cl_te": b"\x02\x00\x00HTTP/1.1 200 OK\r\nContent-Length: 3\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n",
    }


# ---- fuzz_acpi_tables: physical memory from 0; bytes 0-1 RSDP address, byte 2 flags ----
def sdt(sig, body, rev=1):
    length = 36 + len(body)
    hdr = sig + le32(length) + bytes([rev, 0]) + b"VIREO " + b"FUZZTBL " + le32(1) + b"VIRO" + le32(1)
    data = bytearray(hdr + body)
    data[9] = (-sum(data)) & 0xff
    return bytes(data)


def rsdp(xsdt_addr, rsdt_addr):
    r = bytearray(b"RSD PTR " + b"\0" + b"VIREO " + bytes([2]) + le32(rsdt_addr) + le32(36) +
                  le64(xsdt_addr) + b"\0\0\0\0")
    r[8] = (-sum(r[:20])) & 0xff
    r[32] = (-sum(r)) & 0xff
    return bytes(r)


# ---- fuzz_mdhttp: a metadata server's HTTP/1.1 response ----
def mdhttp():
    return {
        "gce": b"HTTP/1.1 200 OK\r\nMetadata-Flavor: Google\r\nContent-Type: application/text\r\n"
               b"Content-Length: 20\r\n\r\nhttp=8080\nsyslog=off\n",
        "token": b"HTTP/1.1 200 OK\r\nX-Aws-Ec2-Metadata-Token-Ttl-Seconds: 60\r\nContent-Length: 12\r\n\r\n"
                 b"AQAEAKkS9x==",
        "close": b"HTTP/1.0 404 Not Found\r\nServer: x\r\n\r\nnot found",
        "chunked": b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n3\r\nabc\r\n0\r\n\r\n",
        "badlen": b"HTTP/1.1 200 OK\r\nContent-Length: 3\r\nContent-Length: 4\r\n\r\nabcd",
        "redirect": b"HTTP/1.1 302 Found\r\nLocation: http://169.254.169.254/\r\nContent-Length: 0\r\n\r\n",
    }


def acpi_image(flags, tables, use_xsdt=True):
    mem = bytearray(0x1000)
    rsdp_at, root_at, at = 0x40, 0x80, 0x100
    addrs = []
    for t in tables:
        mem[at:at + len(t)] = t
        addrs.append(at)
        at += (len(t) + 15) & ~15
    if use_xsdt:
        root = sdt(b"XSDT", b"".join(le64(a) for a in addrs))
        r = rsdp(root_at, 0)
    else:
        root = sdt(b"RSDT", b"".join(le32(a) for a in addrs))
        r = rsdp(0, root_at)
    mem[root_at:root_at + len(root)] = root
    mem[rsdp_at:rsdp_at + len(r)] = r
    mem[0:2] = le16(rsdp_at)
    mem[2] = flags
    return bytes(mem[:at])


def acpi():
    madt = sdt(b"APIC", le32(0xfee00000) + le32(1) +
               bytes([0, 8, 0, 0]) + le32(1) +                       # local APIC 0
               bytes([0, 8, 1, 1]) + le32(1) +                       # local APIC 1
               bytes([1, 12, 0, 0]) + le32(0xfec00000) + le32(0) +   # I/O APIC
               bytes([2, 10, 0, 0]) + le32(2) + le16(0) +            # ISA IRQ 0 -> GSI 2
               bytes([2, 10, 0, 9]) + le32(9) + le16(0x000d))        # SCI, level, active low
    mcfg = sdt(b"MCFG", bytes(8) + le64(0xb0000000) + le16(0) + bytes([0, 255]) + bytes(4))
    fadt_body = bytearray(244 - 36)
    fadt_body[116 - 36:116 - 36 + 12] = bytes([1, 8, 0, 1]) + le64(0xcf9)   # reset register (I/O)
    fadt_body[128 - 36] = 0x06                                               # reset value
    fadt = sdt(b"FACP", bytes(fadt_body), rev=6)
    hpet = sdt(b"HPET", le32(0x8086a201) + bytes([0, 64, 0, 0]) + le64(0xfed00000) + bytes([0]) +
               le16(0) + bytes([0]))
    # DMAR as QEMU's q35 writes it (one INCLUDE_PCI_ALL unit with an I/O APIC
    # scope), plus a unit naming an endpoint two bridges down and an RMRR.
    ioapic_scope = bytes([3, 8, 0, 0, 0, 0xff, 0x1f, 0])
    deep_scope = bytes([1, 12, 0, 0, 0, 0, 0x1c, 0, 0, 0, 0, 0])
    dmar = sdt(b"DMAR", bytes([38, 1]) + bytes(10) +
               le16(0) + le16(16 + len(deep_scope)) + bytes([0, 0]) + le16(0) + le64(0xfed91000) +
               deep_scope +
               le16(0) + le16(16 + len(ioapic_scope)) + bytes([1, 0]) + le16(0) + le64(0xfed90000) +
               ioapic_scope +
               le16(1) + le16(24 + len(deep_scope)) + bytes(2) + le16(0) + le64(0x7f000000) +
               le64(0x7f0fffff) + deep_scope)
    return {
        "xsdt_all": acpi_image(0x00, [fadt, madt, mcfg, hpet]),
        "dmar_q35": acpi_image(0x00, [fadt, madt, mcfg, dmar]),
        "rsdt_madt": acpi_image(0x00, [madt], use_xsdt=False),
        "repair_flags": acpi_image(0x3f, [madt, mcfg]),
        "empty_root": acpi_image(0x00, []),
    }


# ---- fuzz_aml_s5: a DSDT body (AML, after the 36-byte header) ----
def aml_pkglen(n):
    """PkgLength (ACPI 6.5 20.2.4) of n bytes that follow it: it counts
    its own bytes too."""
    if n + 1 < 0x40:
        return bytes([n + 1])
    if n + 2 < 0x1000:
        t = n + 2
        return bytes([0x40 | (t & 0xf), (t >> 4) & 0xff])
    t = n + 3
    return bytes([0x80 | (t & 0xf), (t >> 4) & 0xff, (t >> 12) & 0xff])


def aml_pkg(op, body):
    return op + aml_pkglen(len(body)) + body


def aml_name(name, data):
    return b"\x08" + name + data


def aml_string(text):
    return b"\x0d" + text + b"\0"


def aml_int(v):
    if v in (0, 1):
        return bytes([v])
    if v < 0x100:
        return b"\x0a" + bytes([v])
    if v < 0x10000:
        return b"\x0b" + le16(v)
    return b"\x0c" + le32(v)


def aml_package(*elems):
    return aml_pkg(b"\x12", bytes([len(elems)]) + b"".join(aml_int(e) for e in elems))


def aml_buffer(data):
    return aml_pkg(b"\x11", aml_int(len(data)) + data)


def aml():
    s5 = aml_name(b"_S5_", aml_package(5, 0, 0, 0))
    # QEMU microvm's GED: Interrupt(ResourceConsumer, Edge, ActiveHigh,
    # Exclusive) {9}, OperationRegion(EREG, SystemMemory, 0xfea00000, 4),
    # Field(EREG, DWordAcc) {ESEL, 32}, Method(_EVT, 1, Serialized)
    irq = bytes([0x89]) + le16(6) + bytes([0x03, 1]) + le32(9) + bytes([0x79, 0])
    ged = aml_pkg(b"\x5b\x82", b"GED_" +
                  aml_name(b"_HID", aml_string(b"ACPI0013")) +
                  aml_name(b"_UID", aml_string(b"GED")) +
                  aml_name(b"_CRS", aml_buffer(irq)) +
                  b"\x5b\x80EREG\x00" + aml_int(0xfea00000) + aml_int(4) +
                  aml_pkg(b"\x5b\x81", b"EREG\x03" + b"ESEL\x20") +
                  aml_pkg(b"\x14", b"_EVT\x09\xa4\x00"))
    pwrb = aml_pkg(b"\x5b\x82", b"PWRB" + aml_name(b"_HID", aml_string(b"PNP0C0C")))
    pci0 = aml_pkg(b"\x5b\x82", b"PCI0")
    return {
        "microvm": ged + pwrb + aml_pkg(b"\x10", b"\\\x00" + s5),
        "q35_s5": aml_pkg(b"\x10", b"\\_SB_" + pci0) + s5.replace(aml_package(5, 0, 0, 0),
                                                                  aml_package(0, 0, 0, 0)),
    }


# ---- fuzz_virtq: config byte, size byte, then ops (op % 20) ----
def virtq():
    # op 0 add: n_out, n_in, one length byte per element, token
    def add(n_out, n_in, lens, tok):
        return bytes([0, n_out, n_in]) + bytes(lens) + bytes([tok])
    kick, fetch, reset = bytes([6]), bytes([18]), bytes([19])

    def complete(length, k):  # op 12: len % 80, pick % taken
        return bytes([12, length, k])
    split = bytes([0x02, 3])                  # split, event idx, 8 entries
    packed = bytes([0x07, 5])                 # packed, event idx, indirect
    inorder = bytes([0x08, 2])                # split, in order, 4 entries
    ops = (add(1, 1, [10, 20], 1) + add(0, 2, [30, 40], 2) + kick + fetch +
           complete(25, 0) + bytes([3]) + complete(70, 0) + bytes([3, 9]))
    return {
        "split_basic": split + ops,
        "packed_basic": packed + ops + add(2, 2, [1, 2, 3, 4], 3) + kick + complete(3, 0) + bytes([3]),
        "inorder_batch": inorder + add(1, 0, [5], 1) + add(1, 0, [6], 2) + add(0, 1, [7], 3) + kick +
        bytes([15, 7, 2]) + bytes([3, 3, 3]),
        "raw_used_lie": split + add(0, 1, [16], 1) + kick + fetch + bytes([16, 0, 0xff, 0xff]) + bytes([3]),
        "reset_midway": split + add(1, 1, [8, 8], 1) + kick + reset + add(1, 0, [9], 2) + kick +
        complete(0, 0) + bytes([3]),
        # found by the fuzzer (commit ee1fb5f): a transient packed queue
        # reusing a position before its buffer's elements were unmapped
        "transient-packed-position-reuse": bytes.fromhex(
            "31fcf7ff00200001d0ffffffff050001010a14010000ff0001d00001010a14010000ff0001d0ffffffff"
            "050001010a14010000ffff5503402395ffffffff050001010a14010000ffff5503402395ff550340232395"
            "80f914ffff"),
    }


# ---- fuzz_vnet_hdr: 16 parameter bytes, then the first buffer's bytes ----
def vnet_hdr():
    def params(used, posted, feat, maxbuf=4, hdrlen=0, maxframe=0, tso=0):
        # pick_len: top bits 01 select "& 0x7ff", 00 "& 0x3f"
        return (le32((1 << 30) | used) + le32((1 << 30) | posted) + bytes([feat, maxbuf, hdrlen, tso]) +
                le32(maxframe))

    def gso(v6, frame_len=200):
        # header: NEEDS_CSUM, TCPV4/6, hdr_len, gso_size 1448, csum at the TCP header, 1 buffer
        l4 = 54 if v6 else 34
        h = bytes([1, 4 if v6 else 1]) + le16(l4 + 20) + le16(1448) + le16(l4) + le16(16) + le16(1)
        mac = b"\x52\x54\x00\x12\x34\x56\x02\x00\x00\x00\x00\x01"
        if v6:
            ip = b"\x86\xdd\x60" + bytes(3) + (frame_len - 54).to_bytes(2, "big") + bytes([6, 64]) + bytes(32)
        else:
            ip = (b"\x08\x00\x45\x00" + (frame_len - 14).to_bytes(2, "big") + b"\x00\x00\x40\x00\x40\x06" +
                  bytes(10))
        tcp = bytes(12) + bytes([5 << 4]) + bytes(7)
        return h + mac + ip + tcp + bytes(frame_len - l4 - 20)
    eth = b"\x52\x54\x00\x12\x34\x56\x02\x00\x00\x00\x00\x01\x08\x00" + bytes(50)
    hdr12 = bytes(10) + le16(1)
    csum_hdr = bytes([1, 0]) + le16(0) + le16(34) + le16(16) + le16(1)   # NEEDS_CSUM
    valid_hdr = bytes([2, 0]) + bytes(8) + le16(1)                        # DATA_VALID
    return {
        "modern_frame": params(12 + 64, 1526, 0x01) + hdr12 + eth,
        "needs_csum": params(12 + 64, 1526, 0x05) + csum_hdr + eth,
        "data_valid": params(12 + 64, 1526, 0x05) + valid_hdr + eth,
        "merged_3": params(1526, 1526, 0x43, 4) + bytes(10) + le16(3) + eth + bytes(64),
        "legacy_short": params(10 + 13, 1524, 0x00) + bytes(10) + eth[:13],
        "gso_set": params(12 + 64, 1526, 0x01) + bytes([0, 1]) + bytes(8) + le16(1) + eth,
        "gso_tcp4": params(12 + 200, 1526, 0x07, tso=3) + gso(False),
        "gso_tcp6": params(12 + 200, 1526, 0x07, tso=3) + gso(True),
    }


# ---- fuzz_virtio_net: feature byte a, byte b, [mtu], [ctrl mode], then ops (op % 16) ----
def vnet_rx():
    def good(b=0, len_=60):
        return bytes([0, b]) + le16(len_ - 14)
    irq, tx_irq, timers = bytes([5 | 0x10]), bytes([7, 4]), bytes([8]) + le16(2000)
    send = bytes([11]) + le16(100) + bytes([2, 0])
    release = bytes([10 | 0x10, 255])
    return {
        "modern_frames": bytes([0x09, 0x08]) + good() * 4 + irq + release + good(1, 1514) + irq,
        "mergeable_big": bytes([0x0b, 0x08]) + good(0, 9000) + irq + release,
        # receive TSO: a 20,074-byte coalesced IPv4 segment, NEEDS_CSUM, then IPv6
        "rx_tso": bytes([0x0f, 0x08]) + good(8 | 32, 100) + le16(20000) + le16(1448) + le16(54) + irq +
        release + good(8 | 16 | 32, 100) + le16(60000) + le16(1428) + le16(74) + irq + release,
        "packed_evidx": bytes([0x19, 0x18]) + good() * 8 + irq + send * 3 + tx_irq + timers,
        "ctrl_coal": bytes([0xc9, 0x08 | 0x20]) + good() * 16 + irq + timers + irq + bytes([14 | 0x20]),
        "echo": bytes([0x29, 0x48]) + good() * 4 + irq + tx_irq,
        "link_flap": bytes([0x09, 0x08]) + bytes([9, 9 | 0x10, 9, 9 | 0x10]) + send + tx_irq,
        "needs_reset": bytes([0x0b, 0x08]) + good() * 2 + irq + bytes([12, 0]) + good() + irq + release,
        "ctrl_silent": bytes([0x49, 0x88, 2]) + good() + irq + bytes([13, 0]) + timers,
        # op 12 with bit 128: one more byte (bit 0 interrupt storm, bits 1-2 a stuck reset)
        "probe_fail_storm": bytes([0x09, 0x08]) + good() + irq + bytes([12, 0x80 | 0x08 | 0x04, 0x01]) +
        bytes([12, 0x00]) + good() + irq,
        "reset_stuck": bytes([0x0b, 0x08]) + good() * 2 + irq + release + bytes([12, 0x80, 0x07]) +
        good() + irq + send + release,
        # found by fuzz-smoke: link up on a device already broken reported
        # link down to the upper layer, nested, before telling it link up
        "regress_link_up_broken": bytes.fromhex(
            "08000b001a8b007b151affffffa3ffffffffffffffffffffffffffff0908"
            "00002e00608c0000000000000000000000000000000000000000000000ffffffffffffffffff"),
    }


# ---- fuzz_virtio_mmio_parse: virtio_mmio.device= values, NUL-separated ----
def vmmio():
    return {
        "microvm": b"512@0xfeb00e00:12\x00512@0xfeb00c00:11\x00512@0xfeb00a00:10",
        "firecracker": b"4K@0xd0000000:5:0\x004K@0xd0001000:6:1",
        "overlap": b"512@0xfeb00000:16\x000x300@0xfeb00100:17\x00512@0xfeb00000:16",
        "bad": b"512@0xfeb00002:5\x0016777216G@0x1000:5\x00512@0xfffffffffffffe00:5\x00x",
        # AML as QEMU microvm's DSDT describes two windows (the values part
        # holds no valid window; the AML scan finds both devices).
        "dsdt": b"\x00" + vmmio_dev(0xfeb02e00, 0x200, 47) + vmmio_dev(0xfeb02c00, 0x200, 46),
    }


def vmmio_dev(base, size, gsi):
    crs = b"\x86\x09\x00\x01" + le32(base) + le32(size) + b"\x89\x06\x00\x09\x01" + le32(gsi) + b"\x79\x00"
    return (b"\x5b\x82\x3aVR00\x08_HID\x0dLNRO0005\x00\x08_UID\x00\x08_CCA\x01\x08_CRS\x11"
            + bytes([len(crs) + 3, 0x0a, len(crs)]) + crs)


# ---- fuzz_mbedtls_config: the bytes a client sends a TLS server, as records ----
def be16(v):
    return struct.pack(">H", v & 0xffff)


def tls_ext(typ, body):
    return be16(typ) + be16(len(body)) + body


def client_hello(tls13, groups, suites, alpn=True):
    """A ClientHello in one handshake record (RFC 8446 4.1.2): fixed random
    and key share bytes, the groups' key shares for TLS 1.3."""
    exts = b""
    exts += tls_ext(10, be16(2 * len(groups)) + b"".join(be16(g) for g in groups))  # supported_groups
    exts += tls_ext(11, b"\x01\x00")  # ec_point_formats: uncompressed
    sigs = [0x0403, 0x0804, 0x0401, 0x0503]  # ecdsa_p256_sha256, rsa_pss_rsae_sha256, rsa_pkcs1_sha256, ...
    exts += tls_ext(13, be16(2 * len(sigs)) + b"".join(be16(x) for x in sigs))  # signature_algorithms
    if alpn:
        proto = b"\x08http/1.1"
        exts += tls_ext(16, be16(len(proto)) + proto)
    exts += tls_ext(23, b"")  # extended_master_secret
    if tls13:
        exts += tls_ext(43, b"\x04\x03\x04\x03\x03")  # supported_versions: 1.3, 1.2
        shares = b""
        for g in groups:
            # X25519: 32 bytes; P-256: an uncompressed point (not on the
            # curve here: the server must refuse it cleanly, or the fuzzer
            # finds a real one nearby; X25519 accepts any 32 bytes).
            key = bytes(range(1, 33)) if g == 29 else b"\x04" + bytes(range(64))
            shares += be16(g) + be16(len(key)) + key
        exts += tls_ext(51, be16(len(shares)) + shares)  # key_share
        exts += tls_ext(45, b"\x01\x01")  # psk_key_exchange_modes: psk_dhe_ke
    body = b"\x03\x03" + bytes(range(32)) + b"\x20" + bytes(range(32, 64))
    body += be16(2 * len(suites)) + b"".join(be16(x) for x in suites) + b"\x01\x00"
    body += be16(len(exts)) + exts
    hs = b"\x01" + struct.pack(">I", len(body))[1:] + body
    return b"\x16\x03\x01" + be16(len(hs)) + hs


def tls():
    return {
        "ch13-x25519": client_hello(True, [29], [0x1301, 0x1302, 0x1303]),
        "ch13-p256": client_hello(True, [23], [0x1301]),
        "ch12-ecdhe-ecdsa": client_hello(False, [23, 29], [0xc02b, 0xc02c, 0xcca9]),
        "ch12-cbc-only": client_hello(False, [23], [0xc009, 0x002f], alpn=False),
        "garbage": bytes((i * 37 + 11) & 0xff for i in range(300)),
    }


# ---- fuzz_dns: a mode byte (bit 0: TCP; the rest: TCP output room), then a query ----
def dns_query(name, qtype, edns=None, qid=0x1234, flags=0x0100):
    q = be16(qid) + be16(flags) + be16(1) + be16(0) + be16(0) + be16(1 if edns else 0)
    for lab in name.split("."):
        if lab:
            q += bytes([len(lab)]) + lab.encode()
    q += b"\0" + be16(qtype) + be16(1)
    if edns:
        q += b"\0" + be16(41) + be16(edns) + b"\0\0\0\0" + be16(0)
    return q


def dns():
    return {
        "a_apex": b"\0" + dns_query("ViReO.test", 1),
        "mx_edns": b"\0" + dns_query("vireo.test", 15, edns=1232),
        "ns_glue": b"\0" + dns_query("vireo.test", 2),
        "cname_chain": b"\0" + dns_query("www.vireo.test", 1),
        "cname_loop": b"\0" + dns_query("loop1.vireo.test", 1),
        "big_txt_udp": b"\0" + dns_query("big.vireo.test", 16),
        "big_txt_tcp": b"\x03" + dns_query("big.vireo.test", 16),
        "any_tcp": b"\xff" + dns_query("vireo.test", 255),
        "referral": b"\0" + dns_query("a.child.vireo.test", 28),
        "nxdomain": b"\0" + dns_query("nope.vireo.test", 1),
        "refused": b"\0" + dns_query("example.com", 1),
        "tcp_stream": b"\x01" + b"".join(be16(len(q)) + q for q in (dns_query("vireo.test", 6), dns_query("x.vireo.test", 1))),
    }


# ---- fuzz_dns_msg: a server's response to "www.example.com" (id 0x1234;
# the last byte's bit 1 asks AAAA) ----
def dns_rr(owner_wire, typ, ttl, rdata):
    return owner_wire + be16(typ) + be16(1) + be16(ttl >> 16) + be16(ttl & 0xffff) + be16(len(rdata)) + rdata


def dns_wire(name):
    return b"".join(bytes([len(lab)]) + lab.encode() for lab in name.split(".") if lab) + b"\0"


def dns_response(qtype, rcode, answers, authority=b"", an=None, ns=0):
    q = dns_query("www.example.com", qtype, flags=0x8180 | rcode)
    q = q[:6] + be16(an if an is not None else len(answers)) + be16(ns) + q[10:]
    return q + b"".join(answers) + authority


def dns_msg():
    www = b"\xc0\x0c"  # a pointer to the question's name
    soa = dns_rr(dns_wire("example.com"), 6, 3600, b"\0\0" + b"\0\0\0\x64" * 4 + b"\0\0\x03\x84")
    return {
        "a": dns_response(1, 0, [dns_rr(www, 1, 300, bytes([192, 0, 2, 1])), dns_rr(www, 1, 60, bytes([192, 0, 2, 2]))]) + b"\0",
        "aaaa": dns_response(28, 0, [dns_rr(www, 28, 300, bytes(range(16)))]) + b"\x02",
        "cname": dns_response(1, 0, [dns_rr(www, 5, 30, dns_wire("cdn.example.net")),
                                     dns_rr(dns_wire("cdn.example.net"), 1, 600, bytes([198, 51, 100, 7]))]) + b"\0",
        "nxdomain": dns_response(1, 3, [], soa, ns=1) + b"\0",
        "nodata": dns_response(28, 0, [], soa, ns=1) + b"\x02",
        "loop": dns_response(1, 0, [b"\x01x\xc0\x21" + be16(1) + be16(1) + b"\0\0\0\x3c" + be16(4) + b"\1\2\3\4"]) + b"\0",
        "servfail": dns_response(1, 2, []) + b"\0",
    }


# ---- fuzz_iso9660: a volume from sector 16 on (the fuzzer adds the 16 empty ones) ----
def iso_volume(tree, label=b"cidata", rr=True, joliet=False):
    """A small ISO 9660 volume as genisoimage lays one out, written from
    ECMA-119 here: tree is {name: bytes | {name: ...}}. Rock Ridge NM names
    (with SP on the root's ".") and/or a Joliet tree; plain names are the
    upper-cased name with ";1". Returns the bytes from sector 16 on."""
    S = 2048
    sectors = {}  # lba -> bytes
    nxt = [16 + 2 + (1 if joliet else 0)]  # PVD, [SVD], terminator

    def both32(v):
        return struct.pack("<I", v) + struct.pack(">I", v)

    def both16(v):
        return struct.pack("<H", v) + struct.pack(">H", v)

    def record(name, lba, size, is_dir, su=b""):
        pad = b"" if len(name) % 2 else b"\0"
        body = (b"\0" + both32(lba) + both32(size) + b"\0" * 7 + bytes([2 if is_dir else 0, 0, 0])
                + both16(1) + bytes([len(name)]) + name + pad + su)
        return bytes([len(body) + 1]) + body

    def nm(name):
        return b"NM" + bytes([5 + len(name), 1, 0]) + name

    def place(tree, mode, parent):
        lba = nxt[0]
        nxt[0] += 1
        kids = []
        for name, v in sorted(tree.items()):
            enc = name.encode()
            if mode == "joliet":
                ident = name.encode("utf-16-be") + (b"" if isinstance(v, dict) else ";1".encode("utf-16-be"))
            else:
                ident = enc.upper().replace(b"-", b"_") + (b"" if isinstance(v, dict) else b".;1")
            su = nm(enc) if mode == "rr" else b""
            if isinstance(v, dict):
                sub = place(v, mode, lba)
                kids.append(record(ident, sub, S, True, su))
            else:
                flba = nxt[0]
                nxt[0] += (len(v) + S - 1) // S or 1
                sectors[flba] = v
                kids.append(record(ident, flba, len(v), False, su))
        sp = b"SP\x07\x01\xbe\xef\x00" if mode == "rr" and parent is None else b""
        recs = record(b"\0", lba, S, True, sp) + record(b"\1", parent or lba, S, True) + b"".join(kids)
        sectors[lba] = recs
        return lba

    root = place(tree, "rr" if rr else "plain", None)
    jroot = place(tree, "joliet", None) if joliet else 0
    total = nxt[0]

    def vd(kind, root_lba, esc=b""):
        d = bytearray(S)
        d[0] = kind
        d[1:7] = b"CD001\1"
        d[40:72] = label.ljust(32, b" ")
        d[80:88] = both32(total)
        d[88:88 + len(esc)] = esc
        d[128:132] = both16(S)
        d[156:190] = record(b"\0", root_lba, S, True)
        return bytes(d)

    sectors[16] = vd(1, root)
    if joliet:
        sectors[17] = vd(2, jroot, b"%/E")
    term = bytearray(S)
    term[0] = 255
    term[1:7] = b"CD001\1"
    sectors[16 + 1 + (1 if joliet else 0)] = bytes(term)
    out = bytearray()
    for lba in range(16, total):
        chunk = sectors.get(lba, b"")
        out += chunk + b"\0" * (-len(chunk) % S)
    return bytes(out.rstrip(b"\0"))


def iso():
    nocloud = {"user-data": b"http=8081\nip=10.0.0.5/24\n", "meta-data": b"instance-id: iid-1\n"}
    config2 = {"openstack": {"latest": {"user_data": b"http=8081\n", "meta_data.json": b'{"uuid": "u-1"}\n',
                                        "network_data.json": b"{}\n"}}}
    return {
        "cidata_rr": iso_volume(nocloud),
        "cidata_joliet": iso_volume(nocloud, rr=False, joliet=True),
        "cidata_plain": iso_volume(nocloud, rr=False),
        "config2_rr_joliet": iso_volume(config2, label=b"config-2", joliet=True),
    }


# ---- fuzz_smbios: byte 0 even: a structure table; odd: an entry point / Base64 ----
def smbios():
    def st(kind, formatted, strings):
        body = bytes([kind, 4 + len(formatted)]) + le16(0x100 + kind) + formatted
        return body + (b"".join(x + b"\0" for x in strings) + b"\0" if strings else b"\0\0")

    oem = [b"io.systemd.credential:vireo.cmdline=http=8080 ip=10.0.0.5/24",
           b"io.systemd.credential.binary:vireo.cmdline=Z3c9MTAuMC4wLjE=",
           b"io.systemd.credential:vireo.other=1", b"plain OEM string"]
    table = (st(0, bytes(20), [b"EFI Development Kit II / OVMF", b"0.0.0"]) + st(1, bytes(23), [])
             + st(11, bytes([len(oem)]), oem) + st(127, b"", []))
    ep = bytearray(b"_SM3_\0\x18\x03\x00\x00\x01\x00" + le32(len(table)) + le64(0x7f000000))
    ep[5] = -sum(ep) & 0xff
    return {
        "qemu_oem": b"\0" + table,
        "no_end": b"\0" + table[:-2],
        "entry_sm3": b"\x01" + bytes(ep),
        "base64": b"\xfd" + b"aHR0cD04MDgwIGVjaG89dGNw",
    }


# ---- fuzz_logfmt: a mode byte (bit 1: superblock, else a segment; bit 0:
# the fuzzer fixes the checksums), then the bytes read from the disk ----
def crc32c(data, crc=0):
    c = crc ^ 0xffffffff
    for b in data:
        c ^= b
        for _ in range(8):
            c = (c >> 1) ^ (0x82f63b78 & -(c & 1))
    return c ^ 0xffffffff


LOGFMT_SEED = 0x600dcafe


def st_record(typ, lsn, key, val=b"", flags=0):
    n = 24 + len(key) + len(val)
    body = le32(n) + bytes([typ, len(key)]) + le16(flags) + le32(len(val)) + le64(lsn) + key + val
    rec = le32(crc32c(body, LOGFMT_SEED)) + body
    return rec + b"\0" * (-len(rec) % 8)


def st_batch(seq, durable, recs, first=False, prev=(0xffffffff, 0)):
    payload = b"".join(recs)
    tail = (le64(seq) + le64(durable) + le32(0) + le32(len(recs)) + le32(len(payload)) + le32(1 if first else 0)
            + le32(prev[0]) + le32(crc32c(payload, LOGFMT_SEED)) + le64(prev[1]) + le64(0))
    hdr = le32(0x31425356) + le32(crc32c(tail, LOGFMT_SEED)) + tail
    out = hdr + payload
    return out + b"\0" * (-len(out) % 512)


def logfmt():
    sb = (b"VIREO-ST" + le32(1) + le32(4096) + le64(3) + bytes(range(16)) + bytes(range(16, 32)) + le64(1700000000)
          + le64(1 << 17) + le32(512) + le32(1 << 20) + le64(8192) + le32(60) + le32(65536) + b"vireo-data".ljust(32, b"\0"))
    seg = (st_batch(1, 0, [st_record(1, 1, b"alpha", b"one"), st_record(2, 2, b"beta")], first=True)
           + st_batch(2, 1, [st_record(1, 3, b"k" * 40, bytes(range(200)) * 3), st_record(1, 4, b"x", b"", 1)]))
    return {
        "super": b"\x03" + le64(1 << 17) + sb,
        "segment": b"\x00" + seg,
        "segment_fix": b"\x01" + seg,
        "torn": b"\x00" + seg[:700],
    }


# ---- fuzz_acme_json: a CA's JSON response (RFC 8555's shapes, written here) ----
def acme_json():
    return {
        "directory": b'{"newNonce":"https://example.com/acme/new-nonce","newAccount":"https://example.com/acme/new-account",'
                     b'"newOrder":"https://example.com/acme/new-order","revokeCert":"https://example.com/acme/revoke-cert",'
                     b'"keyChange":"https://example.com/acme/key-change","renewalInfo":"https://example.com/acme/renewal-info",'
                     b'"meta":{"termsOfService":"https://example.com/acme/terms/2017-5-30","website":"https://www.example.com/",'
                     b'"caaIdentities":["example.com"],"externalAccountRequired":false,"profiles":{"shortlived":"6 days"}}}',
        "account": b'{"status":"valid","contact":["mailto:cert-admin@example.org","mailto:admin@example.org"],'
                   b'"termsOfServiceAgreed":true,"orders":"https://example.com/acme/orders/rzGoeA"}',
        "order": b'{\n  "status": "pending",\n  "expires": "2016-01-05T14:09:07.99Z",\n  "notBefore": "2016-01-01T00:00:00Z",\n'
                 b'  "notAfter": "2016-01-08T00:00:00Z",\n  "identifiers": [\n    {"type": "dns", "value": "www.example.org"},\n'
                 b'    {"type": "dns", "value": "example.org"}\n  ],\n  "authorizations": [\n'
                 b'    "https://example.com/acme/authz/PAniVnsZcis",\n    "https://example.com/acme/authz/r4HqLzrSrpI"\n  ],\n'
                 b'  "finalize": "https://example.com/acme/order/TOlocE8rfgo/finalize",\n'
                 b'  "certificate": "https://example.com/acme/cert/mAt3xBGaobw"\n}',
        "authz": b'{"status":"pending","expires":"2016-01-02T14:09:30Z","identifier":{"type":"dns","value":"www.example.org"},'
                 b'"challenges":[{"type":"http-01","url":"https://example.com/acme/chall/prV_B7yEyA4",'
                 b'"token":"DGyRejmCefe7v4NfDGDKfA"},{"type":"dns-01","url":"https://example.com/acme/chall/Rg5dV14Gh1Q",'
                 b'"token":"DGyRejmCefe7v4NfDGDKfA"},{"type":"tls-alpn-01","url":"https://example.com/acme/chall/TJ4x",'
                 b'"status":"valid","validated":"2014-12-01T12:05:13.72Z","token":"evaGxfADs6pSRb2LAv9IZf17Dt3juxGJ-PCt92wr-oA"}],'
                 b'"wildcard":false}',
        "problem": b'{"type":"urn:ietf:params:acme:error:malformed","detail":"Some of the identifiers requested were rejected",'
                   b'"subproblems":[{"type":"urn:ietf:params:acme:error:malformed","detail":"Invalid underscore in DNS name \\"_example.org\\"",'
                   b'"identifier":{"type":"dns","value":"_example.org"}},{"type":"urn:ietf:params:acme:error:rejectedIdentifier",'
                   b'"detail":"This CA will not issue for \\"example.net\\"","identifier":{"type":"dns","value":"example.net"}}]}',
        "ratelimit": b'{"type":"urn:ietf:params:acme:error:rateLimited","detail":"too many \\u00e9 \\ud83d\\ude00","status":429}',
        "renewal_info": b'{"suggestedWindow":{"start":"2025-01-02T04:00:00Z","end":"2025-01-03T04:00:00Z"},'
                        b'"explanationURL":"https://acme.example.com/docs/ari"}',
        "dupkey": b'{"status":"valid","status":"invalid"}',
        "numbers": b'[0,-0,1.5e+10,-12.25E-3,9007199254740991,9007199254740992,true,false,null,"",[],{}]',
        "deep": b"[" * 17 + b"]" * 17,
    }


TARGETS = {
    "fuzz_cmdline": cmdline,
    "fuzz_http": http,
    "fuzz_response": response,
    "fuzz_mdhttp": mdhttp,
    "fuzz_acpi_tables": acpi,
    "fuzz_aml_s5": aml,
    "fuzz_virtq": virtq,
    "fuzz_vnet_hdr": vnet_hdr,
    "fuzz_virtio_net": vnet_rx,
    "fuzz_virtio_mmio_parse": vmmio,
    "fuzz_mbedtls_config": tls,
    "fuzz_dns": dns,
    "fuzz_dns_msg": dns_msg,
    "fuzz_iso9660": iso,
    "fuzz_smbios": smbios,
    "fuzz_logfmt": logfmt,
    "fuzz_acme_json": acme_json,
}


KEPT = re.compile(r"[0-9a-f]{40}")


def main():
    total = 0
    for target, make in TARGETS.items():
        d = os.path.normpath(os.path.join(APP_CORPUS.get(target, ROOT), target))
        os.makedirs(d, exist_ok=True)
        # The script's own seeds are rewritten; inputs libFuzzer kept (named
        # by their SHA-1, committed from a merge run) stay.
        for old in os.listdir(d):
            if not KEPT.fullmatch(old):
                os.unlink(os.path.join(d, old))
        for name, data in make().items():
            assert not KEPT.fullmatch(name), name
            with open(os.path.join(d, name), "wb") as f:
                f.write(data)
            total += len(data)
    print(f"{sum(len(m()) for m in TARGETS.values())} seeds, {total} bytes, in {ROOT}")
    if total > 100 * 1024:
        sys.exit("corpus over 100 KiB")


if __name__ == "__main__":
    main()
