#!/usr/bin/env python3
"""bootentry.py VARS_IN VARS_OUT DISK "CMDLINE" [PCI_SLOT] — an OVMF variable
store with one UEFI boot entry, Boot0000, that starts EFI/BOOT/BOOTX64.EFI on
DISK's EFI system partition with CMDLINE as its optional data.

This is what `efibootmgr --create --disk ... --loader '\\EFI\\BOOT\\BOOTX64.EFI'
--unicode 'CMDLINE'` leaves in a real machine's NVRAM, done offline for QEMU:
the firmware hands the optional data to vireo as its LoadOptions, so the plain
image (no GRUB) gets a command line without fw_cfg. Boot it with
    images/qemu.sh --image DISK --vars VARS_OUT
VARS_IN is an empty store as Debian's ovmf ships it (OVMF_VARS_4M.fd). The
entry's device path is PciRoot(0)/Pci(PCI_SLOT,0)/HD(...)/File: qemu.sh puts
its virtio disk in slot 1 (the default) on q35. OVMF then orders it first,
since it lies on the disk QEMU's boot order names.
"""
import struct
import sys
import uuid

# VARIABLE_STORE_HEADER (MdeModulePkg) follows the firmware volume header.
AUTH_VAR_STORE = uuid.UUID("aaf32c78-947b-439a-a180-2e144ec37792")
GLOBAL_VARIABLE = uuid.UUID("8be4df61-93ca-11d2-aa0d-00e098032b8c")
ESP_TYPE = uuid.UUID("c12a7328-f81f-11d2-ba4b-00a0c93ec93b")
VAR_ADDED = 0x3F
NV_BS_RT = 0x7  # non-volatile, boot service and runtime access
LOAD_OPTION_ACTIVE = 0x1
LOADER = "\\EFI\\BOOT\\BOOTX64.EFI"


def ucs2(s):
    return s.encode("utf-16-le") + b"\0\0"


def node(dtype, subtype, body):
    return struct.pack("<BBH", dtype, subtype, 4 + len(body)) + body


def esp_of(disk):
    """(partition number, first LBA, sectors, partition GUID) of the ESP."""
    with open(disk, "rb") as f:
        f.seek(512)
        hdr = f.read(92)
        if hdr[:8] != b"EFI PART":
            raise SystemExit(f"bootentry.py: {disk}: no GPT")
        ent_lba, n, esize = struct.unpack_from("<QII", hdr, 72)
        f.seek(ent_lba * 512)
        entries = f.read(n * esize)
    for i in range(n):
        e = entries[i * esize:(i + 1) * esize]
        if uuid.UUID(bytes_le=e[:16]) == ESP_TYPE:
            first, last = struct.unpack_from("<QQ", e, 32)
            return i + 1, first, last - first + 1, uuid.UUID(bytes_le=e[16:32])
    raise SystemExit(f"bootentry.py: {disk}: no EFI system partition")


def load_option(disk, cmdline, slot):
    """EFI_LOAD_OPTION: attributes, device path length, description, device
    path, optional data (UCS-2 text without a terminator, as efibootmgr -u)."""
    num, first, count, guid = esp_of(disk)
    path = (node(2, 1, struct.pack("<II", 0x0A0341D0, 0))          # PciRoot(0)
            + node(1, 1, struct.pack("<BB", 0, slot))                # Pci(slot,0)
            + node(4, 1, struct.pack("<IQQ16sBB", num, first, count,  # HD(GPT)
                                     guid.bytes_le, 2, 2))
            + node(4, 4, ucs2(LOADER))                               # File
            + node(0x7F, 0xFF, b""))                                 # End
    return (struct.pack("<IH", LOAD_OPTION_ACTIVE, len(path)) + ucs2("vireo (boot entry)")
            + path + cmdline.encode("utf-16-le"))


def variable(name, data):
    """AUTHENTICATED_VARIABLE_HEADER (no time stamp, no key) + name + data."""
    n = ucs2(name)
    hdr = struct.pack("<HBBIQ16sIII16s", 0x55AA, VAR_ADDED, 0, NV_BS_RT, 0, bytes(16), 0,
                      len(n), len(data), GLOBAL_VARIABLE.bytes_le)
    v = hdr + n + data
    return v + b"\xff" * (-len(v) % 4)  # the next header is 4-byte aligned


def main():
    if len(sys.argv) not in (5, 6):
        raise SystemExit(__doc__.split("\n\n")[0])
    vars_in, vars_out, disk, cmdline = sys.argv[1:5]
    slot = int(sys.argv[5]) if len(sys.argv) == 6 else 1
    store = bytearray(open(vars_in, "rb").read())
    fv_hdr_len = struct.unpack_from("<H", store, 0x30)[0]
    if store[0x28:0x2C] != b"_FVH" or uuid.UUID(bytes_le=bytes(store[fv_hdr_len:fv_hdr_len + 16])) != AUTH_VAR_STORE:
        raise SystemExit(f"bootentry.py: {vars_in}: not an OVMF authenticated variable store")
    start = fv_hdr_len + 28  # past the store header: GUID, size, format, state, reserved
    store_end = fv_hdr_len + struct.unpack_from("<I", store, fv_hdr_len + 16)[0]
    if any(b != 0xFF for b in store[start:start + 64]):
        raise SystemExit(f"bootentry.py: {vars_in}: the store is not empty; start from OVMF_VARS_4M.fd")
    blob = (variable("Boot0000", load_option(disk, cmdline, slot))
            + variable("BootOrder", struct.pack("<H", 0)))
    if start + len(blob) > store_end:
        raise SystemExit("bootentry.py: the entry does not fit the store")
    store[start:start + len(blob)] = blob
    open(vars_out, "wb").write(store)


if __name__ == "__main__":
    main()
