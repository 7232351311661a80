"""Per-instance configuration the way virtualization stacks give it
(docs/appliance.md, "Where the configuration comes from"): a NoCloud seed
made by cloud-localds, an OpenStack config drive as nova makes it, a FAT
seed, SMBIOS type 11 OEM strings (systemd's credential convention) and
QEMU's fw_cfg, on the GRUB-booted qcow2 and the plain disk. Each boot
checks what the console says it read from where, what it ignored and why,
and which source each key's final value came from."""
import base64
import os
import re
import shutil
import subprocess

import pytest

from httpc import free_tcp_port
from vm import ROOT

BUILD = os.path.join(ROOT, "build")
READY = r"^vireo: ready ip=\S+ http=(\d+)"
KERNEL_READY = r"^vireo: kernel ready$"


def origin(text, key, value, source):
    assert re.search(rf"^config: {re.escape(key)}={re.escape(value)} \(from {re.escape(source)}\)$", text, re.M), \
        f"{key}={value} from {source}:\n" + "\n".join(line for line in text.splitlines()
                                                    if line.startswith(("config:", "seed:", "smbios:", "cmdline",
                                                                        "warning:")))


def need(tool):
    if not shutil.which(tool):
        pytest.fail(f"{tool} missing: tools/deps.sh test installs it")


def disk(path, cdrom=False, bus=None):
    """QEMU options attaching a seed read-only: a virtio disk, or a CD on
    q35's AHCI (ide.0 is --cdrom's; a seed CD takes ide.1)."""
    dev = f"ide-cd,drive=seed,bus={bus or 'ide.1'}" if cdrom else "virtio-blk-pci,drive=seed"
    return ["-drive", f"if=none,id=seed,format=raw,media={'cdrom' if cdrom else 'disk'},readonly=on,file={path}",
            "-device", dev]


def test_qcow2_cloud_localds_smbios_and_fw_cfg(boot, tmp_path):
    """The GRUB-booted qcow2 with every per-instance source at once: GRUB's
    load options (panic=reboot), a cidata ISO from cloud-localds (with a
    network-config it says it ignores), two SMBIOS credentials (text and
    Base64) among strings that are not vireo's, and fw_cfg: each key ends
    with the last source that set it, and the port served is fw_cfg's."""
    need("cloud-localds")
    (tmp_path / "user-data").write_text("# vireo keys\nhttp=8081\nshutdown.grace=7\necho=tcp\ncoalesce=8,50\n")
    (tmp_path / "meta-data").write_text("instance-id: iid-seed01\nlocal-hostname: vireo-1\n")
    (tmp_path / "network-config").write_text("version: 2\nethernets: {}\n")
    seed = tmp_path / "seed.iso"
    subprocess.run(["cloud-localds", "--network-config", str(tmp_path / "network-config"), str(seed),
                    str(tmp_path / "user-data"), str(tmp_path / "meta-data")], check=True)
    b64 = base64.b64encode(b"coalesce=off").decode()
    oem = ["io.systemd.credential:vireo.cmdline=http=8082 shutdown.grace=8",
           f"io.systemd.credential.binary:vireo.cmdline={b64}",
           "io.systemd.credential:vireo.hostname=v1",
           "io.systemd.credential:other.thing=1", "an OEM string"]
    qcow2 = os.path.join(BUILD, "vireo.qcow2")
    if not os.path.exists(qcow2):
        pytest.fail(f"{qcow2} missing: run `make images` (make test does)")
    port = free_tcp_port()
    vm = boot(image=qcow2, cmdline="http=8083", extra=[
        *disk(seed),
        "-smbios", "type=11," + ",".join("value=" + s.replace(",", ",,") for s in oem),
        "-netdev", f"user,id=n0,restrict=on,hostfwd=tcp:127.0.0.1:{port}-:8083",
        "-device", "virtio-net-pci,netdev=n0,romfile="])
    ready = vm.wait_for(READY, timeout=120)
    assert ready.group(1) == "8083", ready.group(0)
    text = vm.text
    sizes = [os.path.getsize(tmp_path / f) for f in ("user-data", "meta-data")]
    assert re.search(rf'^seed: cidata \(NoCloud\) on ISO 9660 "cidata": user data {sizes[0]} bytes, '
                     rf'meta data {sizes[1]} bytes \(instance iid-seed01\)$', text, re.M), text[-4000:]
    assert re.search(r"^seed: network-config ignored: vireo takes ip=, gw= and dns= from the user data", text, re.M)
    assert re.search(r"^smbios: io\.systemd\.credential:vireo\.cmdline \(2\): http=8082 shutdown\.grace=8 "
                     r"coalesce=off$", text, re.M), text[-4000:]
    assert re.search(r"^warning: smbios: credential vireo\.hostname ignored: vireo reads vireo\.cmdline only$",
                     text, re.M)
    assert re.search(r"^smbios: 2 OEM string\(s\) ignored \(not io\.systemd\.credential:vireo\.cmdline\)$", text,
                     re.M)
    assert re.search(r"^config: sources in order, later wins key by key: cmdline \(loadoptions\), "
                     r"seed \(cidata\), smbios, cmdline \(fw_cfg\)$", text, re.M), text[-4000:]
    origin(text, "panic", "reboot", "cmdline (loadoptions)")
    origin(text, "echo", "tcp", "seed (cidata)")
    origin(text, "shutdown.grace", "8", "smbios")
    origin(text, "coalesce", "off", "smbios")
    origin(text, "http", "8083", "cmdline (fw_cfg)")
    assert text.index("cmdline (loadoptions)") < text.index("seed: cidata") < text.index("smbios: io.") < \
        text.index("cmdline (fw_cfg)")


def nova_config_drive(tmp_path, user_data, meta_data):
    root = tmp_path / "cd"
    latest = root / "openstack" / "latest"
    latest.mkdir(parents=True)
    (latest / "user_data").write_bytes(user_data)
    (latest / "meta_data.json").write_text(meta_data)
    (latest / "network_data.json").write_text('{"links": [], "networks": [], "services": []}')
    (root / "ec2" / "latest").mkdir(parents=True)
    (root / "ec2" / "latest" / "meta-data.json").write_text("{}")
    iso = tmp_path / "config-2.iso"
    # nova's own genisoimage line (nova/virt/configdrive.py)
    subprocess.run(["genisoimage", "-o", str(iso), "-ldots", "-allow-lowercase", "-allow-multidot", "-l",
                    "-publisher", "OpenStack Compute", "-quiet", "-J", "-r", "-V", "config-2", str(root)],
                   check=True, capture_output=True)
    return iso


def fat_seed(tmp_path, label, files):
    img = tmp_path / f"{label}.img"
    subprocess.run(["mkfs.fat", "-C", "-n", label.upper(), str(img), "2048"], check=True, capture_output=True)
    env = dict(os.environ, MTOOLS_SKIP_CHECK="1")
    for name, data in files.items():
        src = tmp_path / name.replace("/", "_")
        src.write_bytes(data)
        parts = name.split("/")
        for i in range(1, len(parts)):
            subprocess.run(["mmd", "-i", str(img), "::/" + "/".join(parts[:i])], env=env, capture_output=True)
        subprocess.run(["mcopy", "-i", str(img), str(src), "::/" + name], check=True, env=env)
    return img


def test_config_drive_cdrom_and_a_second_seed(boot, tmp_path):
    """nova's config drive on a CD-ROM is read (its network data named and
    ignored, its meta data over BOOT_SEED_META_MAX refused with its size);
    a FAT cidata disk found after it is counted and ignored, one seed per
    boot."""
    need("genisoimage")
    meta = '{"uuid": "83679162-1378-4288-a2d4-70e13ec132aa", "keys": "%s"}' % ("k" * 17000)
    user = b"shutdown.grace=5\r\necho=udp\r\n"
    iso = nova_config_drive(tmp_path, user, meta)
    fat = fat_seed(tmp_path, "cidata", {"user-data": b"shutdown.grace=6\n"})
    vm = boot(extra=[*disk(iso, cdrom=True), "-drive", f"if=none,id=fat,format=raw,readonly=on,file={fat}",
                     "-device", "virtio-blk-pci,drive=fat"])
    vm.wait_for(KERNEL_READY)
    text = vm.text
    assert re.search(rf"^warning: seed: openstack/latest/meta_data\.json is larger than 16384 bytes "
                     rf"\({len(meta)}\), ignored$", text, re.M), text[-4000:]
    assert re.search(rf'^seed: config-2 \(OpenStack config drive\) on ISO 9660 "config-2": user data {len(user)} '
                     r'bytes, meta data none, 0 bytes$', text, re.M), text[-4000:]
    assert re.search(r"^seed: 1 more seed\(s\) ignored: one is read per boot", text, re.M), text[-4000:]
    assert re.search(r"^seed: openstack/latest/network_data\.json ignored", text, re.M)
    origin(text, "shutdown.grace", "5", "seed (config-2)")
    origin(text, "echo", "udp", "seed (config-2)")


def test_fat_config_drive(boot, tmp_path):
    """A config drive on FAT (mkfs.fat -n CONFIG-2, files under
    openstack/latest/ as on the ISO) is read through the firmware's file
    system; its vendor data is named and ignored."""
    fat = fat_seed(tmp_path, "config-2", {
        "openstack/latest/user_data": b"shutdown.grace=4\n",
        "openstack/latest/meta_data.json": b'{"uuid": "fat-1"}',
        "openstack/latest/vendor_data.json": b"{}"})
    vm = boot(extra=["-drive", f"if=none,id=fat,format=raw,readonly=on,file={fat}", "-device",
                     "virtio-blk-pci,drive=fat"])
    vm.wait_for(KERNEL_READY)
    text = vm.text
    assert re.search(r'^seed: config-2 \(OpenStack config drive\) on FAT "CONFIG-2": user data 17 bytes, '
                     r'meta data 17 bytes \(instance fat-1\)$', text, re.M), text[-4000:]
    assert re.search(r"^seed: openstack/latest/vendor_data\.json ignored: vireo reads the user data only$", text, re.M)
    origin(text, "shutdown.grace", "4", "seed (config-2)")
