"""Images and deployment: every artefact `make images` builds either boots
under OVMF (TCG) to the ready marker or is checked for what its importer
wants; Secure Boot accepts the signed image and refuses the unsigned one;
setcmdline.sh changes the command line in place; two builds of one commit
are byte-identical."""
import gzip
import os
import re
import shutil
import struct
import subprocess
import tarfile
import uuid
import zlib
from pathlib import Path

import pytest

from vm import ROOT

# What the console prints once the appliance serves; every artefact boots
# with a NIC on QEMU's user network (DHCP) to get there.
READY = r"^vireo: ready ip=\S+ http=80(?: https=443)?$"
NIC = ["-netdev", "user,id=n0,restrict=on", "-device", "virtio-net-pci,netdev=n0,romfile="]

BUILD = os.path.join(ROOT, "build")
MiB = 1 << 20
ESP_TYPE = uuid.UUID("C12A7328-F81F-11D2-BA4B-00A0C93EC93B")
SNAKEOIL_KEY = "/usr/share/ovmf/PkKek-1-snakeoil.key"
SNAKEOIL_CERT = "/usr/share/ovmf/PkKek-1-snakeoil.pem"
SNAKEOIL_PASS = "snakeoil"  # documented in Debian's ovmf README


def art(name):
    path = os.path.join(BUILD, name)
    if not os.path.exists(path):
        pytest.fail(f"{path} missing: run `make images` (make test does)")
    return path


def run(*args, **kw):
    return subprocess.run(args, check=True, capture_output=True, text=True, **kw).stdout


def clean_env(**extra):
    """The environment for a nested make: none of the outer make's flags."""
    env = {k: v for k, v in os.environ.items() if k not in ("MAKEFLAGS", "MFLAGS", "MAKELEVEL", "MAKEOVERRIDES")}
    env.update(extra)
    return env


# ---- reading disks ---------------------------------------------------------

def read_gpt(path, disk_size=None):
    """Checks a GPT (both headers' CRCs, the entries' CRC, the backup header
    in the disk's last sector) and returns the partitions as dicts."""
    size = disk_size if disk_size is not None else os.path.getsize(path)
    with open(path, "rb") as f:
        def header(lba):
            f.seek(lba * 512)
            raw = f.read(92)
            fields = struct.unpack("<8sIIIIQQQQ16sQIII", raw)
            sig, _, hsize, hcrc, _, my, alt, first, last, guid, ent_lba, n, esize, ecrc = fields
            assert sig == b"EFI PART", f"{path}: no GPT header at LBA {lba}"
            assert zlib.crc32(raw[:16] + bytes(4) + raw[20:hsize]) == hcrc, f"{path}: GPT header CRC at LBA {lba}"
            assert my == lba
            f.seek(ent_lba * 512)
            entries = f.read(n * esize)
            assert zlib.crc32(entries) == ecrc, f"{path}: GPT entry array CRC"
            return alt, uuid.UUID(bytes_le=guid), entries, esize

        alt, disk_guid, entries, esize = header(1)
        assert alt == size // 512 - 1, f"{path}: backup GPT at LBA {alt}, disk ends at {size // 512 - 1}"
        assert header(alt)[0] == 1
    parts = []
    for i in range(0, len(entries), esize):
        e = entries[i:i + esize]
        ptype = uuid.UUID(bytes_le=e[:16])
        if ptype.int == 0:
            continue
        first, last = struct.unpack_from("<QQ", e, 32)
        parts.append({"type": ptype, "guid": uuid.UUID(bytes_le=e[16:32]), "first": first, "last": last})
    return disk_guid, parts


def esp_of(path, disk_size=None):
    _, parts = read_gpt(path, disk_size)
    esps = [p for p in parts if p["type"] == ESP_TYPE]
    assert esps, f"{path}: no EFI system partition"
    return esps[0]


def grub_cmdline(path):
    """The command line the first GRUB entry passes, read from grub.cfg in
    the image's ESP (as built: make images GRUB_CMDLINE=...)."""
    off = esp_of(path)["first"] * 512
    cfg = run("mtype", "-i", f"{path}@@{off}", "::/EFI/vireo/grub.cfg", env=clean_env(MTOOLS_SKIP_CHECK="1"))
    m = re.search(r"chainloader /EFI/vireo/vireo\.efi(.*?) # vireo-cmdline$", cfg, re.M)
    assert m, cfg
    word = m.group(1).strip()
    return word[1:-1] if word.startswith("'") else word


def to_raw(path, fmt, tmp_path):
    out = os.path.join(tmp_path, os.path.basename(path) + ".raw")
    run("qemu-img", "convert", "-f", fmt, "-O", "raw", path, out)
    return out


def same_bytes(a, b):
    return subprocess.run(["cmp", "-s", a, b]).returncode == 0


# ---- sizes -----------------------------------------------------------------

def test_sizes_are_small_and_whole_mib():
    for name in ("vireo.img", "vireo-grub.img"):
        path = art(name)
        size = os.path.getsize(path)
        esp = esp_of(path)
        esp_bytes = (esp["last"] - esp["first"] + 1) * 512
        # 1 MiB in front (MBR, GPT, alignment), the ESP, 1 MiB for the backup GPT.
        assert esp["first"] == 2048 and size == esp_bytes + 2 * MiB, (name, size, esp)
        assert size % MiB == 0 and size <= 8 * MiB, (name, size)
    assert os.path.getsize(art("vireo.iso")) <= 4 * MiB
    assert os.path.getsize(art("vireo.qcow2")) <= 2 * MiB
    assert os.path.getsize(art("vireo-aws.vmdk")) <= 2 * MiB
    assert os.path.getsize(art("vireo-gce.tar.gz")) <= 2 * MiB
    # Padded where the cloud says so (Azure: at least 20 MiB), and no further.
    grub = os.path.getsize(art("vireo-grub.img"))
    assert os.path.getsize(art("vireo-azure.vhd")) == max(20 * MiB, grub) + 512


# ---- booting each artefact ---------------------------------------------------

# (artefact, qemu.sh options, carries GRUB)
BOOTS = [
    ("vireo.img", "", False),
    ("vireo-grub.img", "", True),
    ("vireo.iso", "--cdrom", True),
    ("vireo.iso", "", True),           # the hybrid ISO written to a disk
    ("vireo.qcow2", "", True),
    ("vireo-azure.vhd", "", True),     # qemu.sh: --format vpc from the name
    ("vireo-aws.vmdk", "", True),
]


# QEMU's fw_cfg command line, honoured whatever boots vireo (GRUB's load
# options apply first, fw_cfg's after them: docs/appliance.md).
FWCFG = "shutdown.grace=9"


def check_cmdlines(text, grub):
    assert re.search(rf"^cmdline \(fw_cfg\): {FWCFG}$", text, re.M), text[-3000:]
    assert re.search(r"^config: shutdown\.grace=9 \(from cmdline \(fw_cfg\)\)$", text, re.M), text[-3000:]
    if grub:
        # GRUB's own messages reach COM1, and its command line reaches vireo.
        want = grub_cmdline(art("vireo-grub.img"))
        assert "grub: starting /EFI/vireo/vireo.efi" in text
        assert re.search(rf"^cmdline \(loadoptions\): {re.escape(want)}$", text, re.M), text[-3000:]
        for word in want.split():  # each key the load options set is theirs (fw_cfg's is another)
            assert re.search(rf"^config: {re.escape(word)} \(from cmdline \(loadoptions\)\)$", text, re.M), \
                text[-3000:]
    else:
        # The firmware's own boot entry passes no text: nothing, not garbage.
        assert "cmdline (loadoptions)" not in text and "cmdline (none)" not in text, text[-3000:]


@pytest.mark.parametrize("name,opts,grub", BOOTS, ids=[f"{n}{' ' + o if o else ''}" for n, o, _ in BOOTS])
def test_artefact_boots(boot, monkeypatch, name, opts, grub):
    path = art(name)
    monkeypatch.setenv("VIREO_QEMU_SH_OPTS", opts)
    vm = boot(image=path, extra=NIC, cmdline=FWCFG)
    vm.wait_for(READY)
    check_cmdlines(vm.text, grub)


def test_disk_formats_hold_the_grub_disk(tmp_path):
    """qcow2, VMDK and VHD carry exactly vireo-grub.img (the VHD padded to
    Azure's 20 MiB minimum, with the backup GPT moved to the new end)."""
    grub = art("vireo-grub.img")
    info = run("qemu-img", "info", "--output=json", "-f", "qcow2", art("vireo.qcow2"))
    assert '"format": "qcow2"' in info
    run("qemu-img", "check", "-f", "qcow2", art("vireo.qcow2"))
    assert same_bytes(to_raw(art("vireo.qcow2"), "qcow2", tmp_path), grub)

    info = run("qemu-img", "info", "--output=json", "-f", "vmdk", art("vireo-aws.vmdk"))
    assert re.search(r'"create-type": "streamOptimized"', info), info
    run("qemu-img", "check", "-f", "vmdk", art("vireo-aws.vmdk"))
    assert same_bytes(to_raw(art("vireo-aws.vmdk"), "vmdk", tmp_path), grub)

    vhd = art("vireo-azure.vhd")
    raw = to_raw(vhd, "vpc", tmp_path)
    with open(raw, "rb") as a, open(grub, "rb") as b:
        esp = esp_of(grub)
        lo, hi = esp["first"] * 512, (esp["last"] + 1) * 512
        assert a.read()[lo:hi] == b.read()[lo:hi]


def test_vhd_is_fixed_and_mib_aligned():
    """Azure: a fixed VHD whose virtual size is a whole number of MiB, at
    least 20 MiB; the footer (last 512 bytes) checks out."""
    path = art("vireo-azure.vhd")
    size = os.path.getsize(path)
    with open(path, "rb") as f:
        f.seek(-512, os.SEEK_END)
        footer = f.read(512)
    assert footer[:8] == b"conectix"
    orig, cur = struct.unpack_from(">QQ", footer, 40)
    disk_type, checksum = struct.unpack_from(">II", footer, 60)
    assert disk_type == 2, "not a fixed VHD"
    assert cur == orig == size - 512
    assert cur % MiB == 0 and cur >= 20 * MiB
    assert checksum == ~sum(footer[:64] + bytes(4) + footer[68:]) & 0xFFFFFFFF
    info = run("qemu-img", "info", "--output=json", "-f", "vpc", path)
    assert re.search(rf'"virtual-size": {cur}\b', info), info
    # The disk inside: a GPT whose backup header sits in the last sector
    # before the footer, with the ESP.
    esp_of(path, disk_size=size - 512)


def test_iso_is_hybrid_with_the_grub_esp():
    iso = art("vireo.iso")
    report = run("xorriso", "-indev", iso, "-report_el_torito", "plain")
    m = re.search(r"^El Torito boot img :\s+1\s+UEFI\s+y\s+none\s+\S+\s+\S+\s+(\d+)\s+(\d+)", report, re.M)
    assert m, report
    sectors, lba = int(m.group(1)), int(m.group(2))
    esp = esp_of(iso)
    # El Torito's EFI image and the GPT's ESP are the same bytes.
    assert lba * 2048 == esp["first"] * 512
    assert sectors * 512 == (esp["last"] - esp["first"] + 1) * 512
    with open(iso, "rb") as f:
        f.seek(16 * 2048)
        pvd = f.read(2048)
    assert pvd[1:6] == b"CD001" and pvd[40:72].rstrip() == b"VIREO"


# ---- GCE ------------------------------------------------------------------------

def test_gce_tarball_is_what_gce_imports_and_boots(boot, tmp_path):
    """One member, disk.raw, old GNU format, sparse, a whole number of GiB;
    gzip without a name or time; the disk inside boots."""
    path = art("vireo-gce.tar.gz")
    with open(path, "rb") as f:
        gz = f.read(10)
    assert gz[:3] == b"\x1f\x8b\x08" and gz[3] & 0x08 == 0, "gzip stores a file name"
    assert gz[4:8] == bytes(4), "gzip stores a time stamp"
    with tarfile.open(path, "r:gz") as t:
        members = t.getmembers()
        assert [m.name for m in members] == ["disk.raw"]
        m = members[0]
        assert m.type == tarfile.GNUTYPE_SPARSE and m.issparse()
        assert m.size % (1 << 30) == 0 and m.size > 0
        assert (m.uid, m.gid, m.mode) == (0, 0, 0o644)
    with gzip.open(path, "rb") as f:
        block = f.read(512)
    assert block[257:265] == b"ustar  \0", "not the old GNU tar format"

    run("tar", "-xzSf", path, "-C", str(tmp_path))
    raw = os.path.join(tmp_path, "disk.raw")
    assert os.path.getsize(raw) == 1 << 30
    assert os.stat(raw).st_blocks * 512 < 8 * MiB, "disk.raw did not come out sparse"
    esp_of(raw)
    vm = boot(image=raw, extra=NIC, cmdline=FWCFG)
    vm.wait_for(READY)
    check_cmdlines(vm.text, True)


def test_gcetar_writes_what_gnu_tar_writes(tmp_path):
    """images/gcetar.py against GNU tar --hole-detection=raw on disks with
    many runs (several extension headers), ending in data and in a hole."""
    disk = tmp_path / "disk.raw"
    for tail_hole in (False, True):
        with open(disk, "wb") as f:
            f.truncate(24 * MiB)
            for i in range(70):  # scattered runs of 1..3 blocks
                f.seek(i * 300 * 1024 + (i % 7) * 512)
                f.write(bytes([i + 1]) * 512 * (1 + i % 3))
            if not tail_hole:
                f.seek(24 * MiB - 1024)
                f.write(b"\xee" * 1024)
        mine, ref = tmp_path / "mine.tar", tmp_path / "ref.tar"
        env = clean_env(SOURCE_DATE_EPOCH="1234567890")
        run("python3", os.path.join(ROOT, "images", "gcetar.py"), str(disk), str(mine), env=env)
        run("tar", "--format=oldgnu", "--sparse", "--hole-detection=raw", "--owner=0", "--group=0",
            "--numeric-owner", "--mode=0644", "--mtime=@1234567890", "-C", str(tmp_path),
            "-cf", str(ref), "disk.raw")
        assert same_bytes(mine, ref), f"gcetar.py and GNU tar differ (tail hole: {tail_hole})"


# ---- command line --------------------------------------------------------------

def test_setcmdline_rewrites_grub_image_and_refuses_plain(boot, tmp_path):
    img = tmp_path / "vireo-grub.img"
    shutil.copyfile(art("vireo-grub.img"), img)
    new = "verbose=1 panic=halt"
    out = run(os.path.join(ROOT, "images", "setcmdline.sh"), str(img), new)
    assert "vireo.efi 'verbose=1 panic=halt'" in out
    assert grub_cmdline(str(img)) == new
    vm = boot(image=str(img), extra=NIC)
    vm.wait_for(READY)
    assert re.search(rf"^cmdline \(loadoptions\): {new}$", vm.text, re.M), vm.text[-3000:]
    assert re.search(r"^mem: ", vm.text, re.M)

    # The plain image has nowhere to keep one: say so, change nothing.
    plain = tmp_path / "vireo.img"
    shutil.copyfile(art("vireo.img"), plain)
    r = subprocess.run([os.path.join(ROOT, "images", "setcmdline.sh"), str(plain), "panic=reboot"],
                       capture_output=True, text=True)
    assert r.returncode == 3
    assert "vireo-grub.img" in r.stderr and "fw_cfg" in r.stderr, r.stderr
    assert same_bytes(str(plain), art("vireo.img"))


def test_efi_boot_entry_passes_cmdline_to_plain_image(boot, monkeypatch, tmp_path):
    """A UEFI boot entry with optional data (what efibootmgr --unicode makes)
    gives the plain image a command line: the firmware passes it as
    LoadOptions. The entry is written into a copy of OVMF's variables."""
    vars_fd = tmp_path / "vars.fd"
    want = "panic=reboot verbose=0"
    run("python3", os.path.join(ROOT, "images", "bootentry.py"), "/usr/share/OVMF/OVMF_VARS_4M.fd",
        str(vars_fd), art("vireo.img"), want)
    monkeypatch.setenv("VIREO_QEMU_SH_OPTS", f"--vars {vars_fd}")
    vm = boot(image=art("vireo.img"), extra=NIC)
    vm.wait_for(READY)
    assert 'starting Boot0000 "vireo (boot entry)"' in vm.text, vm.text[-3000:]
    assert re.search(rf"^cmdline \(loadoptions\): {want}$", vm.text, re.M), vm.text[-3000:]


# ---- Secure Boot ---------------------------------------------------------------

def test_secure_boot_runs_signed_and_refuses_unsigned(boot, monkeypatch):
    """OVMF with Secure Boot enforced and Debian's snakeoil key in db:
    `make sign` output boots, the unsigned image is refused."""
    r = subprocess.run(["make", "-s", "sign", f"KEY={SNAKEOIL_KEY}", f"CERT={SNAKEOIL_CERT}"],
                       cwd=ROOT, capture_output=True, text=True, env=clean_env(KEY_PASS=SNAKEOIL_PASS))
    assert r.returncode == 0, r.stdout + r.stderr
    signed = art("vireo-signed.img")
    run("sbverify", "--cert", SNAKEOIL_CERT, art("signed/vireo.efi"))
    assert subprocess.run(["sbverify", "--cert", SNAKEOIL_CERT, art("vireo.efi")],
                          capture_output=True).returncode != 0

    monkeypatch.setenv("VIREO_QEMU_SH_OPTS", "--secboot")
    good = boot(image=signed, extra=NIC)
    bad = boot(image=art("vireo.img"), extra=NIC)
    good.wait_for(READY)
    bad.wait_for(r"failed to load Boot\d+ .*: Access Denied")
    bad.wait_for(r"No bootable option or device was found")
    assert not re.search(r"^vireo \d", bad.text, re.M), bad.text[-3000:]


# ---- reproducibility -------------------------------------------------------------

REPRO_FILES = ["vireo.efi", "images/grubx64.efi", "vireo.img", "vireo-grub.img", "vireo.iso",
               "vireo.qcow2", "vireo-gce.tar.gz", "vireo-azure.vhd", "vireo-aws.vmdk"]


def tree_is_head():
    """Whether this tree's tracked files are HEAD's (images/ aside, which the
    clones take from this tree anyway)."""
    r = subprocess.run(["git", "status", "--porcelain", "--untracked-files=no", "--", ".", ":!images"],
                       cwd=ROOT, capture_output=True, text=True)
    return r.returncode == 0 and not r.stdout.strip()


def test_two_builds_are_byte_identical(tmp_path):
    """Two builds of HEAD in different directories, with different time zones
    and umasks, some seconds apart: every output is the same. Where this
    tree is HEAD (as in CI) its own build is the first (brought up to date
    with `make images` under UTC); otherwise HEAD is cloned twice (this
    tree's images/ laid over each, so uncommitted builder changes are what
    is tested). The first way saves one whole build (about a minute)."""
    trees = []
    builds = [("UTC", 0o022), ("Pacific/Chatham", 0o002)]
    if tree_is_head():
        r = subprocess.run(["make", "-s", "-j2", "images"], cwd=ROOT, capture_output=True, text=True,
                           env=clean_env(TZ="UTC"))
        assert r.returncode == 0, r.stdout[-3000:] + r.stderr[-3000:]
        trees.append(Path(ROOT))
        builds = builds[1:]
    for n, (tz, mask) in enumerate(builds):
        tree = tmp_path / f"tree{n}"
        run("git", "clone", "-q", "--no-hardlinks", ROOT, str(tree))
        shutil.rmtree(tree / "images")
        shutil.copytree(os.path.join(ROOT, "images"), tree / "images")
        makefiles = []
        if "images/*.mk" not in (tree / "Makefile").read_text():
            makefiles = ["-f", "Makefile", "-f", "images/images.mk"]
        r = subprocess.run(["make", "-s", "-j2", *makefiles, "images"], cwd=tree, capture_output=True, text=True,
                           env=clean_env(TZ=tz), preexec_fn=lambda m=mask: os.umask(m))
        assert r.returncode == 0, r.stdout[-3000:] + r.stderr[-3000:]
        trees.append(tree)
    differ = [f for f in REPRO_FILES if not same_bytes(trees[0] / "build" / f, trees[1] / "build" / f)]
    assert not differ, f"not reproducible: {differ}"
