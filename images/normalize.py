#!/usr/bin/env python3
"""normalize.py vhd|vmdk FILE — make qemu-img's output reproducible, in place.

qemu-img stamps each new image with the time and a random id: a VHD footer
carries a creation time (seconds since 2000-01-01) and a random UUID, a VMDK
descriptor a random content id (CID). These are set here from
SOURCE_DATE_EPOCH and a fixed value, and the VHD footer checksum is redone.
Nothing else in the file changes; its size never does.
"""
import os
import re
import struct
import sys

VHD_EPOCH = 946684800  # 2000-01-01T00:00:00Z
# The same family of fixed ids as the GPT GUIDs in images/lib.sh.
VHD_UUID = bytes.fromhex("766972656f0040008000000000000003")
VMDK_CID = b"76697265"


def source_date_epoch():
    return int(os.environ.get("SOURCE_DATE_EPOCH", "0"))


def vhd_footer(f):
    f.seek(-512, os.SEEK_END)
    footer = bytearray(f.read(512))
    if footer[:8] != b"conectix":
        raise SystemExit(f"normalize.py: {f.name}: no VHD footer in its last 512 bytes")
    return footer


def normalize_vhd(path):
    """Footer fields (VHD spec): 24 time stamp, 64 checksum, 68 unique id."""
    with open(path, "r+b") as f:
        footer = vhd_footer(f)
        stamp = max(0, source_date_epoch() - VHD_EPOCH) & 0xFFFFFFFF
        struct.pack_into(">I", footer, 24, stamp)
        footer[68:84] = VHD_UUID
        struct.pack_into(">I", footer, 64, 0)
        struct.pack_into(">I", footer, 64, ~sum(footer) & 0xFFFFFFFF)
        f.seek(-512, os.SEEK_END)
        f.write(footer)
        # A dynamic VHD also keeps a copy of the footer at offset 0.
        f.seek(0)
        if f.read(8) == b"conectix":
            f.seek(0)
            f.write(footer)


def normalize_vmdk(path):
    """A monolithic sparse/streamOptimized VMDK embeds its text descriptor in
    a region the header points to (sectors descriptorOffset, descriptorSize).
    qemu writes the CID with %x, so its width varies: the line is replaced
    and the region re-padded with NULs."""
    with open(path, "r+b") as f:
        header = f.read(512)
        if header[:4] != b"KDMV":
            raise SystemExit(f"normalize.py: {path}: not a sparse VMDK")
        desc_off, desc_size = struct.unpack_from("<QQ", header, 28)
        if desc_off == 0 or desc_size == 0:
            raise SystemExit(f"normalize.py: {path}: no embedded descriptor")
        f.seek(desc_off * 512)
        region = f.read(desc_size * 512)
        text = region.rstrip(b"\0")
        text, n = re.subn(rb"(?m)^CID=[0-9a-fA-F]+$", b"CID=" + VMDK_CID, text)
        if n != 1 or len(text) > len(region):
            raise SystemExit(f"normalize.py: {path}: no single CID line in the descriptor")
        f.seek(desc_off * 512)
        f.write(text.ljust(len(region), b"\0"))


def main():
    if len(sys.argv) != 3 or sys.argv[1] not in ("vhd", "vmdk"):
        raise SystemExit("usage: normalize.py vhd|vmdk FILE")
    {"vhd": normalize_vhd, "vmdk": normalize_vmdk}[sys.argv[1]](sys.argv[2])


if __name__ == "__main__":
    main()
