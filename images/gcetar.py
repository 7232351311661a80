#!/usr/bin/env python3
"""gcetar.py DISK OUT — DISK as the member disk.raw of a sparse GNU tar in the
old GNU format ("tar --format=oldgnu -S", what Compute Engine documents).

GNU tar makes the same archive with
    tar --format=oldgnu --sparse --hole-detection=raw --owner=0 --group=0 \
        --numeric-owner --mode=0644 --mtime=@$SOURCE_DATE_EPOCH -cf OUT disk.raw
and tests/qemu/test_images.py checks that both agree byte for byte. The map
of data regions is taken from the content (runs of non-zero 512-byte blocks),
never from how the host file system allocated the file, so the archive is
reproducible anywhere. GNU tar's content scan read()s all of a 1 GiB disk in
512-byte blocks (about 10 s here); this reads only the allocated parts
(SEEK_DATA/SEEK_HOLE, where a hole reads as zeros anyway), in well under a
second. Output is the plain tar; the caller gzips it (gzip -n).
"""
import os
import sys

BLOCK = 512
RECORD = 20 * BLOCK  # GNU tar's default blocking factor
ZERO = bytes(BLOCK)
NAME = b"disk.raw"


def data_extents(fd, size):
    """(start, end) ranges that may hold non-zero bytes; everything else is a
    hole. Falls back to the whole file where SEEK_DATA is not supported."""
    pos = 0
    try:
        while pos < size:
            try:
                start = os.lseek(fd, pos, os.SEEK_DATA)
            except OSError as e:
                if e.errno == 6:  # ENXIO: only a hole remains
                    return
                raise
            end = os.lseek(fd, start, os.SEEK_HOLE)
            yield start, end
            pos = end
    except OSError:
        if pos == 0:
            yield 0, size


def sparse_map(fd, size):
    """GNU tar's raw scan: [offset, numbytes] for each run of non-zero
    blocks, plus a final [size, 0] when the file ends in zeros."""
    regions = []
    cur = None  # [offset, numbytes] being extended
    done = 0  # blocks before this offset have been looked at
    for start, end in data_extents(fd, size):
        # Whole blocks only: one split by an extent edge is read whole, once.
        pos = max(start - start % BLOCK, done)
        end = min(-(-end // BLOCK) * BLOCK, size)
        os.lseek(fd, pos, os.SEEK_SET)
        while pos < end:
            chunk = os.read(fd, min(1 << 20, end - pos))
            if not chunk:
                break
            for i in range(0, len(chunk), BLOCK):
                blk = chunk[i:i + BLOCK]
                off = pos + i
                if blk.count(0) == len(blk):
                    if cur:
                        regions.append(cur)
                        cur = None
                elif cur and cur[0] + cur[1] == off:
                    cur[1] += len(blk)
                else:
                    if cur:
                        regions.append(cur)
                    cur = [off, len(blk)]
            pos += len(chunk)
        done = pos
    if cur:
        regions.append(cur)
    if not regions or regions[-1][0] + regions[-1][1] < size:
        regions.append([size, 0])
    return regions


def octal(value, width):
    """GNU's numeric field: zero-padded octal, NUL-terminated."""
    s = b"%0*o" % (width - 1, value)
    if len(s) != width - 1:
        raise SystemExit(f"gcetar.py: {value} does not fit a {width}-byte tar field")
    return s + b"\0"


def put(buf, off, data):
    buf[off:off + len(data)] = data


def header(size, mtime, stored, regions):
    """The old GNU header of a sparse file ('S'): four map entries inside,
    then "isextended" and the real size."""
    h = bytearray(BLOCK)
    put(h, 0, NAME)
    put(h, 100, octal(0o644, 8))        # mode
    put(h, 108, octal(0, 8))            # uid
    put(h, 116, octal(0, 8))            # gid
    put(h, 124, octal(stored, 12))      # bytes stored in the archive
    put(h, 136, octal(mtime, 12))
    h[156] = ord("S")
    put(h, 257, b"ustar  \0")           # old GNU magic + version
    for i, (off, n) in enumerate(regions[:4]):
        put(h, 386 + 24 * i, octal(off, 12))
        put(h, 386 + 24 * i + 12, octal(n, 12))
    h[482] = 1 if len(regions) > 4 else 0
    put(h, 483, octal(size, 12))        # real size
    put(h, 148, b" " * 8)
    put(h, 148, b"%06o\0 " % sum(h))    # checksum, with itself as spaces
    return bytes(h)


def extensions(regions):
    """Further map entries, 21 per block, each block saying if one follows."""
    rest = regions[4:]
    out = []
    for i in range(0, len(rest), 21):
        b = bytearray(BLOCK)
        for j, (off, n) in enumerate(rest[i:i + 21]):
            put(b, 24 * j, octal(off, 12))
            put(b, 24 * j + 12, octal(n, 12))
        b[504] = 1 if i + 21 < len(rest) else 0
        out.append(bytes(b))
    return out


def main():
    if len(sys.argv) != 3:
        raise SystemExit("usage: gcetar.py DISK OUT")
    disk, out = sys.argv[1], sys.argv[2]
    mtime = int(os.environ.get("SOURCE_DATE_EPOCH", "0"))
    fd = os.open(disk, os.O_RDONLY)
    size = os.fstat(fd).st_size
    regions = sparse_map(fd, size)
    if len(regions) == 1 and regions[0] == [0, size]:
        raise SystemExit(f"gcetar.py: {disk} has no holes; this writer only does sparse members")
    stored = sum(n for _, n in regions)
    written = 0
    with open(out, "wb") as f:
        for blk in [header(size, mtime, stored, regions)] + extensions(regions):
            f.write(blk)
            written += BLOCK
        for off, n in regions:
            os.lseek(fd, off, os.SEEK_SET)
            left = n
            while left:
                data = os.read(fd, min(left, 1 << 20))
                if not data:
                    raise SystemExit(f"gcetar.py: {disk} shrank while being read")
                f.write(data)
                left -= len(data)
            pad = -n % BLOCK
            f.write(bytes(pad))
            written += n + pad
        f.write(ZERO * 2)  # end of archive
        written += 2 * BLOCK
        f.write(bytes(-written % RECORD))
    os.close(fd)


if __name__ == "__main__":
    main()
