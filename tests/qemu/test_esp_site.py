"""The site from the ESP: files copied with mtools into EFI/vireo/site/ of a
copy of the image are served instead of the baked-in site, byte for byte,
odd names (RFC 3986's sub-delims, '@', spaces, UTF-8) included, with byte
ranges (curl -C - resumes), /dir -> /dir/, a custom 404.html and types
from the generated table (.mjs); over the file-count or byte bound the log
says why and the baked site stays; a directory past the depth bound alone
is left out, named."""
import gzip
import os
import re
import shutil
import subprocess
import time
import urllib.error
import urllib.parse
import urllib.request

from httpc import free_tcp_port
from vm import IMAGE, ROOT

READY = r"^vireo: ready ip=(\S+) http=(\d+)(?: https=\d+)?$"
ESP = "@@1M"  # images/lib.sh: the ESP starts at sector 2048 of every vireo disk
BAKED_INDEX = os.path.join(ROOT, "runtime", "default-site", "index.html")
ENV = dict(os.environ, MTOOLS_SKIP_CHECK="1", LC_ALL="C.UTF-8")  # UTF-8 names as long names


def put_site(img, site_dir):
    subprocess.run(["mmd", "-i", f"{img}{ESP}", "::/EFI/vireo"], check=True, env=ENV)
    subprocess.run(["mcopy", "-s", "-i", f"{img}{ESP}", str(site_dir), "::/EFI/vireo/"], check=True, env=ENV)


def copy_image(tmp_path):
    img = tmp_path / "vireo.img"
    shutil.copyfile(IMAGE, img)
    return str(img)


def boot_app(boot, img, mem=64):
    port = free_tcp_port()
    vm = boot(image=img, mem=mem, extra=["-netdev", f"user,id=n0,restrict=on,hostfwd=tcp:127.0.0.1:{port}-:80",
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
    assert re.search(rf"^site: 4 files, {served} bytes from EFI/vireo/site \(instead of the built-in site; caps at this memory: 256 files, 8 MiB\)$",
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
        index = f.read()
    assert get(port, "/")[2] == index
    # The baked index.html.gz (mksite.py --gzip) for a client taking gzip.
    status, headers, body = get(port, "/", {"Accept-Encoding": "gzip"})
    assert headers["Content-Encoding"] == "gzip" and headers["Vary"] == "Accept-Encoding", headers
    assert gzip.decompress(body) == index
    assert "from EFI/vireo/site" not in vm.text


def test_too_many_files_keep_the_baked_site(boot, tmp_path):
    site = tmp_path / "site"
    site.mkdir()
    for i in range(257):  # one over the 256 files of a 64 MiB guest (boot_dir_caps)
        (site / f"f{i:03}.txt").write_bytes(b"%d\n" % i)
    img = copy_image(tmp_path)
    put_site(img, site)
    vm, port = boot_app(boot, img)
    _baked_site_stays(vm, port, r"has more files than the cap for this memory \(256 files, 8 MiB; at /f\d{3}\.txt")


def curl_head(port, path, *args):
    """curl's response head for GET path (body discarded): status, headers."""
    out = subprocess.run(["curl", "-s", "-o", "/dev/null", "-D", "-", *args, f"http://127.0.0.1:{port}{path}"],
                         check=True, capture_output=True, text=True, timeout=30).stdout
    lines = out.splitlines()
    status = int(lines[0].split()[1])
    return status, {k.lower(): v for k, v in (l.split(": ", 1) for l in lines[1:] if ": " in l)}


NGINX_CONF = """
user root;
daemon off;
pid {d}/nginx.pid;
error_log {d}/error.log;
events {{ worker_connections 64; }}
http {{
    access_log off;
    client_body_temp_path {d}/body;
    proxy_temp_path {d}/proxy;
    fastcgi_temp_path {d}/fcgi;
    uwsgi_temp_path {d}/uwsgi;
    scgi_temp_path {d}/scgi;
    server {{
        listen 127.0.0.1:{port};
        root {root};
        absolute_redirect off;
        error_page 404 /404.html;
    }}
}}
"""


def _compare_with_nginx(tmp_path, site, vport, size):
    d = tmp_path / "nginx"
    d.mkdir()
    nport = free_tcp_port()
    (d / "nginx.conf").write_text(NGINX_CONF.format(d=d, port=nport, root=site))
    ng = subprocess.Popen(["nginx", "-c", str(d / "nginx.conf"), "-e", str(d / "error.log")],
                          stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        for _ in range(50):
            try:
                curl_head(nport, "/index.html")
                break
            except subprocess.CalledProcessError:
                time.sleep(0.1)
        cases = [
            ("/big.bin", ["-r", "100-199"]), ("/big.bin", ["-H", "Range: bytes=-10"]),
            ("/big.bin", ["-H", "Range: bytes=190000-"]), ("/big.bin", ["-H", "Range: bytes=-300000"]),
            ("/big.bin", ["-H", "Range: bytes=0-999999"]), ("/big.bin", ["-H", f"Range: bytes={size}-"]),
            ("/big.bin", ["-H", "Range: bytes=5-4"]), ("/big.bin", ["-H", "Range: bytes=abc"]),
            ("/big.bin", ["-H", "Range: items=0-1"]), ("/big.bin", ["-H", "Range: bytes=0-1,999999-"]),
            ("/big.bin", ["-r", "0-1", "-H", 'If-Range: "stale"']), ("/big.bin", ["-I", "-r", "0-9"]),
            ("/docs?x=1&y=%20", []), ("/docs", ["-I"]), ("/nothing", []), ("/logo@2x.png", []),
            ("/my%20page.html", []), ("/caf%C3%A9%20(1).txt", []),
        ]
        for path, args in cases:
            vs, vh = curl_head(vport, path, *args)
            ns, nh = curl_head(nport, path, *args)
            what = f"{path} {args}: vireo {vs} {vh} nginx {ns} {nh}"
            assert vs == ns, what
            # (The bodies of 301 and 416 are each server's own page.)
            for k in ("content-range", "location") + (("content-length",) if vs in (200, 206, 404) else ()):
                assert vh.get(k) == nh.get(k), what
    finally:
        ng.terminate()
        ng.wait(timeout=10)


def test_odd_names_ranges_and_redirects(boot, tmp_path):
    """One boot: names the runtime once refused (logo@2x.png dropped the
    whole site) are served; a directory past 8 levels alone is left out,
    named; Range as nginx answers it (206/416/If-Range, curl -C -), /dir ->
    301 /dir/ with the query, 404.html with 404, .mjs as text/javascript."""
    site = tmp_path / "site"
    deep = site / "1" / "2" / "3" / "4" / "5" / "6" / "7" / "8"
    deep.mkdir(parents=True)
    (site / "docs").mkdir()
    big = os.urandom(200_000)
    files = {
        "index.html": b"esp\n",
        "my page.html": b"space\n",
        "logo@2x.png": b"\x89PNG at 2x\n",
        "caf\u00e9 (1).txt": "caf\u00e9\n".encode(),
        "\u65e5\u672c.css": b"body{}\n",
        "app.mjs": b"export default 1;\n",
        "404.html": b"<h1>custom not found</h1>\n",
        "docs/index.html": b"<h1>docs</h1>\n",
        "big.bin": big,
        "text.txt": b"compress me " * 500,
        "text.txt.gz": gzip.compress(b"compress me " * 500, mtime=0),
        "1/2/3/4/5/6/7/8/f.txt": b"too deep\n",
    }
    for name, data in files.items():
        (site / name).write_bytes(data)
    img = copy_image(tmp_path)
    put_site(img, site)
    vm, port = boot_app(boot, img)
    assert re.search(r"^warning: site: EFI/vireo/site: 1 name\(s\) left out .*the first: "
                     r"EFI/vireo/site/1/2/3/4/5/6/7/8$", vm.text, re.M), vm.text
    assert re.search(r"^site: 11 files, \d+ bytes from EFI/vireo/site", vm.text, re.M), vm.text
    for name, data in files.items():
        if name.startswith("1/"):
            continue
        status, headers, body = get(port, "/" + urllib.parse.quote(name))
        assert status == 200 and body == data, name
    assert get(port, "/logo%402x.png")[2] == files["logo@2x.png"]  # '@' raw or escaped
    assert get(port, "/app.mjs")[1]["Content-Type"] == "text/javascript; charset=utf-8"
    # 404.html for a missing path (the too-deep file too), with 404.
    status, headers, body = get(port, "/1/2/3/4/5/6/7/8/f.txt")
    assert status == 404 and body == files["404.html"]
    # /docs -> 301 /docs/ with the query; curl follows it.
    status, h = curl_head(port, "/docs?x=1&y=%20")
    assert status == 301 and h.get("location") == "/docs/?x=1&y=%20", (status, h)
    out = subprocess.run(["curl", "-sfL", f"http://127.0.0.1:{port}/docs"], check=True, capture_output=True,
                         timeout=30).stdout
    assert out == files["docs/index.html"]
    # Ranges, header for header as nginx answers them.
    status, h = curl_head(port, "/big.bin")
    assert status == 200 and h["accept-ranges"] == "bytes" and h["content-length"] == str(len(big)), h
    etag = h["etag"]
    status, h = curl_head(port, "/big.bin", "-r", "100-199")
    assert status == 206 and h["content-range"] == f"bytes 100-199/{len(big)}" and h["content-length"] == "100"
    status, h = curl_head(port, "/big.bin", "-H", "Range: bytes=-10")
    assert status == 206 and h["content-range"] == f"bytes {len(big) - 10}-{len(big) - 1}/{len(big)}"
    status, h = curl_head(port, "/big.bin", "-H", f"Range: bytes={len(big)}-")
    assert status == 416 and h["content-range"] == f"bytes */{len(big)}", h
    status, h = curl_head(port, "/big.bin", "-r", "0-1,5-6")
    assert status == 200 and h["content-length"] == str(len(big))
    status, h = curl_head(port, "/big.bin", "-r", "0-1", "-H", 'If-Range: "stale"')
    assert status == 200
    status, h = curl_head(port, "/big.bin", "-r", "0-1", "-H", f"If-Range: {etag}")
    assert status == 206
    status, h = curl_head(port, "/big.bin", "-I", "-r", "0-9")
    assert status == 206 and h["content-length"] == "10"
    # gzip_static: text.txt.gz for a client taking gzip (curl --compressed
    # gunzips it), Vary either way.
    status, h = curl_head(port, "/text.txt", "--compressed")
    assert status == 200 and h["content-encoding"] == "gzip" and h["vary"] == "Accept-Encoding", h
    assert h["content-length"] == str(len(files["text.txt.gz"]))
    out = subprocess.run(["curl", "-sf", "--compressed", f"http://127.0.0.1:{port}/text.txt"], check=True,
                         capture_output=True, timeout=30).stdout
    assert out == files["text.txt"]
    status, h = curl_head(port, "/text.txt")
    assert "content-encoding" not in h and h["vary"] == "Accept-Encoding", h
    # The same requests to Debian's nginx on loopback serving the same
    # directory (tools/deps.sh installs nginx-light): status, Content-Range,
    # Content-Length and Location, header for header.
    if shutil.which("nginx"):
        _compare_with_nginx(tmp_path, site, port, len(big))
    # curl -C - resumes a cut download.
    part = tmp_path / "big.part"
    part.write_bytes(big[:123_457])
    subprocess.run(["curl", "-sf", "-C", "-", "-o", str(part), f"http://127.0.0.1:{port}/big.bin"], check=True,
                   timeout=60)
    assert part.read_bytes() == big


def test_over_8_mib_keeps_the_baked_site(boot, tmp_path):
    """The built image's ESP has no room for 8 MiB: a 12 MiB ESP made with
    the image builders' own helpers (images/lib.sh) holds vireo and 8 MiB + 1
    of site in two files. A 64 MiB guest refuses it; with 256 MiB the caps
    have grown (an eighth of free memory; a file per 32 KiB of that) and the
    same site, plus 300 small files, is served."""
    efi = os.path.join(ROOT, "build", "vireo.efi")
    a, b = tmp_path / "a.bin", tmp_path / "b.bin"
    a.write_bytes(b"a" * (4 << 20))
    b.write_bytes(b"b" * ((4 << 20) + 1))
    img = tmp_path / "big.img"
    script = (f'. images/lib.sh && make_esp {tmp_path}/esp.img 12 "{efi}=/EFI/BOOT/BOOTX64.EFI" '
              f'"{a}=/EFI/vireo/site/a.bin" "{b}=/EFI/vireo/site/b.bin" && make_disk {tmp_path}/esp.img {img}')
    subprocess.run(["bash", "-c", script], check=True, cwd=ROOT)
    vm, port = boot_app(boot, str(img))
    _baked_site_stays(vm, port, r"holds more bytes than the cap for this memory \(256 files, 8 MiB; at /[ab]\.bin")
    # The ESP loader's own line: the bytes seen (the first file, 8-aligned,
    # and the one over the cap; a.bin or b.bin first), the cap.
    assert re.search(rf"^boot: EFI/vireo/site refused: ({(8 << 20) + 1}|{(8 << 20) + 8}) bytes or more, "
                     r"cap 8388608$", vm.text, re.M), vm.text
    vm.stop()
    many = tmp_path / "many"
    many.mkdir()
    for k in range(300):
        (many / f"m{k:03}.txt").write_bytes(b"%d\n" % k)
    subprocess.run(["mcopy", "-s", "-i", f"{img}{ESP}", str(many), "::/EFI/vireo/site/"], check=True, env=ENV)
    vm, port = boot_app(boot, str(img), mem=256)
    m = re.search(r"^site: 302 files, (\d+) bytes from EFI/vireo/site \(instead of the built-in site; caps at "
                  r"this memory: (\d+) files, (\d+) MiB\)$", vm.text, re.M)
    assert m, vm.text
    files_cap, mib_cap = int(m.group(2)), int(m.group(3))
    assert 20 <= mib_cap <= 32 and files_cap == mib_cap * 32, m.group(0)
    assert int(m.group(1)) == (8 << 20) + 1 + sum(len(b"%d\n" % k) for k in range(300))
    status, _, body = get(port, "/b.bin")
    assert status == 200 and body == b"b" * ((4 << 20) + 1)
    assert get(port, "/many/m299.txt")[2] == b"299\n"
