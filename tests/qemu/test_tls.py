"""make TLS=1 images (docs/https.md): built into build/tls-image/ by the test
itself (the fetched lwIP and mbedTLS trees are copied from build/ when there),
booted with user networking, or on a tap in a namespace where several client
addresses are needed. Without a certificate the appliance generates one at
boot (a CA:FALSE P-256 leaf for its names), says so on the console, in the
`cert` verb and on /metrics; tls.names= names it. A key that does not match
the certificate is refused with a clear line and HTTP serves without HTTPS. HTTPS: curl and openssl s_client over TLS
1.3 and 1.2, the served chain, ALPN, refusals; http.redirect; 1,000 requests
over 16 TLS connections and the TLS heap back to idle; a handshake flood and
garbage or truncated ClientHellos while other clients are served."""
import os
import re
import shutil
import socket
import time
import subprocess

import pytest

from httpc import free_tcp_port, parse_prometheus, parse_response, promtool_findings, read_all, read_responses
from vm import ROOT, Vm

BUILD = os.path.join(ROOT, "build", "tls-image")
READY = r"^vireo: ready ip=(\S+) http=(\d+)( https=(\d+))?$"


# What a first build of build/tls-image/ copies from build/: the fetched
# trees, and when the default build is a TLS one (apps/site's, TLS=1 by
# default) its objects too, so only what the test's own variables change
# is rebuilt. Copied dependency files (*.d) name their targets under
# build/; they are rewritten to name the copy's, so a header edited later
# still rebuilds the copy's objects.
FETCHED = ("lwip-src", "mbedtls-src", "apt")
BUILT = ("k", "gen", "lwip", "tls-lwip", "mbedtls")


def _seed_tls_build():
    src_root = os.path.join(ROOT, "build")
    trees = FETCHED
    stamp = os.path.join(src_root, "tls-build.1")
    if os.path.exists(stamp) and not os.path.exists(os.path.join(BUILD, "k")):
        trees += BUILT
        shutil.copy2(stamp, BUILD)  # its age: objects older than it rebuild
        for f in os.listdir(src_root):  # the same for the Makefile's COLD_OPT
            if f.startswith("cold-opt."):
                shutil.copy2(os.path.join(src_root, f), BUILD)
    for tree in trees:
        src, dst = os.path.join(src_root, tree), os.path.join(BUILD, tree)
        if not os.path.isdir(src) or os.path.exists(dst):
            continue
        shutil.copytree(src, dst, symlinks=True)
        if tree in FETCHED:
            continue
        for d, _, files in os.walk(dst):
            for f in files:
                if f.endswith(".d"):
                    path = os.path.join(d, f)
                    with open(path) as fh:
                        text = fh.read()
                    with open(path, "w") as fh:
                        fh.write(re.sub(r"(^|\s)build/", r"\1build/tls-image/", text))


def make(*args):
    os.makedirs(BUILD, exist_ok=True)
    _seed_tls_build()
    r = subprocess.run(["make", "-C", ROOT, f"BUILD={os.path.relpath(BUILD, ROOT)}", "TLS=1", "-j2",
                        *args, "image"], capture_output=True, text=True, timeout=1200)
    assert r.returncode == 0, r.stdout[-3000:] + r.stderr[-3000:]
    return r.stdout



def boot_and_get(boot, cmdline="", image=None):
    port, sport = free_tcp_port(), free_tcp_port()
    vm = boot(image=image or os.path.join(BUILD, "vireo.img"), cmdline=cmdline, extra=[
        "-netdev", f"user,id=n0,restrict=on,hostfwd=tcp:127.0.0.1:{port}-:80,"
        f"hostfwd=tcp:127.0.0.1:{sport}-:443",
        "-device", "virtio-net-pci,netdev=n0,romfile="])
    vm.ready = vm.wait_for(READY, timeout=120)
    vm.port, vm.sport = port, sport

    def get(path):
        with socket.create_connection(("127.0.0.1", port), timeout=20) as s:
            s.sendall(f"GET {path} HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n".encode())
            return parse_response(read_all(s))
    return vm, get


PEM_CERT = r"-----BEGIN CERTIFICATE-----.*?-----END CERTIFICATE-----"


def served_certs(sport, *args):
    """The chain the appliance serves, as PEM blocks (openssl s_client)."""
    rc, out = s_client(sport, "-showcerts", *args, data=b"")
    assert rc == 0, out[-2000:]
    return re.findall(PEM_CERT, out, re.S)


def x509_text(pem, *args):
    return subprocess.run(["openssl", "x509", "-noout", *args], input=pem, capture_output=True, text=True,
                          check=True).stdout


def test_generated_certificate(boot, tmp_path):
    """No certificate from the ESP or make: the appliance makes an ECDSA
    P-256 key and a self-signed leaf at boot, for its default names, and
    says so on the console, in `cert` and on /metrics."""
    make()
    # https.hsts= is withheld: a browser that saw it would refuse the
    # self-signed certificate for max-age seconds.
    vm, get = boot_and_get(boot, cmdline="https.hsts=600")
    line = re.search(r"^tls: EC P-256 key and self-signed certificate generated at boot in (\d+) ms \(names "
                     r"vireo,localhost,127\.0\.0\.1,0:0:0:0:0:0:0:1; not after (\S+)Z; browsers will warn\)$",
                     vm.text, re.M)
    assert line, vm.text
    print(f"key and certificate generated in {line.group(1)} ms")
    assert re.search(r"^tls: warning: no store: the generated key is kept in memory only", vm.text, re.M)
    assert "PRIVATE KEY" not in vm.text
    assert vm.ready.group(4) == "443", vm.text[-4000:]
    assert re.search(r"^https: https.hsts=600 withheld: the certificate is self-signed, ", vm.text, re.M), vm.text
    # A leaf (browsers refuse a CA as a server's certificate even when
    # trusted): CA:FALSE, for server authentication, P-256, the names.
    served = served_certs(vm.sport)
    assert len(served) == 1
    text = x509_text(served[0], "-text")
    assert re.search(r"Basic Constraints: critical\n\s+CA:FALSE", text), text
    assert "Digital Signature" in text and "TLS Web Server Authentication" in text, text
    assert "NIST CURVE: P-256" in text and "ecdsa-with-SHA256" in text, text
    assert re.search(r"DNS:vireo, DNS:localhost, IP Address:127\.0\.0\.1, IP Address:0:0:0:0:0:0:0:1\n", text), text
    assert re.search(r"Subject: CN ?= ?vireo\n", text), text
    # 90 days and an hour from the firmware's clock (an hour of skew allowed).
    from datetime import datetime, timezone
    dates = dict(l.split("=", 1) for l in x509_text(served[0], "-startdate", "-enddate").splitlines())
    nb, na = (datetime.strptime(dates[k], "%b %d %H:%M:%S %Y %Z") for k in ("notBefore", "notAfter"))
    assert (na - nb).total_seconds() == 90 * 86400 + 3600, dates
    assert na.strftime("%Y-%m-%dT%H:%M:%S") == line.group(2)
    # The `cert` verb: source, names, dates and the SHA-256 openssl sees.
    vm.send("cert\r")
    vm.wait_for(r"^issuer:\s+self-signed", timeout=30)
    fp = x509_text(served[0], "-fingerprint", "-sha256").strip().split("=", 1)[1]
    out = vm.text[vm.text.rindex("source:"):]
    assert re.search(r"^source:\s+generated ", out, re.M), out
    assert re.search(r"^names:\s+vireo,localhost,127\.0\.0\.1,0:0:0:0:0:0:0:1$", out, re.M), out
    assert re.search(rf"^not after:\s+{line.group(2)}Z \(in (89 d 23|90 d 0) h\)$", out, re.M), out
    assert re.search(rf"^sha256:\s+{fp}$", out, re.M), (fp, out)
    status, _, _ = get("/")
    assert status == 200
    status, _, body = get("/metrics")
    m = parse_prometheus(body.decode())
    assert m["vireo_tls_ready"] == 1
    assert m['vireo_tls_cert_info{source="generated",names="vireo,localhost,127.0.0.1,0:0:0:0:0:0:0:1"}'] == 1
    # Seconds to notAfter from the same clock: 90 days less the boot.
    assert 90 * 86400 - 600 < m["vireo_tls_cert_expiry_seconds"] <= 90 * 86400, m["vireo_tls_cert_expiry_seconds"]
    # net/tls/tls.h: the server's 2 MiB, 4 TLS clients' 40 KiB, the CA bundle's 384 KiB
    assert m["vireo_tls_heap_arena_bytes"] == 2 * 1024 * 1024 + 4 * 40960 + 384 * 1024
    assert m["vireo_tls_heap_alloc_failures_total"] == 0
    # The parsed chain and key stay; the buffers used while making them are gone.
    assert 0 < m["vireo_tls_heap_in_use_bytes"] < m["vireo_tls_heap_peak_bytes"]
    assert m["vireo_https_handshakes_total"] == 1
    # Trusted as itself, it verifies for localhost (OpenSSL takes a
    # self-signed leaf as its own anchor, as a browser's exception does).
    cert = tmp_path / "served.pem"
    cert.write_text(served[0] + "\n")
    r = subprocess.run(["curl", "-sS", "--cacert", str(cert), "-D", "-", "-o", "/dev/null", "-w", "%{http_code}",
                        "--resolve", f"localhost:{vm.sport}:127.0.0.1", f"https://localhost:{vm.sport}/"],
                       capture_output=True, text=True, timeout=60)
    assert r.stdout.endswith("200"), r.stderr
    assert "strict-transport-security" not in r.stdout.lower(), r.stdout


def openssl_self_signed(tmp_path, name="test"):
    """A self-signed P-256 leaf and its key (paths), made with openssl."""
    key, cert = tmp_path / f"{name}-key.pem", tmp_path / f"{name}-cert.pem"
    subprocess.run(["openssl", "req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256", "-nodes",
                    "-keyout", str(key), "-out", str(cert), "-days", "2", "-subj", "/CN=localhost"],
                   check=True, capture_output=True)
    return cert, key


def test_mismatched_key_refused_http_serves(boot, tmp_path):
    # A certificate given to make with a fresh key that is not its own.
    key = tmp_path / "other-key.pem"
    subprocess.run(["openssl", "genpkey", "-algorithm", "EC", "-pkeyopt", "ec_paramgen_curve:P-256",
                    "-out", str(key)], check=True, capture_output=True)
    cert, _ = openssl_self_signed(tmp_path)
    make(f"TLS_CERT={cert}", f"TLS_KEY={key}")
    vm, get = boot_and_get(boot)
    assert re.search(r"^tls: key does not match the certificate .*; HTTPS off, HTTP unaffected$",
                     vm.text, re.M), vm.text
    assert "generated at boot" not in vm.text
    assert vm.ready.group(3) is None, vm.ready.group(0)
    status, _, _ = get("/")
    assert status == 200
    status, _, body = get("/metrics")
    assert parse_prometheus(body.decode())["vireo_tls_ready"] == 0


# ---- EFI/vireo/tls/cert.pem and key.pem on the ESP (docs/https.md) ----

ESP = "@@1M"  # images/lib.sh: the ESP starts at sector 2048 of every vireo disk


def image_with_tls_files(tmp_path, files):
    """A copy of the TLS image whose ESP holds files ({name: bytes}) in
    EFI/vireo/tls/, written with mtools as an operator would."""
    img = tmp_path / "vireo-esp-tls.img"
    shutil.copyfile(os.path.join(BUILD, "vireo.img"), img)
    env = dict(os.environ, MTOOLS_SKIP_CHECK="1")
    for d in ("::/EFI/vireo", "::/EFI/vireo/tls"):
        subprocess.run(["mmd", "-i", f"{img}{ESP}", d], env=env, capture_output=True)  # may exist
    for name, data in files.items():
        src = tmp_path / name
        src.write_bytes(data)
        subprocess.run(["mcopy", "-o", "-i", f"{img}{ESP}", str(src), f"::/EFI/vireo/tls/{name}"],
                       check=True, env=env)
    return str(img)


def openssl(*args):
    subprocess.run(["openssl", *args], check=True, capture_output=True)


def ca_and_leaf(tmp_path):
    """A CA (EC P-256) and an RSA-2048 leaf it signed: (chain PEM leaf
    first, leaf key PEM, CA key path)."""
    t = str(tmp_path)
    openssl("req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256", "-nodes",
            "-keyout", f"{t}/ca-key.pem", "-out", f"{t}/ca.pem", "-days", "2", "-subj", "/CN=vireo test ESP CA")
    openssl("req", "-newkey", "rsa:2048", "-nodes", "-keyout", f"{t}/leaf-key.pem", "-out", f"{t}/leaf.csr",
            "-subj", "/CN=localhost")
    openssl("x509", "-req", "-in", f"{t}/leaf.csr", "-CA", f"{t}/ca.pem", "-CAkey", f"{t}/ca-key.pem",
            "-CAcreateserial", "-out", f"{t}/leaf.pem", "-days", "2")
    with open(f"{t}/leaf.pem", "rb") as a, open(f"{t}/ca.pem", "rb") as b, open(f"{t}/leaf-key.pem", "rb") as k:
        return a.read() + b.read(), k.read()


def test_esp_certificate_chain_preferred_over_built_in(boot, tmp_path):
    need_image()
    chain, key = ca_and_leaf(tmp_path)
    img = image_with_tls_files(tmp_path, {"cert.pem": chain, "key.pem": key})
    vm, get = boot_and_get(boot, image=img, cmdline="https.hsts=600")
    assert re.search(r"^tls: RSA 2048 key, certificate from the ESP \(EFI/vireo/tls/cert.pem, "
                     r"EFI/vireo/tls/key.pem\)$", vm.text, re.M), vm.text
    assert "generated at boot" not in vm.text
    assert vm.ready.group(4) == "443", vm.text[-4000:]
    # A CA-issued certificate: https.hsts= is sent, on HTTPS only.
    assert re.search(r"^https: HSTS max-age=600 \(a CA-issued certificate\)$", vm.text, re.M), vm.text
    status, headers, _ = get("/")
    assert status == 200 and "strict-transport-security" not in headers, headers
    req = b"GET / HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n\r\n"
    rc, out = s_client(vm.sport, "-showcerts", "-CAfile", str(tmp_path / "ca.pem"), "-verify_return_error",
                       data=req)
    assert rc == 0, out[-2000:]
    assert "Verify return code: 0 (ok)" in out, out[-2000:]
    assert "HTTP/1.1 200 OK" in out and "\r\nStrict-Transport-Security: max-age=600\r\n" in out, out[-3000:]
    served = re.findall(PEM_CERT, out, re.S)
    assert served == re.findall(PEM_CERT, chain.decode(), re.S) and len(served) == 2
    m = metrics(get)
    assert m["vireo_tls_ready"] == 1
    # The leaf's names and expiry (openssl's -days 2), source esp.
    assert m['vireo_tls_cert_info{source="esp",names=""}'] == 1, m
    assert 86400 < m["vireo_tls_cert_expiry_seconds"] <= 2 * 86400


def test_esp_mismatched_pair_refused_http_serves(boot, tmp_path):
    need_image()
    chain, _ = ca_and_leaf(tmp_path)
    openssl("genpkey", "-algorithm", "RSA", "-pkeyopt", "rsa_keygen_bits:2048", "-out", str(tmp_path / "other.pem"))
    img = image_with_tls_files(tmp_path, {"cert.pem": chain, "key.pem": (tmp_path / "other.pem").read_bytes()})
    vm, get = boot_and_get(boot, image=img)
    assert re.search(r"^tls: EFI/vireo/tls/key.pem and EFI/vireo/tls/cert.pem: key does not match the "
                     r"certificate .*; HTTPS off, HTTP unaffected$", vm.text, re.M), vm.text
    # No silent fall-back to a generated key.
    assert "generated at boot" not in vm.text and "certificate from" not in vm.text
    assert vm.ready.group(3) is None, vm.ready.group(0)
    status, _, _ = get("/")
    assert status == 200
    assert metrics(get)["vireo_tls_ready"] == 0


def test_esp_oversized_cert_and_missing_key_refused(boot, tmp_path):
    # One byte past BOOT_TLS_FILE_MAX (64 KiB): boot/ refuses it unread; with
    # no key.pem beside it, that is said too.
    need_image()
    img = image_with_tls_files(tmp_path, {"cert.pem": b"#" * (64 * 1024 + 1)})
    vm, get = boot_and_get(boot, image=img)
    assert re.search(r"^tls: EFI/vireo/tls/cert.pem: larger than 65536 bytes, refused; HTTPS off, "
                     r"HTTP unaffected$", vm.text, re.M), vm.text
    assert re.search(r"^tls: EFI/vireo/tls/key.pem: missing \(give both", vm.text, re.M), vm.text
    assert vm.ready.group(3) is None, vm.ready.group(0)
    status, _, _ = get("/")
    assert status == 200


def test_esp_malformed_key_named(boot, tmp_path):
    need_image()
    chain, key = ca_and_leaf(tmp_path)
    img = image_with_tls_files(tmp_path, {"cert.pem": chain, "key.pem": key[:len(key) // 2]})
    vm, get = boot_and_get(boot, image=img)
    assert re.search(r"^tls: EFI/vireo/tls/key.pem: key: does not parse .*; HTTPS off, HTTP unaffected$",
                     vm.text, re.M), vm.text
    assert vm.ready.group(3) is None, vm.ready.group(0)
    assert get("/")[0] == 200


# ---- HTTPS ----

def need_image():
    make()  # incremental; the credentials are tracked, so other keys are rebuilt away


def curl(*args, timeout=60):
    return subprocess.run(["curl", "-sk", "--http1.1", "-D", "-", *args], capture_output=True, timeout=timeout)


def s_client(port, *args, data=b"", timeout=60):
    r = subprocess.run(["openssl", "s_client", "-connect", f"127.0.0.1:{port}", "-servername", "localhost",
                        "-ign_eof", *args], input=data, capture_output=True, timeout=timeout)
    return r.returncode, r.stdout.decode(errors="replace") + r.stderr.decode(errors="replace")


def metrics(get):
    status, _, body = get("/metrics")
    assert status == 200
    return parse_prometheus(body.decode())


def test_https_tls13_tls12_chain_alpn(boot):
    need_image()
    vm, get = boot_and_get(boot)
    assert vm.ready.group(4) == "443"
    _, _, page = get("/index.html")
    url = f"https://127.0.0.1:{vm.sport}/index.html"
    # The server's suite order decides (net/tls/patches/0001): ChaCha20
    # first, though curl (OpenSSL) lists AES-GCM first.
    for args, want in ((["--tlsv1.3"], "TLSv1.3 / TLS_CHACHA20_POLY1305_SHA256"),
                       (["--tlsv1.2", "--tls-max", "1.2"], "TLSv1.2 / ECDHE-ECDSA-CHACHA20-POLY1305")):
        r = curl("-v", *args, url)
        assert r.returncode == 0, r.stderr.decode()[-2000:]
        assert f"SSL connection using {want}" in r.stderr.decode()
        assert "ALPN: server accepted http/1.1" in r.stderr.decode()
        status, _, body = parse_response(r.stdout)
        assert status == 200 and body == page

    req = b"GET /healthz HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n\r\n"
    # The chain served is the certificate generated at boot.
    rc, out = s_client(vm.sport, "-tls1_3", "-alpn", "h2,http/1.1", "-showcerts", data=req)
    assert rc == 0, out[-2000:]
    assert "ALPN protocol: http/1.1" in out and "New, TLSv1.3, Cipher is" in out, out[-2000:]
    assert "HTTP/1.1 200 OK" in out and "\nok\n" in out
    served = re.findall(PEM_CERT, out, re.S)
    assert len(served) == 1 and re.search(r"CN ?= ?vireo", x509_text(served[0], "-subject"))
    # TLS 1.2 with each suite kind; no ALPN offered, none agreed.
    for suite in ("ECDHE-ECDSA-AES128-GCM-SHA256", "ECDHE-ECDSA-CHACHA20-POLY1305"):
        rc, out = s_client(vm.sport, "-tls1_2", "-cipher", suite, data=req)
        assert rc == 0 and f"Cipher is {suite}" in out and "No ALPN negotiated" in out, out[-2000:]
        assert "HTTP/1.1 200 OK" in out
    # Refused: TLS 1.1, a CBC suite, an h2-only ALPN still gets HTTP/1.1 semantics or nothing.
    rc, out = s_client(vm.sport, "-tls1_1", data=req)
    assert rc != 0 and "HTTP/1.1" not in out
    rc, out = s_client(vm.sport, "-tls1_2", "-cipher", "ECDHE-ECDSA-AES128-SHA", data=req)
    assert rc != 0 and "HTTP/1.1" not in out

    m = metrics(get)
    assert m["vireo_https_handshakes_total"] == 5
    assert m['vireo_https_sessions_total{version="TLSv1.2",cipher="TLS-ECDHE-ECDSA-WITH-CHACHA20-POLY1305-SHA256"}'] == 2
    assert m['vireo_https_sessions_total{version="TLSv1.3",cipher="TLS1-3-CHACHA20-POLY1305-SHA256"}'] == 2
    fails = {k: v for k, v in m.items() if k.startswith("vireo_https_handshake_failures_total")}
    assert sum(fails.values()) == 2, fails
    assert m["vireo_https_handshakes_active"] == 0
    # HTTPS's and TLS's families pass promtool too.
    assert promtool_findings(get("/metrics")[2]) == []
    # Served over HTTPS too, same routes: /metrics and a 404.
    r = curl(f"https://127.0.0.1:{vm.sport}/metrics")
    assert parse_response(r.stdout)[0] == 200
    r = curl(f"https://127.0.0.1:{vm.sport}/no-such-file")
    assert parse_response(r.stdout)[0] == 404


def read_until_eof(port, data, timeout=20):
    """Sends data on a plain TCP connection to port; everything the server
    sends until it closes."""
    with socket.create_connection(("127.0.0.1", port), timeout=timeout) as s:
        s.sendall(data)
        return read_all(s)


def test_failed_handshakes_send_their_alert(boot):
    """RFC 8446 6: every failure on the server's side ends with a fatal
    alert before the close. mbedTLS's TLS 1.3 code returned without one
    when no group was common (the HelloRetryRequest has none to ask for),
    and nothing answered a first record that is not TLS; the handshake hook
    (runtime/http/https.c) sends the alert the error calls for, and
    altcp_tls (net/port/patches/0004) closes with a FIN behind it instead of
    a reset that dropped it."""
    need_image()
    vm, get = boot_and_get(boot)
    req = b"GET /healthz HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n\r\n"
    cases = (
        (["-tls1_3", "-groups", "secp384r1"], "handshake failure", 40),   # no common group
        (["-tls1_3", "-ciphersuites", "TLS_AES_128_CCM_SHA256"], "handshake failure", 40),  # no common suite
        (["-tls1_2", "-cipher", "ECDHE-ECDSA-AES128-SHA"], "handshake failure", 40),
        (["-tls1_1", "-cipher", "DEFAULT@SECLEVEL=0"], "protocol version", 70),  # bad version
    )
    for args, name, number in cases:
        rc, out = s_client(vm.sport, "-msg", *args, data=req)
        assert rc != 0 and "HTTP/1.1" not in out, out[-2000:]
        assert re.search(r"^<<< TLS 1\.\d, Alert \[length 0002\], fatal", out, re.M), (args, out[-2000:])
        assert f"SSL alert number {number}" in out and name in out, (args, out[-2000:])
    # Not TLS: an HTTP request, then a handshake record longer than TLS allows.
    # The alert goes in a TLS 1.2 record (legacy version 0x0303), then EOF.
    assert read_until_eof(vm.sport, req) == bytes.fromhex("15 0303 0002 02 0a")  # unexpected_message
    assert read_until_eof(vm.sport, bytes.fromhex("16 0301 ffff") + b"x" * 64) == \
        bytes.fromhex("15 0303 0002 02 16")  # record_overflow
    m = metrics(get)
    fails = {k: v for k, v in m.items() if k.startswith("vireo_https_handshake_failures_total")}
    assert sum(fails.values()) == len(cases) + 2, fails
    # mbedTLS alerted for the suite and version cases itself; the hook for the group and the two not TLS.
    assert m["vireo_https_alerts_sent_total"] == 3, m["vireo_https_alerts_sent_total"]
    status, _, _ = get("/healthz")
    assert status == 200


def test_session_resumption(boot, tmp_path):
    """Session tickets: a second connection presenting the first one's
    ticket resumes, under TLS 1.3 (PSK with ECDHE) and 1.2; a ticket that
    is tampered with is refused and a full handshake follows. The same boot
    (debug=on for the TLS-ALPN-01 hook) switches certificates under load
    and answers TLS-ALPN-01 (check_cert_switch, check_alpn01)."""
    need_image()
    # check_cert_switch's load opens a few hundred connections from the
    # host's one address (QEMU's user network): past the per-prefix
    # handshake rate (30/s after a burst of 100), whose own test is
    # test_handshake_rate_flood_one_prefix. The rates are off here.
    vm, get = boot_and_get(boot, cmdline="debug https.handshake_rate_per_prefix=0 https.handshake_rate=0")
    req = b"GET /healthz HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n\r\n"
    for v in ("-tls1_3", "-tls1_2"):
        sess = str(tmp_path / f"sess{v}")
        rc, out = s_client(vm.sport, v, "-sess_out", sess, data=req)
        assert rc == 0 and re.search(r"^New, TLSv1\.[23]", out, re.M) and "\nok\n" in out, out[-2000:]
        rc, out = s_client(vm.sport, v, "-sess_in", sess, data=req)
        assert rc == 0 and re.search(r"^Reused, TLSv1\.[23]", out, re.M) and "\nok\n" in out, out[-2000:]
    m = metrics(get)
    assert m["vireo_https_resumptions_total"] == 2
    assert m["vireo_https_tickets_refused_total"] == 0
    assert m["vireo_https_handshakes_total"] == 4
    check_cert_switch(vm, get)
    check_alpn01(vm, get, tmp_path)


def der_sha256(der):
    import hashlib
    return ":".join(f"{b:02X}" for b in hashlib.sha256(der).digest())


def tls_get(port, sock=None, sni="localhost", keep=False):
    """One GET /healthz over TLS (a new connection, or sock kept alive):
    (status, the served leaf's SHA-256, the socket when keep)."""
    import ssl
    ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
    ctx.check_hostname, ctx.verify_mode = False, ssl.CERT_NONE
    if sock is None:
        sock = ctx.wrap_socket(socket.create_connection(("127.0.0.1", port), timeout=20), server_hostname=sni)
    sock.sendall(b"GET /healthz HTTP/1.1\r\nHost: localhost\r\n" +
                 (b"" if keep else b"Connection: close\r\n") + b"\r\n")
    head = b""
    while b"\r\n\r\nok\n" not in head:
        chunk = sock.recv(4096)
        if not chunk:
            break
        head += chunk
    status = int(head.split(b" ", 2)[1]) if head.startswith(b"HTTP/1.1 ") else 0
    fp = der_sha256(sock.getpeercert(binary_form=True))
    if not keep:
        sock.close()
        sock = None
    return status, fp, sock


def check_cert_switch(vm, get):
    """`cert regen` while a keep-alive connection, a stream of new
    connections and a handshake stopped half-way run: new connections get
    the new certificate from then on, the keep-alive one keeps working, the
    half-done handshake completes with the certificate it started with (the
    old one held until then: vireo_tls_certs_held 2, then 1), no request
    fails."""
    import ssl
    import threading
    _, fp0, keep = tls_get(vm.sport, keep=True)
    # A handshake stopped after the server read its ClientHello (its
    # certificate chosen and taken, the server's flight received).
    ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
    ctx.check_hostname, ctx.verify_mode = False, ssl.CERT_NONE
    inb, outb = ssl.MemoryBIO(), ssl.MemoryBIO()
    half = ctx.wrap_bio(inb, outb, server_hostname="localhost")
    raw = socket.create_connection(("127.0.0.1", vm.sport), timeout=20)
    with pytest.raises(ssl.SSLWantReadError):
        half.do_handshake()
    raw.sendall(outb.read())
    inb.write(raw.recv(16384))
    assert metrics(get)["vireo_tls_certs_held"] == 1

    results, stop = [], threading.Event()

    def new_conns():
        for _ in range(200):  # bounded; stops once the switch is seen and checked
            if stop.is_set():
                break
            try:
                results.append(tls_get(vm.sport)[:2])
            except OSError as e:
                results.append((0, repr(e)))

    def keep_alive():
        for _ in range(200):
            if stop.is_set():
                break
            try:
                results.append(tls_get(vm.sport, sock=keep, keep=True)[:2])
            except OSError as e:
                results.append((0, repr(e)))
    threads = [threading.Thread(target=new_conns), threading.Thread(target=keep_alive)]
    for t in threads:
        t.start()
    time.sleep(1)
    start = len(vm.text)
    vm.send("cert regen\r")
    vm.wait_for(r"^cert: generated and installed in \d+ ms", timeout=60, start=start)
    line = vm.wait_for(r"^tls: serving a new certificate: generated, EC P-256 key, names vireo,localhost,"
                       r"127\.0\.0\.1,0:0:0:0:0:0:0:1, not after \S+, sha256 ([0-9A-F:]{11})", start=start)
    # The replaced certificate stays while the stopped handshake holds it.
    assert metrics(get)["vireo_tls_certs_held"] == 2
    time.sleep(1.5)
    stop.set()
    for t in threads:
        t.join(timeout=120)
    # Finish the stopped handshake: the old certificate, and it serves.
    while True:
        try:
            half.do_handshake()
            break
        except ssl.SSLWantReadError:
            raw.sendall(outb.read())
            inb.write(raw.recv(16384))
    raw.sendall(outb.read())
    assert der_sha256(half.getpeercert(binary_form=True)) == fp0
    half.write(b"GET /healthz HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n\r\n")
    raw.sendall(outb.read())
    body = b""
    while b"\r\n\r\nok\n" not in body:
        try:
            body += half.read(4096)
        except ssl.SSLWantReadError:
            chunk = raw.recv(16384)
            if not chunk:
                break
            inb.write(chunk)
    assert body.startswith(b"HTTP/1.1 200 "), body
    raw.close()

    bad = [r for r in results if r[0] != 200]
    assert not bad, bad[:5]
    fps = [fp for _, fp in results]
    fp1 = tls_get(vm.sport)[1]
    assert fp1 != fp0 and fp1.startswith(line.group(1)), (fp0, fp1, line.group(1))
    assert set(fps) <= {fp0, fp1} and fp1 in fps, set(fps)
    # New connections switched once: none got the old one after the new.
    new_fps = [fp for fp in fps if fp == fp1]
    assert len(new_fps) >= 1
    # The keep-alive connection still works (and keeps its handshake's certificate).
    status, fpk, keep = tls_get(vm.sport, sock=keep, keep=True)
    assert status == 200 and fpk == fp0
    keep.close()
    print(f"cert regen under load: {len(results)} requests, 0 failed; "
          f"{sum(1 for f in fps if f == fp0)} on the old certificate, {len(new_fps)} on the new")
    m = metrics(get)
    assert m["vireo_tls_certs_held"] == 1
    assert m["vireo_tls_cert_installs_total"] == 1
    assert m['vireo_tls_cert_info{source="generated",names="vireo,localhost,127.0.0.1,0:0:0:0:0:0:0:1"}'] == 1
    start = len(vm.text)
    vm.send("cert\r")
    vm.wait_for(r"^issuer:\s+self-signed", timeout=30, start=start)
    assert re.search(rf"^sha256:\s+{fp1}$", vm.text[start:], re.M), vm.text[start:]
    assert re.search(r"^source:\s+generated \(no store", vm.text[start:], re.M), vm.text[start:]


ACME_ID_OID = bytes.fromhex("06082b0601050507011f")  # 1.3.6.1.5.5.7.1.31, RFC 8737's acmeIdentifier


def check_alpn01(vm, get, tmp_path):
    """TLS-ALPN-01: with a challenge set for acme.example, an acme-tls/1
    ClientHello naming it gets a certificate for it with the critical
    acmeIdentifier extension holding the value set, acme-tls/1 agreed and
    no HTTP; one naming another name, or after the challenge is cleared, is
    refused with no_application_protocol; a normal client naming
    acme.example gets the served certificate."""
    import hashlib
    acme_id = hashlib.sha256(b"token.thumbprint").digest()
    start = len(vm.text)
    vm.send(f"tls-alpn01 set acme.example {acme_id.hex()}\r")
    vm.wait_for(r"^tls-alpn01: set acme\.example: 0 \(1 set\)", timeout=60, start=start)
    req = b"GET /healthz HTTP/1.1\r\nHost: acme.example\r\n\r\n"

    def acme(name, *args):
        r = subprocess.run(["openssl", "s_client", "-connect", f"127.0.0.1:{vm.sport}", "-servername", name,
                            "-alpn", "acme-tls/1", "-showcerts", "-ign_eof", *args], input=req,
                           capture_output=True, timeout=60)
        return r.returncode, r.stdout.decode(errors="replace") + r.stderr.decode(errors="replace")
    served = tls_get(vm.sport)[1]
    before = metrics(get)["vireo_http_requests_total"]
    for v in ("-tls1_3", "-tls1_2"):
        rc, out = acme("acme.example", v)
        assert rc == 0 and "ALPN protocol: acme-tls/1" in out, out[-3000:]
        assert "HTTP/1.1" not in out, out[-3000:]
        certs = re.findall(PEM_CERT, out, re.S)
        assert len(certs) == 1, out
        text = x509_text(certs[0], "-text")
        assert re.search(r"DNS:acme\.example\n", text) and "Subject: CN" in text, text
        assert re.search(r"1\.3\.6\.1\.5\.5\.7\.1\.31: critical", text), text
        der = subprocess.run(["openssl", "x509", "-outform", "DER"], input=certs[0].encode(),
                             capture_output=True, check=True).stdout
        # Extension: OID, critical TRUE, extnValue OCTET STRING { OCTET STRING (32) acme_id }
        assert ACME_ID_OID + bytes.fromhex("0101ff0422" "0420") + acme_id in der
    # The GETs sent on them never reached the server: the only request
    # counted since is the /metrics that read `before`.
    assert metrics(get)["vireo_http_requests_total"] == before + 1
    # Another name, no challenge: refused (no_application_protocol, alert 120).
    rc, out = acme("other.example")
    assert rc != 0 and "no application protocol" in out, out[-2000:]
    # A normal client naming acme.example: the served certificate, HTTP.
    status, fp, _ = tls_get(vm.sport, sni="acme.example")
    assert status == 200 and fp == served
    # acme-tls/1 and http/1.1 offered: http/1.1 wins, the normal certificate.
    rc, out = s_client(vm.sport, "-servername", "acme.example", "-alpn", "acme-tls/1,http/1.1", data=req)
    assert rc == 0 and "ALPN protocol: http/1.1" in out, out[-2000:]
    m = metrics(get)
    assert m["vireo_https_alpn01_handshakes_total"] == 2
    assert m["vireo_https_alpn01_refused_total"] == 1
    assert m["vireo_https_alpn01_challenges"] == 1
    # A burst of acme-tls/1 handshakes: each gets the challenge certificate
    # made at set time (no key made per ClientHello: the TLS heap is where
    # it was before, nothing held), and each is closed after its handshake.
    import ssl
    ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
    ctx.check_hostname, ctx.verify_mode = False, ssl.CERT_NONE
    ctx.set_alpn_protocols(["acme-tls/1"])
    heap = m["vireo_tls_heap_in_use_bytes"]
    first = None
    for _ in range(20):
        with ctx.wrap_socket(socket.create_connection(("127.0.0.1", vm.sport), timeout=20),
                             server_hostname="acme.example") as t:
            assert t.selected_alpn_protocol() == "acme-tls/1"
            der = t.getpeercert(binary_form=True)
            first = first or der
            assert der == first and acme_id in der
            t.sendall(b"GET /healthz HTTP/1.1\r\nHost: acme.example\r\n\r\n")
            try:
                assert t.recv(4096) == b""
            except ssl.SSLError:
                pass  # the close_notify came with the FIN: also closed
    m = metrics(get)
    assert m["vireo_https_alpn01_handshakes_total"] == 22
    assert m["vireo_tls_heap_in_use_bytes"] == heap, (heap, m["vireo_tls_heap_in_use_bytes"])
    assert m["vireo_tls_certs_held"] == 1 and m["vireo_https_handshakes_active"] == 0
    start = len(vm.text)
    vm.send("tls-alpn01 clear\r")
    vm.wait_for(r"^tls-alpn01: cleared \(0 set\)", timeout=30, start=start)
    rc, out = acme("acme.example")
    assert rc != 0 and "no application protocol" in out, out[-2000:]
    m = metrics(get)
    assert m["vireo_https_alpn01_refused_total"] == 2 and m["vireo_https_alpn01_challenges"] == 0
    assert m["vireo_tls_heap_alloc_failures_total"] == 0


def test_handshake_limits_configurable(boot):
    """https.handshakes_per_source= and https.handshakes= replace the
    defaults (8 and 16): with 3 per source, three stalled handshakes from one
    address hold their slots and the fourth is reset on accept as
    limit_source; once they are gone a client is served again."""
    need_image()
    # A bad tls.names= is refused whole with a warning; the default names stand.
    # (https.hello_timeout= at its most: the held handshakes send nothing
    # and must outlive the metrics polls below; test_hello_deadline has the
    # default's.)
    vm, get = boot_and_get(boot, cmdline="https.handshakes_per_source=3 https.handshakes=4 "
                                         "https.hello_timeout=10000 tls.names=ok.example,bad_name")
    assert re.search(r"^tls: warning: tls\.names=ok\.example,bad_name: not a DNS name \(letters, digits, "
                     r"'-', '\.'\): \"bad_name\"; the default names instead$", vm.text, re.M), vm.text
    assert "generated at boot in" in vm.text and "(names vireo,localhost," in vm.text, vm.text
    held = [socket.create_connection(("127.0.0.1", vm.sport), timeout=20) for _ in range(3)]
    for _ in range(100):
        if metrics(get)["vireo_https_handshakes_active"] == 3:
            break
        time.sleep(0.1)
    extra = socket.create_connection(("127.0.0.1", vm.sport), timeout=20)
    for _ in range(100):
        m = metrics(get)
        if m['vireo_https_handshake_failures_total{reason="limit_source"}'] >= 1:
            break
        time.sleep(0.1)
    assert m['vireo_https_handshake_failures_total{reason="limit_source"}'] == 1, m
    assert m["vireo_https_handshakes_active"] == 3
    for s in held + [extra]:
        s.close()
    for _ in range(100):
        if metrics(get)["vireo_https_handshakes_active"] == 0:
            break
        time.sleep(0.1)
    r = curl(f"https://127.0.0.1:{vm.sport}/healthz")
    assert parse_response(r.stdout)[0] == 200


def test_hello_deadline(boot):
    """A TCP connection to the HTTPS port that sends no ClientHello holds a
    handshake slot until https.hello_timeout= (default 3 s, checked every
    0.5 s), not the 10 s header timeout: four silent ones are closed within
    3-5 s of accept and counted (vireo_https_hello_timeouts_total), a
    ClientHello cut short after its first bytes likewise, and a client that
    sends its ClientHello is served. On main they stay for 10 s."""
    need_image()
    vm, get = boot_and_get(boot)
    assert metrics(get)["vireo_https_connections_max"] == 64  # -m 64: the floor (net/tls/tlsmem.h)
    t0 = time.monotonic()
    silent = [socket.create_connection(("127.0.0.1", vm.sport), timeout=20) for _ in range(4)]
    cut = socket.create_connection(("127.0.0.1", vm.sport), timeout=20)
    cut.sendall(b"\x16\x03\x01\x02\x00\x01\x00\x01\xfc\x03\x03")  # a ClientHello's first 11 bytes
    for _ in range(50):
        if metrics(get)["vireo_https_handshakes_active"] == 5:
            break
        time.sleep(0.1)
    assert metrics(get)["vireo_https_handshakes_active"] == 5
    r = curl(f"https://127.0.0.1:{vm.sport}/healthz")  # a ClientHello at once: served
    assert parse_response(r.stdout)[0] == 200
    gone = []
    for s in silent + [cut]:
        s.settimeout(max(0.1, t0 + 8 - time.monotonic()))
        try:
            assert s.recv(1) == b""
        except ConnectionResetError:
            pass
        gone.append(time.monotonic() - t0)
        s.close()
    # slirp connects the guest a little after our connect() returns
    assert all(2.5 <= g <= 6 for g in gone), gone
    m = metrics(get)
    assert m["vireo_https_hello_timeouts_total"] == 5, m
    assert m['vireo_https_handshake_failures_total{reason="timeout"}'] == 5
    assert m["vireo_https_handshakes_active"] == 0 and m["vireo_https_handshakes_total"] == 1


def _pp2(src, sport=40000, dst="10.0.2.15", dport=443):
    """A PROXY protocol v2 header (PROXY, TCP over IPv4) naming src."""
    body = socket.inet_aton(src) + socket.inet_aton(dst) + sport.to_bytes(2, "big") + dport.to_bytes(2, "big")
    return b"\r\n\r\n\x00\r\nQUIT\n" + b"\x21\x11" + len(body).to_bytes(2, "big") + body


def test_proxy_header_before_tls(boot, tmp_path):
    """PROXY headers (v1 and v2) on the HTTPS port from a proxy.trusted=
    peer (user networking's 10.0.2.2) are taken before the TLS handshake:
    the client they name is the one metrics.allow= and the handshake limit
    per source (1 here) see; a trusted peer without one speaks TLS as
    itself; a malformed one is reset; HAProxy 2.6 in tcp mode with
    send-proxy-v2 in front works end to end. On main the header reaches
    mbedTLS (a bad record: the handshake fails)."""
    import ssl
    need_image()
    vm, _ = boot_and_get(boot, cmdline="proxy.trusted=10.0.2.2/32 metrics.allow=192.0.2.0/24,127.0.0.1/32 "
                                       "https.handshakes_per_source=1 https.hello_timeout=10000")
    ctx = ssl.create_default_context()
    ctx.check_hostname = False
    ctx.verify_mode = ssl.CERT_NONE

    def mget():
        with socket.create_connection(("127.0.0.1", vm.port), timeout=20) as s:
            s.sendall(b"GET /metrics HTTP/1.1\r\nHost: x\r\nX-Forwarded-For: 192.0.2.1\r\n"
                      b"Connection: close\r\n\r\n")
            st, _, body = parse_response(read_all(s))
        assert st == 200
        return parse_prometheus(body.decode())

    def tls_get(header, path="/metrics"):
        raw = socket.create_connection(("127.0.0.1", vm.sport), timeout=30)
        if header:
            raw.sendall(header)
        with ctx.wrap_socket(raw, server_hostname="localhost") as s:
            s.sendall(f"GET {path} HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n".encode())
            return parse_response(read_all(s))[0]
    base = mget()
    assert tls_get(b"PROXY TCP4 192.0.2.7 10.0.2.15 5555 443\r\n") == 200
    assert tls_get(_pp2("192.0.2.8")) == 200
    assert tls_get(None) == 403  # the proxy's own connection: not in metrics.allow=
    assert tls_get(_pp2("203.0.113.9")) == 403
    # a malformed header: reset, counted
    with socket.create_connection(("127.0.0.1", vm.sport), timeout=20) as s:
        s.sendall(b"PROXY BOGUS 1 2\r\n\x16\x03\x01")
        try:
            assert s.recv(100) == b""
        except ConnectionResetError:
            pass
    m = mget()
    assert m["vireo_http_proxy_headers_total"] - base["vireo_http_proxy_headers_total"] == 3
    assert m["vireo_http_proxy_refused_total"] - base["vireo_http_proxy_refused_total"] == 1
    # The handshake limit per source counts the named client: one handshake
    # held (a header, no ClientHello) for 192.0.2.20 refuses a second for
    # it, not one for 192.0.2.21.
    held = socket.create_connection(("127.0.0.1", vm.sport), timeout=20)
    held.sendall(_pp2("192.0.2.20"))
    second = socket.create_connection(("127.0.0.1", vm.sport), timeout=20)
    second.sendall(_pp2("192.0.2.20"))
    try:
        assert second.recv(100) == b""
    except ConnectionResetError:
        pass
    second.close()
    assert tls_get(_pp2("192.0.2.21"), "/healthz") == 200
    m = mget()
    assert m['vireo_https_handshake_failures_total{reason="limit_source"}'] - \
        base['vireo_https_handshake_failures_total{reason="limit_source"}'] == 1
    held.close()
    # HAProxy 2.6, tcp mode, send-proxy-v2: the client it names is 127.0.0.1
    hport = free_tcp_port()
    cfg = tmp_path / "haproxy.cfg"
    cfg.write_text(f"""global
    log stderr local0 err
defaults
    mode tcp
    timeout connect 10s
    timeout client 30s
    timeout server 30s
listen tls
    bind 127.0.0.1:{hport}
    server vireo 127.0.0.1:{vm.sport} send-proxy-v2
""")
    hap = subprocess.Popen(["haproxy", "-db", "-f", str(cfg)], stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    try:
        for _ in range(50):
            try:
                socket.create_connection(("127.0.0.1", hport), timeout=1).close()
                break
            except OSError:
                time.sleep(0.1)
        r = curl(f"https://127.0.0.1:{hport}/metrics")
        assert parse_response(r.stdout)[0] == 200, r.stdout[:200]
    finally:
        hap.terminate()
        hap.wait(10)
    m = mget()
    assert m["vireo_http_proxy_headers_total"] - base["vireo_http_proxy_headers_total"] >= 6
    assert m["vireo_tls_heap_alloc_failures_total"] == 0


def test_ticket_key_rotation(boot, tmp_path):
    """https.ticket_rotate=6: the ticket keys rotate every 6 s, two kept. A
    ticket issued before one rotation still resumes; one issued before two
    is refused and a full handshake follows (TLS 1.3); the counters move.
    Each step starts right after a rotation was seen, so the next one is
    seconds away."""
    need_image()
    vm, get = boot_and_get(boot, cmdline="https.ticket_rotate=6")
    req = b"GET /healthz HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n\r\n"

    def after_rotation(n):
        for _ in range(300):
            m = metrics(get)
            if m["vireo_https_ticket_key_rotations_total"] >= n:
                assert m["vireo_https_ticket_key_rotations_total"] == n, "missed a rotation"
                return
            time.sleep(0.1)
        raise AssertionError(f"no rotation {n}")

    def conn(*args):
        rc, out = s_client(vm.sport, "-tls1_3", *args, data=req)
        assert rc == 0 and "\nok\n" in out, out[-2000:]
        return re.search(r"^(New|Reused), TLSv1\.3", out, re.M).group(1)

    old, new = str(tmp_path / "old"), str(tmp_path / "new")
    after_rotation(1)
    assert conn("-sess_out", old) == "New"
    after_rotation(2)
    assert conn("-sess_in", old) == "Reused"       # one rotation old: its key is kept
    assert conn("-sess_out", new) == "New"
    after_rotation(3)
    assert conn("-sess_in", old) == "New"          # two rotations old: its key is gone
    assert conn("-sess_in", new) == "Reused"
    m = metrics(get)
    assert m["vireo_https_ticket_key_rotations_total"] == 3, "a rotation in the middle: the steps ran late"
    assert m["vireo_https_resumptions_total"] == 2
    assert m["vireo_https_tickets_refused_total"] == 1
    assert m["vireo_https_handshakes_total"] == 5


def test_http_redirect(boot):
    need_image()
    # https.public_port=: the port a forward exposes, not the one vireo
    # listens on; the query is kept.
    # tls.names=: the generated certificate's names, lower-cased, no loopback.
    vm, get = boot_and_get(boot, cmdline="http.redirect=on https=443 https.public_port=8443 "
                                         "tls.names=WWW.Example.test,vireo.example")
    assert "generated at boot in" in vm.text and "(names www.example.test,vireo.example;" in vm.text, vm.text
    with socket.create_connection(("127.0.0.1", vm.port), timeout=20) as s:
        s.sendall(b"GET /a%20b/c.html?q=1&r=%2F HTTP/1.1\r\nHost: example.org:8080\r\nConnection: close\r\n\r\n")
        status, headers, body = parse_response(read_all(s))
    assert status == 301 and body == b""
    assert headers["location"] == "https://example.org:8443/a%20b/c.html?q=1&r=%2F"
    # HTTP/1.0 without Host: the address the request came in on.
    with socket.create_connection(("127.0.0.1", vm.port), timeout=20) as s:
        s.sendall(b"GET /x HTTP/1.0\r\n\r\n")
        status, headers, _ = parse_response(read_all(s))
    assert status == 301 and headers["location"] == "https://10.0.2.15:8443/x"
    status, _, body = get("/healthz")
    assert status == 200 and body == b"ok\n"
    r = curl(f"https://127.0.0.1:{vm.sport}/")
    assert parse_response(r.stdout)[0] == 200
    text = x509_text(served_certs(vm.sport)[0], "-text")
    assert re.search(r"DNS:www\.example\.test, DNS:vireo\.example\n", text), text
    assert re.search(r"Subject: CN ?= ?www\.example\.test\n", text), text
    # (/metrics over HTTPS: http.redirect=on sends plain HTTP there.)
    m = parse_prometheus(parse_response(curl(f"https://127.0.0.1:{vm.sport}/metrics").stdout)[2].decode())
    assert m['vireo_tls_cert_info{source="generated",names="www.example.test,vireo.example"}'] == 1


def test_thousand_requests_16_tls_connections_heap_back(boot):
    import ssl
    import threading
    need_image()
    vm, get = boot_and_get(boot)
    m = metrics(get)
    idle, kheap = m["vireo_tls_heap_in_use_bytes"], m["vireo_mem_heap_in_use_bytes"]
    ctx = ssl.create_default_context()
    ctx.check_hostname, ctx.verify_mode = False, ssl.CERT_NONE
    errors, counts = [], [0] * 16
    # Handshakes one after the other (one source may run
    # https.handshakes_per_source=, 8, at once), then all 16 in parallel.
    conns = [ctx.wrap_socket(socket.create_connection(("127.0.0.1", vm.sport), timeout=60),
                             server_hostname="localhost") for _ in range(16)]

    # An idle HTTPS connection holds no buffer set (runtime/http/server.c):
    # each request takes one again. Odd clients send heads larger than
    # land[] (512 B: a decrypted chunk that does not fit takes the set,
    # server_rx_short()), every fourth pipelines two in one record (the
    # second is held in the set after the first is answered).
    pad = b"X-Pad: " + b"p" * 1400 + b"\r\n"

    def client(i):
        want = 63 if i < 8 else 62
        req = b"GET /index.html HTTP/1.1\r\nHost: localhost\r\n" + (pad if i % 2 else b"") + b"\r\n"
        try:
            s = conns[i]
            while counts[i] < want:
                k = 2 if i % 4 == 1 and want - counts[i] >= 2 else 1
                s.sendall(req * k)
                resps, _ = read_responses(s, k)
                assert [r[0] for r in resps] == [200] * k
                counts[i] += k
        except Exception as e:  # noqa: BLE001 - reported below
            errors.append(repr(e))

    threads = [threading.Thread(target=client, args=(i,)) for i in range(16)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(300)
    assert not errors, errors[:3]
    assert sum(counts) == 1000
    # 16 idle: none holds a buffer set (16,128 B each when they kept one)
    m = metrics(get)
    assert m["vireo_http_bufsets_used"] <= 1, m["vireo_http_bufsets_used"]  # the /metrics request's own
    assert (m["vireo_mem_heap_in_use_bytes"] - kheap) / 16 < 4096, m["vireo_mem_heap_in_use_bytes"] - kheap
    for s in conns:
        s.close()
    # Every connection gone, the TLS heap back at its idle level.
    for _ in range(100):
        m = metrics(get)
        if m["vireo_https_connections_active"] == 0:
            break
        time.sleep(0.1)
    assert m["vireo_https_connections_active"] == 0
    assert m["vireo_tls_heap_in_use_bytes"] == idle
    assert m["vireo_tls_heap_alloc_failures_total"] == 0
    assert m["vireo_https_handshakes_total"] == 16


def test_bulk_grants_bounded(boot):
    """HTTPS_BULK_MAX (2) connections at most may keep 32 KiB queued
    (runtime/http/https.h, the heap sum in net/port/lwipopts.h): four readers that
    stop reading with 64 KiB responses pipelined stall holding their
    queues; two hold grants, the others are refused one and keep 8 KiB.
    Once read, every body is whole and the grants are back."""
    import ssl
    need_image()
    vm, get = boot_and_get(boot)
    status, _, want = get("/64k.bin")
    assert status == 200 and len(want) == 65536
    ctx = ssl.create_default_context()
    ctx.check_hostname, ctx.verify_mode = False, ssl.CERT_NONE
    n_resp = 24
    conns = []
    for _ in range(4):
        raw = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        raw.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
        raw.settimeout(60)
        raw.connect(("127.0.0.1", vm.sport))
        s = ctx.wrap_socket(raw, server_hostname="localhost")
        s.sendall(b"GET /64k.bin HTTP/1.1\r\nHost: localhost\r\n\r\n" * n_resp)
        conns.append(s)
    # 4 x 24 x 64 KiB is more than the path between can buffer: the
    # senders stall with their queues full.
    for _ in range(100):
        m = metrics(get)
        if m["vireo_https_bulk_refused_total"] >= 2 and m["vireo_https_bulk_grants"] == 2:
            break
        time.sleep(0.1)
    assert m["vireo_https_bulk_grants"] == 2, m
    assert m["vireo_https_bulk_grants_peak"] == 2
    assert m["vireo_https_bulk_refused_total"] >= 2
    for s in conns:
        resps, _ = read_responses(s, n_resp)
        assert all(r[0] == 200 and r[2] == want for r in resps)
    for s in conns:
        s.close()
    for _ in range(100):
        m = metrics(get)
        if m["vireo_https_connections_active"] == 0:
            break
        time.sleep(0.1)
    assert m["vireo_https_bulk_grants"] == 0
    assert m["vireo_https_bulk_grants_peak"] == 2
    assert m["vireo_lwip_mem_errors_total"] == 0


def test_handshake_flood_and_garbage_legit_served(boot, netns):
    """Two flood sources try to hold every handshake slot with stalled
    ClientHellos, a third sends garbage, truncated and scrambled ones; a
    legitimate client on a fourth address keeps its connection and opens new
    ones throughout. Afterwards nothing is left and the TLS heap is back."""
    import json
    import sys
    need_image()
    addrs = ["10.77.0.3", "10.77.0.4", "10.77.0.5"]
    for a in addrs:
        subprocess.run(["ip", "-n", netns.name, "addr", "add", f"{a}/24", "dev", netns.tap], check=True)
    vm = boot(image=os.path.join(BUILD, "vireo.img"), cmdline=f"ip={netns.guest_ip}/24 gw={netns.host_ip}",
              wrap=netns.wrap, extra=netns.qemu_args())
    vm.wait_for(READY, timeout=120)

    def get(path):
        r = netns.run("curl", "-s", "-D", "-", f"http://{netns.guest_ip}{path}", timeout=30)
        return parse_response(r.stdout)
    idle = metrics(get)["vireo_tls_heap_in_use_bytes"]
    r = netns.run(sys.executable, os.path.join(os.path.dirname(__file__), "tls_flood.py"), netns.guest_ip, "443",
                  "10.77.0.3", f"{netns.host_ip},10.77.0.5", "10.77.0.4", timeout=300)
    assert r.returncode == 0, r.stderr.decode()[-3000:]
    out = json.loads(r.stdout)
    assert out["legit_errors"] == [] and out["legit_ok"] == 15, out
    # The flood got at most its share of slots, the rest was refused.
    assert out["held"] <= 2 * 8 and out["refused"] >= 2 * 24 - 16, out
    m = metrics(get)
    fails = {k.split('"')[1]: v for k, v in m.items() if k.startswith("vireo_https_handshake_failures_total")}
    # Garbage fails as malformed (or is refused by the limits with the rest
    # of its source's burst), truncated ones as closed; every attempt counted.
    assert fails["malformed"] >= 1 and fails["closed"] >= 1, fails
    assert fails["limit_source"] + fails["limit"] >= 1, fails
    assert m["vireo_https_handshakes_total"] == 1 + 5, m
    assert m["vireo_tls_heap_alloc_failures_total"] == 0
    for _ in range(100):
        m = metrics(get)
        if m["vireo_https_connections_active"] == 0:
            break
        time.sleep(0.2)
    assert m["vireo_https_connections_active"] == 0 and m["vireo_https_handshakes_active"] == 0, m
    assert m["vireo_tls_heap_in_use_bytes"] == idle


def test_handshake_rate_flood_one_prefix(boot, netns):
    """A handshake flood from one /24 (eight addresses, each replaying one
    recorded ClientHello as fast as the server answers or resets it) for
    20 s, while a legitimate client on another prefix alternates plain HTTP
    and HTTPS requests on new connections: the legitimate client gets >= 99%
    of its requests through, the flood gets at most its prefix's bucket
    (burst + rate x time) and the rest is reset on accept and counted; after
    it the flood's prefix gets a handshake again. The rates are set for TCG
    (a handshake costs tens of milliseconds here). With the buckets off
    (VIREO_TEST_HSRATE_OFF=1, which boots with both rates 0) the test fails:
    nothing is rate limited and the flood gets every handshake it asks.
    The CPU share is set to 25% of 10 ms windows, so the flood's first
    burst (ten handshakes of about 25 ms of steps each) waits for it: the
    steps' time stays within 25% of the flood's span plus a window and a
    step. Last, a burst of the flood prefix's ClientHellos queues and a
    client from another prefix gets its turn within a few flood steps
    (fair turns by prefix; one FIFO served it after the whole burst)."""
    import json
    import sys
    need_image()
    rate, burst, secs = 5, 10, 20
    flood_addrs = [f"10.77.1.{i}" for i in range(2, 10)]
    for a in flood_addrs:
        subprocess.run(["ip", "-n", netns.name, "addr", "add", f"{a}/32", "dev", netns.tap], check=True)
    rates = (f"https.handshake_rate_per_prefix={rate} https.handshake_burst_per_prefix={burst} "
             "https.handshake_rate=20 https.handshake_burst=20 https.handshake_share=25")
    if os.environ.get("VIREO_TEST_HSRATE_OFF") in ("1", "all"):
        rates = "https.handshake_rate_per_prefix=0 https.handshake_rate=0"
    if os.environ.get("VIREO_TEST_HSRATE_OFF") == "all":  # the pass bound off too: a figure, not a test
        rates += " https.handshake_pass_us=0"
    vm = boot(image=os.path.join(BUILD, "vireo.img"), cmdline=f"ip={netns.guest_ip}/24 gw={netns.host_ip} {rates}",
              wrap=netns.wrap, extra=netns.qemu_args())
    vm.wait_for(READY, timeout=120)

    def get(path):
        r = netns.run("curl", "-s", "-D", "-", f"http://{netns.guest_ip}{path}", timeout=30)
        return parse_response(r.stdout)
    m0 = metrics(get)
    t0 = time.monotonic()
    r = netns.run(sys.executable, os.path.join(os.path.dirname(__file__), "tls_rate_flood.py"), netns.guest_ip,
                  netns.host_ip, ",".join(flood_addrs), str(secs), timeout=120)
    assert r.returncode == 0, r.stderr.decode()[-3000:]
    out = json.loads(r.stdout)
    m = metrics(get)
    span = time.monotonic() - t0
    limited = {k.split('"')[1]: v for k, v in m.items() if k.startswith("vireo_https_handshakes_rate_limited")}
    steps, step_s = m["vireo_https_handshake_steps_total"], m["vireo_https_handshake_step_seconds_total"]
    print(f"\nflood: {out['flood_answered']} answered, {out['flood_refused']} refused, {out['flood_other']} other; "
          f"legit plain {out['plain_ok']}/{out['plain_ok'] + out['plain_fail']} "
          f"(median {sorted(out['plain_ms'] or [0])[len(out['plain_ms']) // 2]} ms), "
          f"https {out['https_ok']}/{out['https_ok'] + out['https_fail']} "
          f"(median {sorted(out['https_ms'] or [0])[len(out['https_ms']) // 2]} ms); limited {limited}; "
          f"{steps} steps, {step_s:.3f} s, {m['vireo_https_handshakes_total']} handshakes, "
          f"longest step {m['vireo_https_handshake_step_max_seconds'] * 1000:.1f} ms, "
          f"{m['vireo_https_handshake_steps_deferred_total']} deferred, "
          f"{m.get('vireo_https_handshake_share_waits_total')} share waits over {span:.1f} s")
    for name in ("plain", "https"):
        n = out[name + "_ok"] + out[name + "_fail"]
        assert n >= 20 and out[name + "_ok"] >= 0.99 * n, {k: v for k, v in out.items() if not k.endswith("_ms")}
    # The flood's prefix got at most its bucket (its clients' handshakes and
    # nothing else from that /24), the rest was reset and counted.
    assert out["flood_answered"] <= burst + rate * (secs + 2), out
    assert out["flood_refused"] >= 10 * out["flood_answered"], out
    assert limited["prefix"] >= out["flood_refused"] // 2 and limited["global"] == 0, (limited, out)
    # The pass bound engaged: ClientHellos that arrived in one pass behind a
    # step (8 ms here, over the 1 ms budget) waited for the next.
    assert m["vireo_https_handshake_steps_deferred_total"] >= 1, m
    # The window's share engaged and held (runtime/http/hsrate.h: at most
    # share x (span + window) plus one step's overrun).
    if os.environ.get("VIREO_TEST_HSRATE_OFF") is None:
        step_s = m["vireo_https_handshake_step_seconds_total"] - m0["vireo_https_handshake_step_seconds_total"]
        assert m["vireo_https_handshake_share_waits_total"] >= 1, m
        assert step_s <= 0.25 * (span + 0.010) + m["vireo_https_handshake_step_max_seconds"], (step_s, span)
    # Recovery: the bucket refills (burst / rate = 2 s) and the flood's
    # prefix, like everyone, gets its handshakes again.
    time.sleep(burst / rate + 1)
    for a in flood_addrs[:3]:
        c = netns.run("curl", "-sk", "--http1.1", "--interface", a, "-o", "/dev/null", "-w", "%{http_code}",
                      f"https://{netns.guest_ip}/index.html", timeout=30)
        assert c.stdout == b"200", c
    # Fair turns (hsfair in runtime/http/hsrate.h): the flood's prefix's
    # bucket full again, a burst of its ClientHellos queues behind the CPU
    # share (25%: one step, then three steps' time of other work), then a
    # client from another prefix sends the same ClientHello and, answered,
    # makes an HTTPS request. Served round robin by prefix, each of its
    # steps waits for at most the step running and one flood step: its
    # hello is answered within 3 flood answers and its request completes
    # before the burst is all served, where one FIFO served the whole burst
    # first (VIREO_TEST_HSFAIR_FIFO=1 leaves the checks out, prints the
    # figures: run it on the old code).
    time.sleep(1.0)
    r = netns.run(sys.executable, os.path.join(os.path.dirname(__file__), "tls_fair_burst.py"), netns.guest_ip,
                  netns.host_ip, ",".join(flood_addrs), str(burst), timeout=120)
    assert r.returncode == 0, r.stderr.decode()[-3000:]
    fb = json.loads(r.stdout)
    assert fb["hello_ms"] is not None and fb["legit_ms"] is not None and len(fb["flood_ms"]) >= burst - 3, fb
    during = sum(fb["hello_sent_ms"] < t < fb["hello_ms"] for t in fb["flood_ms"])
    before = sum(t < fb["legit_ms"] for t in fb["flood_ms"])
    print(f"fair burst: {len(fb['flood_ms'])} flood answers at {fb['flood_ms']} ms, {fb['flood_refused']} refused; "
          f"the other prefix's hello sent at {fb['hello_sent_ms']} ms, answered at {fb['hello_ms']} ms "
          f"({during} flood answers meanwhile); its HTTPS request done at {fb['legit_ms']} ms "
          f"(after {before} flood answers)")
    if os.environ.get("VIREO_TEST_HSFAIR_FIFO") is None:
        assert during <= 3 and before < len(fb["flood_ms"]), fb
    for _ in range(100):
        m = metrics(get)
        if m["vireo_https_connections_active"] == 0:
            break
        time.sleep(0.2)
    assert m["vireo_https_handshakes_active"] == 0 and m["vireo_https_connections_active"] == 0, m
    assert m["vireo_tls_heap_alloc_failures_total"] == 0


def test_testssl_no_high_or_critical(boot, tmp_path):
    """testssl.sh (Debian's package) against the appliance, with a
    certificate from a test CA that testssl is told to trust (the one generated
    at boot is self-signed: testssl rates that CRITICAL whatever the TLS
    configuration) and a CRL distribution point (no revocation URI is HIGH).
    Protocols, cipher categories, forward secrecy, server preference, server
    defaults and certificate, vulnerabilities; the client simulations are
    left out for time. No finding rated HIGH or CRITICAL."""
    import json
    if not shutil.which("testssl"):
        pytest.skip("testssl.sh not installed (tools/deps.sh test installs it)")

    def ssl_(*a):
        subprocess.run(["openssl", *a], check=True, capture_output=True, cwd=tmp_path)
    ssl_("req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256", "-nodes", "-keyout", "ca.key",
         "-out", "ca.pem", "-days", "365", "-subj", "/CN=vireo test CA",
         "-addext", "basicConstraints=critical,CA:TRUE", "-addext", "keyUsage=critical,keyCertSign,cRLSign")
    ssl_("req", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256", "-nodes", "-keyout", "leaf.key",
         "-out", "leaf.csr", "-subj", "/CN=localhost")
    (tmp_path / "ext").write_text("subjectAltName=DNS:localhost,IP:127.0.0.1\n"
                                  "basicConstraints=critical,CA:FALSE\n"
                                  "keyUsage=critical,digitalSignature\nextendedKeyUsage=serverAuth\n"
                                  "crlDistributionPoints=URI:http://localhost/ca.crl\n")
    ssl_("x509", "-req", "-in", "leaf.csr", "-CA", "ca.pem", "-CAkey", "ca.key", "-CAcreateserial",
         "-out", "leaf.pem", "-days", "365", "-extfile", "ext")
    (tmp_path / "chain.pem").write_text((tmp_path / "leaf.pem").read_text() + (tmp_path / "ca.pem").read_text())
    make(f"TLS_CERT={tmp_path / 'chain.pem'}", f"TLS_KEY={tmp_path / 'leaf.key'}")
    vm, get = boot_and_get(boot)
    assert vm.ready.group(4) == "443"
    out = tmp_path / "testssl.json"
    r = subprocess.run(["testssl", "--quiet", "--color", "0", "--warnings", "batch", "--add-ca",
                        str(tmp_path / "ca.pem"), "--jsonfile", str(out), "-p", "-s", "-f", "-P", "-S", "-U",
                        f"localhost:{vm.sport}"], capture_output=True, text=True, timeout=900)
    findings = json.loads(out.read_text())
    bad = [(f["severity"], f["id"], f["finding"]) for f in findings if f["severity"] in ("HIGH", "CRITICAL")]
    assert findings and not bad, (bad, r.stdout[-3000:])
    # It did look: TLS 1.3 and 1.2 offered, nothing older.
    sev = {f["id"]: f["finding"] for f in findings}
    assert sev["TLS1_3"].startswith("offered") and sev["TLS1_2"].startswith("offered"), sev
    assert sev["TLS1_1"].startswith("not offered") and sev["SSLv3"].startswith("not offered"), sev
