"""Configuration without rebuilding: EFI/vireo/vireo.cfg written into a copy
of the built image with mtools (as an operator would, docs/appliance.md),
then booted. The file changes the address and port served; the command line
wins over the file; a bad line or an oversized file warns and boot goes on."""
import os
import re
import shutil
import subprocess
import urllib.request

from httpc import free_tcp_port
from vm import IMAGE, ROOT

READY = r"^vireo: ready ip=(\S+) http=(\d+)(?: https=\d+)?$"
ESP = "@@1M"  # images/lib.sh: the ESP starts at sector 2048 of every vireo disk
INDEX = os.path.join(ROOT, "runtime", "default-site", "index.html")


def image_with_cfg(tmp_path, text):
    """A copy of build/vireo.img whose ESP holds text as EFI/vireo/vireo.cfg."""
    img = tmp_path / "vireo.img"
    shutil.copyfile(IMAGE, img)
    cfg = tmp_path / "vireo.cfg"
    cfg.write_bytes(text if isinstance(text, bytes) else text.encode())
    env = dict(os.environ, MTOOLS_SKIP_CHECK="1")
    subprocess.run(["mmd", "-i", f"{img}{ESP}", "::/EFI/vireo"], check=True, env=env)
    subprocess.run(["mcopy", "-o", "-i", f"{img}{ESP}", str(cfg), "::/EFI/vireo/vireo.cfg"], check=True, env=env)
    return str(img)


def test_file_sets_address_and_port(boot, netns, tmp_path):
    img = image_with_cfg(tmp_path, f"# the appliance's address\nip = {netns.guest_ip}/24\n"
                                   f"gw={netns.host_ip}\r\nhttp=8080\n")
    vm = boot(image=img, wrap=netns.wrap, extra=netns.qemu_args())
    m = vm.wait_for(READY, timeout=120)
    assert m.group(1) == netns.guest_ip and m.group(2) == "8080", vm.text
    assert re.search(r"^config: EFI/vireo/vireo\.cfg: \d+ bytes$", vm.text, re.M), vm.text
    assert re.search(r"^config: http=8080 \(from vireo\.cfg\)$", vm.text, re.M), vm.text
    assert re.search(rf"^config: ip={re.escape(netns.guest_ip)}/24 \(from vireo\.cfg\)$", vm.text, re.M), vm.text
    # (the one warning a default, TLS, image gives without a data disk:
    # its generated key lives in memory only, docs/https.md)
    warnings = [line for line in vm.text[:m.start()].splitlines()
                if "warning:" in line and not line.startswith("tls: warning: no store")]
    assert not warnings, vm.text
    r = netns.run("curl", "-sS", "--max-time", "20", f"http://{netns.guest_ip}:8080/")
    with open(INDEX, "rb") as f:
        assert r.stdout == f.read(), r.stderr.decode()
    r = netns.run("curl", "-sS", "--max-time", "5", f"http://{netns.guest_ip}:80/")
    assert r.returncode != 0  # nothing on the default port any more


def test_cmdline_wins_and_bad_values_keep_what_was_there(boot, tmp_path):
    """file: http=8080, a bad verbose, an unknown key, http repeated;
    command line (fw_cfg): http=8081 wins, a bad http keeps the file's."""
    img = image_with_cfg(tmp_path, b"http=8079\nverbose=maybe\nbogus=1\nhttp=8080\nshutdown.grace=x\0y\n"
                                   b"panic=reboot")  # last line: no newline
    port = free_tcp_port()
    vm = boot(image=img, cmdline="http=8081 http=0",
              extra=["-netdev", f"user,id=n0,restrict=on,hostfwd=tcp:127.0.0.1:{port}-:8081",
                     "-device", "virtio-net-pci,netdev=n0,romfile="])
    m = vm.wait_for(READY, timeout=120)
    assert m.group(2) == "8081", vm.text
    text = vm.text
    assert re.search(r"^warning: vireo\.cfg line 2: verbose=maybe: expected .*, keeping default off$", text, re.M)
    assert re.search(r"^warning: vireo\.cfg line 3: unknown key 'bogus' ignored$", text, re.M)
    assert re.search(r"^config: vireo\.cfg line 4: http was set on an earlier line; the later value wins$", text, re.M)
    assert re.search(r"^warning: vireo\.cfg line 5: a NUL byte in the line, ignored$", text, re.M)
    assert re.search(r"^warning: cmdline: http=0: expected 1\.\.65535, keeping 8081 from cmdline \(fw_cfg\) "
                     r"\(default 80\)$", text, re.M), text
    assert re.search(r"^config: http=8081 \(from cmdline \(fw_cfg\)\)$", text, re.M)
    assert re.search(r"^config: panic=reboot \(from vireo\.cfg\)$", text, re.M)
    # the file is read before the command line is logged and applied
    assert text.index("config: EFI/vireo/vireo.cfg") < text.index("cmdline (fw_cfg): http=8081")
    with urllib.request.urlopen(f"http://127.0.0.1:{port}/healthz", timeout=20) as r:
        assert r.status == 200


def test_oversized_file_is_refused_and_boot_goes_on(boot, tmp_path):
    big = ("# padding\n" * 1700).encode() + b"http=8080\n"  # 17 KB, over the 16 KiB bound
    assert len(big) > 16384
    img = image_with_cfg(tmp_path, big)
    port = free_tcp_port()
    vm = boot(image=img, extra=["-netdev", f"user,id=n0,restrict=on,hostfwd=tcp:127.0.0.1:{port}-:80",
                                "-device", "virtio-net-pci,netdev=n0,romfile="])
    m = vm.wait_for(READY, timeout=120)
    assert m.group(2) == "80"
    assert re.search(r"^warning: vireo\.cfg: EFI/vireo/vireo\.cfg is larger than 16384 bytes, ignored", vm.text,
                     re.M), vm.text
    # The ESP loader's own line: name, size (one byte past the cap is how
    # boot/ finds a file too big), cap.
    assert re.search(r"^boot: EFI/vireo/vireo\.cfg refused: 16385 bytes or more, cap 16384$", vm.text, re.M), vm.text
    assert "(from vireo.cfg)" not in vm.text


def test_no_file_says_so(boot):
    vm = boot(extra=["-nic", "none"])
    vm.wait_for(r"^vireo: kernel ready$", timeout=120)
    assert re.search(r"^config: no EFI/vireo/vireo\.cfg$", vm.text, re.M), vm.text



def test_grub_image_reads_the_file_too(boot, tmp_path):
    """GRUB's chainloader hands vireo the ESP's device: vireo.cfg on
    vireo-grub.img (where EFI/vireo/ already holds grub.cfg) applies under
    the command line GRUB passes."""
    grub = os.path.join(ROOT, "build", "vireo-grub.img")
    if not os.path.exists(grub):
        raise AssertionError(f"{grub} missing: run `make images` (make test does)")
    img = tmp_path / "grub.img"
    shutil.copyfile(grub, img)
    cfg = tmp_path / "vireo.cfg"
    cfg.write_text("http=8080\npanic=halt\n")
    subprocess.run(["mcopy", "-o", "-i", f"{img}{ESP}", str(cfg), "::/EFI/vireo/vireo.cfg"], check=True,
                   env=dict(os.environ, MTOOLS_SKIP_CHECK="1"))
    port = free_tcp_port()
    vm = boot(image=str(img), extra=["-netdev", f"user,id=n0,restrict=on,hostfwd=tcp:127.0.0.1:{port}-:8080",
                                     "-device", "virtio-net-pci,netdev=n0,romfile="])
    m = vm.wait_for(READY, timeout=120)
    assert m.group(2) == "8080", vm.text
    assert re.search(r"^config: http=8080 \(from vireo\.cfg\)$", vm.text, re.M), vm.text
    # GRUB's LoadOptions carry panic=reboot, and the command line wins
    assert re.search(r"^config: panic=reboot \(from cmdline \(loadoptions\)\)$", vm.text, re.M), vm.text
    with urllib.request.urlopen(f"http://127.0.0.1:{port}/healthz", timeout=20) as r:
        assert r.status == 200
