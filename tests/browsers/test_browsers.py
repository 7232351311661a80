"""A site with ES modules, a web font, a video and images, from the ESP of
a copy of the image, rendered by real browsers over QEMU's user networking
(make test-browsers; tools/deps.sh browsers installs them):

- Chromium headless (--dump-dom): the page's own script (site/app.mjs)
  writes "VIREO-OK module=1 font=1 video=1 seek=1 image=1" into the DOM only
  when the module graph loaded, document.fonts.load() resolved with the
  site's WOFF2 face, the WebM fired loadedmetadata and then seeked to 1.5 s,
  and both images decoded; its net log must show every response 200, 206
  or 304 (the video's a 206: a range) and no failed request.
- Firefox ESR headless (a fresh profile, driven over Marionette): the same
  marker in the title, and its screenshot's pixels the page's #123456 (set
  only when every check passed; the stylesheet's own background is red);
  the page's Resource Timing entries show every file fetched, each 200,
  206 (the video's range) or 304.
- The appliance's /metrics then counts no 4xx or 5xx response.
- Both again over HTTPS from a make TLS=1 image with the certificate it
  generates at boot, which each is told to accept.

The fixed files are in site/; the binary ones are made here from Debian
packages: the font is DejaVu Sans Mono (fonts-dejavu-core, free to copy and
redistribute) compressed by woff2_compress, the video 2 s of VP8 made by
vpxenc from frames written here, the PNG written here with zlib."""
import base64
import json
import os
import re
import shutil
import socket
import ssl
import struct
import subprocess
import time
import urllib.request
import zlib

import pytest

from httpc import free_tcp_port
from vm import IMAGE, Vm

HERE = os.path.dirname(os.path.abspath(__file__))
READY = r"^vireo: ready ip=(\S+) http=(\d+)"
ESP = "@@1M"  # images/lib.sh: the ESP starts at sector 2048 of every vireo disk
MTOOLS = dict(os.environ, MTOOLS_SKIP_CHECK="1")
FONT = "/usr/share/fonts/truetype/dejavu/DejaVuSansMono.ttf"
OK_RGB = (0x12, 0x34, 0x56)
MARKER = "VIREO-OK module=1 font=1 video=1 seek=1 image=1"
TYPES = {  # what the generated table must answer (tools/mkmime.py)
    "/": "text/html; charset=utf-8",
    "/app.mjs": "text/javascript; charset=utf-8",
    "/lib/util.mjs": "text/javascript; charset=utf-8",
    "/style.css": "text/css; charset=utf-8",
    "/fonts/mono.woff2": "font/woff2",
    "/clip.webm": "video/webm",
    "/logo.png": "image/png",
    "/mark.svg": "image/svg+xml",
}


def png(w, h, rgb):
    """A w x h RGB PNG of one colour (RFC 2083: signature, IHDR, IDAT, IEND)."""
    def chunk(kind, data):
        return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data))
    rows = b"".join(b"\0" + bytes(rgb) * w for _ in range(h))
    return (b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", struct.pack(">IIBBBBB", w, h, 8, 2, 0, 0, 0))
            + chunk(b"IDAT", zlib.compress(rows)) + chunk(b"IEND", b""))


def make_site(tmp_path):
    site = tmp_path / "site"
    shutil.copytree(os.path.join(HERE, "site"), site)
    (site / "fonts").mkdir()
    shutil.copyfile(FONT, tmp_path / "mono.ttf")
    subprocess.run(["woff2_compress", str(tmp_path / "mono.ttf")], check=True, capture_output=True)
    shutil.copyfile(tmp_path / "mono.woff2", site / "fonts" / "mono.woff2")
    (site / "logo.png").write_bytes(png(16, 16, (0xf0, 0xc0, 0x20)))
    # 20 frames of 64x48 I420 at 10 fps: 2 s, a bar moving across (twice).
    w, h = 64, 48
    raw = bytearray()
    for f in range(20):
        raw += bytes(255 if x // 4 == f % 16 else 16 for _ in range(h) for x in range(w))
        raw += bytes([128]) * (w // 2 * h // 2 * 2)
    (tmp_path / "clip.yuv").write_bytes(raw)
    subprocess.run(["vpxenc", "--codec=vp8", "--i420", "-w", str(w), "-h", str(h), "--fps=10/1",
                    "--good", "--cpu-used=4", "--kf-max-dist=5", "-q", "-o", str(site / "clip.webm"),
                    str(tmp_path / "clip.yuv")], check=True, capture_output=True)
    return site


def boot_site(tmp, image, https=False):
    """Boots a copy of image with the site on its ESP, port 80 (and 443)
    forwarded to loopback ports; returns the Vm and its base URLs."""
    site = make_site(tmp)
    img = str(tmp / "vireo.img")
    shutil.copyfile(image, img)
    subprocess.run(["mmd", "-i", f"{img}{ESP}", "::/EFI/vireo"], check=True, env=MTOOLS)
    subprocess.run(["mcopy", "-s", "-i", f"{img}{ESP}", str(site), "::/EFI/vireo/"], check=True, env=MTOOLS)
    port, sport = free_tcp_port(), free_tcp_port()
    fwd = f"hostfwd=tcp:127.0.0.1:{port}-:80" + (f",hostfwd=tcp:127.0.0.1:{sport}-:443" if https else "")
    vm = Vm(image=img, extra=["-netdev", f"user,id=n0,restrict=on,{fwd}",
                              "-device", "virtio-net-pci,netdev=n0,romfile="])
    try:
        vm.wait_for(READY + (" https=443$" if https else "$"), timeout=120)
        assert re.search(r"^site: \d+ files, \d+ bytes from EFI/vireo/site", vm.text, re.M), vm.text
    except BaseException:
        vm.stop()
        raise
    return vm, f"http://127.0.0.1:{port}/", f"https://127.0.0.1:{sport}/"


@pytest.fixture(scope="module")
def appliance(tmp_path_factory):
    """One boot for every browser over HTTP: the default image."""
    tmp = tmp_path_factory.mktemp("browsers")
    vm, url, _ = boot_site(tmp, IMAGE)
    yield vm, url, tmp
    vm.stop()


def metrics(url):
    # Over HTTPS the certificate is the one the appliance generated at boot.
    ctx = ssl._create_unverified_context() if url.startswith("https:") else None
    with urllib.request.urlopen(url + "metrics", timeout=20, context=ctx) as r:
        text = r.read().decode()
    counts = {c: int(v) for c, v in re.findall(r'^vireo_http_responses_total\{code="(\w+)"\} (\d+)$', text, re.M)}
    assert "4xx" in counts and "5xx" in counts, text
    return counts


def test_types(appliance):
    vm, url, _ = appliance
    for path, ctype in TYPES.items():
        with urllib.request.urlopen(url.rstrip("/") + path, timeout=20) as r:
            assert r.headers["Content-Type"] == ctype, path


def netlog_statuses(path, origin):
    """(statuses, errors) of a Chromium net log, for the requests to origin
    only (Chromium's own background lookups fail offline): the status line
    and path of every response head read, and the net_error and URL of
    every request that ended in one, but ERR_ABORTED (-3: a media range the
    player cancels itself) and ERR_CACHE_MISS."""
    with open(path) as f:
        text = f.read()
    try:
        log = json.loads(text)
    except json.JSONDecodeError:  # a log cut short ends without its "]}"
        log = json.loads(text.rstrip().rstrip(",") + "]}")
    types = {v: k for k, v in log["constants"]["logEventTypes"].items()}
    urls = {}  # URL_REQUEST source id -> its URL
    for ev in log["events"]:
        url = (ev.get("params") or {}).get("url")
        if types.get(ev["type"]) == "URL_REQUEST_START_JOB" and url:
            urls[ev["source"]["id"]] = url
    statuses, errors = [], []
    for ev in log["events"]:
        url = urls.get(ev["source"]["id"], "")
        if not url.startswith(origin):
            continue
        p = ev.get("params") or {}
        name = types.get(ev["type"], str(ev["type"]))
        if name == "HTTP_TRANSACTION_READ_RESPONSE_HEADERS" and p.get("headers"):
            statuses.append((p["headers"][0], url[len(origin) - 1:]))
        # A request's outcome is its REQUEST_ALIVE's end. ERR_CACHE_MISS
        # (-400) is a cache-only lookup Chromium makes before a font's
        # network request (every path must still get a response, below).
        err = p.get("net_error")
        if name == "REQUEST_ALIVE" and isinstance(err, int) and err < 0 and err not in (-3, -400):
            errors.append((err, url))
    return statuses, errors


def chromium(url, tmp, metrics_url, *flags):
    """Chromium headless on url: the marker in the DOM it dumps, every file
    answered 200, 206 (the video) or 304 in its net log, no request
    failed, and no 4xx or 5xx counted by the appliance meanwhile."""
    before = metrics(metrics_url)
    netlog = tmp / "chromium-netlog.json"
    t0 = time.monotonic()
    out = subprocess.run(["chromium", "--headless=new", "--no-sandbox", "--disable-gpu",
                          f"--user-data-dir={tmp / 'chromium-profile'}", "--no-first-run",
                          "--disable-background-networking", "--disable-component-update",
                          # Nothing but loopback: no name resolves, any other
                          # host goes to a dead loopback proxy.
                          "--host-resolver-rules=MAP * ~NOTFOUND, EXCLUDE 127.0.0.1",
                          "--proxy-server=http://127.0.0.1:9",
                          "--autoplay-policy=no-user-gesture-required", f"--log-net-log={netlog}",
                          "--virtual-time-budget=30000", *flags, "--dump-dom", url],
                         capture_output=True, text=True, timeout=180)
    print(f"chromium: {time.monotonic() - t0:.1f} s")
    assert MARKER in out.stdout, out.stdout[-3000:] + out.stderr[-3000:]
    statuses, errors = netlog_statuses(netlog, url)
    print("chromium responses:", statuses)
    assert statuses and all(re.match(r"HTTP/1\.1 (200|206|304) ", s) for s, _ in statuses), statuses
    for path in TYPES:  # every file was fetched
        assert any(u == path for _, u in statuses), (path, statuses)
    # Chromium's media player asks for the video by ranges: a 206 (the seek
    # itself is played from what that range brought: the clip is ~1 KB).
    assert any(s.startswith("HTTP/1.1 206 ") and u == "/clip.webm" for s, u in statuses), statuses
    assert not errors, errors
    after = metrics(metrics_url)
    assert after.get("4xx") == before.get("4xx") and after.get("5xx") == before.get("5xx"), (before, after)


def test_chromium(appliance):
    vm, url, tmp = appliance
    chromium(url, tmp, url)


class Marionette:
    """Firefox's own remote protocol (Marionette, built into firefox-esr):
    messages are LENGTH:JSON, a command [0, id, name, params], its answer
    [1, id, error, result]. Just enough to navigate, read the title and
    take a screenshot."""

    def __init__(self, port, timeout=120):
        deadline = time.monotonic() + timeout
        while True:
            try:
                self.sock = socket.create_connection(("127.0.0.1", port), timeout=timeout)
                break
            except OSError:
                if time.monotonic() > deadline:
                    raise
                time.sleep(0.2)
        self.f = self.sock.makefile("rb")
        self.id = 0
        hello = self._recv()
        assert hello.get("marionetteProtocol") == 3, hello

    def _recv(self):
        n = b""
        while (c := self.f.read(1)) != b":":
            assert c and c.isdigit() and len(n) < 10, (n, c)
            n += c
        return json.loads(self.f.read(int(n)))

    def __call__(self, name, **params):
        self.id += 1
        msg = json.dumps([0, self.id, name, params]).encode()
        self.sock.sendall(b"%d:%s" % (len(msg), msg))
        kind, mid, err, result = self._recv()
        assert (kind, mid, err) == (1, self.id, None), (name, err)
        return result

    def close(self):
        self.sock.close()


def firefox(url, tmp, insecure=False):
    """Firefox's --screenshot shoots once the load event has fired
    (HeadlessShell's ScreenshotChild waits for "load" only), before the
    page's asynchronous checks end, so Firefox is driven over Marionette:
    navigate, wait for the page's verdict in the title, then screenshot;
    the title must be the marker, the screenshot's background #123456, and
    the appliance must count no 4xx or 5xx meanwhile."""
    from PIL import Image  # python3-pil (tools/deps.sh browsers)
    before = metrics(url)
    profile = tmp / "firefox-profile"
    profile.mkdir()
    port = free_tcp_port()
    # Nothing but loopback (Marionette's recommended preferences, on by
    # default, also turn off updates, telemetry and Safe Browsing): any
    # other host goes to a dead loopback proxy, Remote Settings to a dead
    # loopback port, no DNS prefetch, no connectivity or portal probes.
    (profile / "user.js").write_text(f'user_pref("marionette.port", {port});\n'
                                     'user_pref("network.proxy.type", 1);\n'
                                     'user_pref("network.proxy.http", "127.0.0.1");\n'
                                     'user_pref("network.proxy.http_port", 9);\n'
                                     'user_pref("network.proxy.ssl", "127.0.0.1");\n'
                                     'user_pref("network.proxy.ssl_port", 9);\n'
                                     'user_pref("network.dns.disablePrefetch", true);\n'
                                     'user_pref("services.settings.server", "http://127.0.0.1:9/v1");\n'
                                     'user_pref("network.connectivity-service.enabled", false);\n'
                                     'user_pref("network.captive-portal-service.enabled", false);\n')
    t0 = time.monotonic()
    ff = subprocess.Popen(["firefox-esr", "--headless", "-no-remote", "-profile", str(profile), "--marionette"],
                          stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                          env=dict(os.environ, MOZ_DISABLE_AUTO_SAFE_MODE="1",
                                   # (lets services.settings.server be changed)
                                   MOZ_REMOTE_SETTINGS_DEVTOOLS="1"))
    try:
        mn = Marionette(port)
        mn("WebDriver:NewSession", acceptInsecureCerts=insecure)  # the capabilities themselves
        mn("WebDriver:SetWindowRect", width=320, height=240)
        mn("WebDriver:Navigate", url=url)
        deadline = time.monotonic() + 60
        while (title := mn("WebDriver:GetTitle")["value"]) == "VIREO-WAIT" and time.monotonic() < deadline:
            time.sleep(0.2)
        png_b64 = mn("WebDriver:TakeScreenshot", full=False)["value"]
        # Every fetch's status as the page saw it (Resource Timing): Firefox's
        # stand-in for Chromium's net log.
        entries = mn("WebDriver:ExecuteScript", args=[], script="return performance.getEntriesByType('navigation')"
                     ".concat(performance.getEntriesByType('resource')).map((e) => [e.name, e.responseStatus]);"
                     )["value"]
        mn("WebDriver:DeleteSession")
        mn.close()
    finally:
        ff.terminate()
        ff.wait(timeout=30)
    print(f"firefox: {time.monotonic() - t0:.1f} s, title {title!r}")
    print("firefox resources:", entries)
    paths = [(n[len(url) - 1:], st) for n, st in entries if n.startswith(url)]
    assert len(paths) == len(entries) and all(st in (200, 206, 304) for _, st in paths), entries
    for path in TYPES:
        assert any(p == path for p, _ in paths), (path, entries)
    assert ("/clip.webm", 206) in paths, entries
    assert title == MARKER, title
    shot = tmp / "firefox.png"
    shot.write_bytes(base64.b64decode(png_b64))
    with Image.open(shot) as im:
        im = im.convert("RGB")
    w, h = im.size
    # The corners and the bottom edge: the body's background (the content
    # sits at the top left).
    for xy in ((w - 1, 0), (w - 1, h - 1), (0, h - 1), (w // 2, h - 1)):
        assert im.getpixel(xy) == OK_RGB, (xy, im.getpixel(xy))
    after = metrics(url)
    assert after.get("4xx") == before.get("4xx") and after.get("5xx") == before.get("5xx"), (before, after)


def test_firefox(appliance):
    vm, url, tmp = appliance
    firefox(url, tmp)


@pytest.fixture(scope="module")
def tls_appliance(tmp_path_factory):
    """A make TLS=1 image (built into build/tls-image/ as
    tests/qemu/test_tls.py builds it: a few minutes the first time) with
    the certificate it generates at boot, which the browsers are told to
    accept."""
    from test_tls import BUILD, make as make_tls
    make_tls()
    tmp = tmp_path_factory.mktemp("browsers-tls")
    vm, _, surl = boot_site(tmp, os.path.join(BUILD, "vireo.img"), https=True)
    yield vm, surl, tmp
    vm.stop()


def test_chromium_https(tls_appliance):
    vm, surl, tmp = tls_appliance
    chromium(surl, tmp, surl, "--ignore-certificate-errors")


def test_firefox_https(tls_appliance):
    vm, surl, tmp = tls_appliance
    firefox(surl, tmp, insecure=True)
