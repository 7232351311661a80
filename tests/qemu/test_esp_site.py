"""The site from the ESP: files copied with mtools into EFI/vireo/site/ of a
copy of the image are served instead of the baked-in site, byte for byte;
over the file-count or byte bound, or with a name that would need escaping,
the log says why and the baked site stays."""
import os
import re
import shutil
import subprocess
import urllib.error
import urllib.request

from httpc import free_tcp_port
from vm import IMAGE, ROOT

READY = r"^vireo: ready ip=(\S+) http=(\d+)$"
ESP = "@@1M"  # images/lib.sh: the ESP starts at sector 2048 of every vireo disk
BAKED_INDEX = os.path.join(ROOT, "runtime", "default-site", "index.html")
ENV = dict(os.environ, MTOOLS_SKIP_CHECK="1")


def put_site(img, site_dir):
    subprocess.run(["mmd", "-i", f"{img}{ESP}", "::/EFI/vireo"], check=True, env=ENV)
    subprocess.run(["mcopy", "-s", "-i", f"{img}{ESP}", str(site_dir), "::/EFI/vireo/"], check=True, env=ENV)


def copy_image(tmp_path):
    img = tmp_path / "vireo.img"
    shutil.copyfile(IMAGE, img)
    return str(img)


def boot_app(boot, img):
    port = free_tcp_port()
    vm = boot(image=img, extra=["-netdev", f"user,id=n0,restrict=on,hostfwd=tcp:127.0.0.1:{port}-:80",
                                "-device", "virtio-net-pci,netdev=n0,romfile="])
    vm.wait_for(READY, timeout=120)
    return vm, port


def get(port, path, headers=None):
    req = urllib.request.Request(f"http://127.0.0.1:{port}{path}", headers=headers or {})
    try:
        with urllib.request.urlopen(req, timeout=20) as r:
            return r.status, dict(r.headers), r.read()
    except urllib.error.HTTPError as e:
        return e.code, dict(e.headers), e.read()


def test_esp_site_served_byte_identical(boot, tmp_path):
    site = tmp_path / "site"
    (site / "css").mkdir(parents=True)
    (site / "deep" / "er").mkdir(parents=True)
    (site / ".git").mkdir()
    files = {
        "index.html": b"<!DOCTYPE html><h1>from the ESP</h1>\n",
        "css/site.css": b"body { color: #333 }\n",
        "deep/er/data.bin": os.urandom(300_000),
        "empty.txt": b"",
        ".git/config": b"not served\n",
    }
    for name, data in files.items():
        (site / name).write_bytes(data)
    img = copy_image(tmp_path)
    put_site(img, site)
    vm, port = boot_app(boot, img)
    served = sum(len(d) for n, d in files.items() if not n.startswith("."))
    assert re.search(rf"^site: 4 files, {served} bytes from EFI/vireo/site \(instead of the built-in site\)$",
                     vm.text, re.M), vm.text
    for name, data in files.items():
        if name.startswith("."):
            continue
        status, headers, body = get(port, "/" + name)
        assert status == 200 and body == data, name
    status, headers, body = get(port, "/")
    assert body == files["index.html"]
    assert headers["Content-Type"] == "text/html; charset=utf-8"
    assert get(port, "/css/site.css")[1]["Content-Type"] == "text/css; charset=utf-8"
    etag = headers["ETag"]
    assert re.fullmatch(r'"[0-9a-f]{16}"', etag)
    assert get(port, "/", {"If-None-Match": etag})[0] == 304
    assert get(port, "/.git/config")[0] == 404  # dot names are skipped, as mksite.py skips them
    assert get(port, "/64k.bin")[0] == 404  # the baked site is replaced, not merged
    assert get(port, "/healthz")[0] == 200


def _baked_site_stays(vm, port, why):
    assert re.search(rf"^warning: site: EFI/vireo/site {why}.*; serving the built-in site$", vm.text, re.M), vm.text
    with open(BAKED_INDEX, "rb") as f:
        assert get(port, "/")[2] == f.read()
    assert "from EFI/vireo/site" not in vm.text


def test_too_many_files_keep_the_baked_site(boot, tmp_path):
    site = tmp_path / "site"
    site.mkdir()
    for i in range(257):  # one over BOOT_SITE_MAX_FILES
        (site / f"f{i:03}.txt").write_bytes(b"%d\n" % i)
    img = copy_image(tmp_path)
    put_site(img, site)
    vm, port = boot_app(boot, img)
    _baked_site_stays(vm, port, r"has more than 256 files \(at /f\d{3}\.txt")


def test_name_needing_escapes_keeps_the_baked_site(boot, tmp_path):
    site = tmp_path / "site"
    site.mkdir()
    (site / "index.html").write_bytes(b"esp\n")
    (site / "my page.html").write_bytes(b"x\n")
    img = copy_image(tmp_path)
    put_site(img, site)
    vm, port = boot_app(boot, img)
    _baked_site_stays(vm, port, r"has a name outside \[A-Za-z0-9\._~-\]")


def test_over_8_mib_keeps_the_baked_site(boot, tmp_path):
    """The built image's ESP has no room for 8 MiB: a 12 MiB ESP made with
    the image builders' own helpers (images/lib.sh) holds vireo and 8 MiB + 1
    of site in two files."""
    efi = os.path.join(ROOT, "build", "vireo.efi")
    a, b = tmp_path / "a.bin", tmp_path / "b.bin"
    a.write_bytes(b"a" * (4 << 20))
    b.write_bytes(b"b" * ((4 << 20) + 1))
    img = tmp_path / "big.img"
    script = (f'. images/lib.sh && make_esp {tmp_path}/esp.img 12 "{efi}=/EFI/BOOT/BOOTX64.EFI" '
              f'"{a}=/EFI/vireo/site/a.bin" "{b}=/EFI/vireo/site/b.bin" && make_disk {tmp_path}/esp.img {img}')
    subprocess.run(["bash", "-c", script], check=True, cwd=ROOT)
    vm, port = boot_app(boot, str(img))
    _baked_site_stays(vm, port, r"holds more than 8 MiB \(at /[ab]\.bin")
    # The ESP loader's own line: the bytes seen (the first file, 8-aligned,
    # and the one over the cap; a.bin or b.bin first), the cap.
    assert re.search(rf"^boot: EFI/vireo/site refused: ({(8 << 20) + 1}|{(8 << 20) + 8}) bytes or more, "
                     r"cap 8388608$", vm.text, re.M), vm.text
