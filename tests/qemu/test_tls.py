"""make TLS=1 images (docs/https.md): built into build/tls-image/ by the test
itself (the fetched lwIP and mbedTLS trees are copied from build/ when there),
booted with user networking. The development certificate loads and the log
says it is one; a key that does not match the certificate is refused with a
clear line, and in both cases HTTP serves and /metrics has the TLS heap back
at its level after start-up. There is no HTTPS listener yet."""
import os
import re
import shutil
import socket
import subprocess

import pytest

from httpc import free_tcp_port, parse_prometheus, parse_response, read_all
from vm import ROOT, Vm

BUILD = os.path.join(ROOT, "build", "tls-image")
READY = r"^vireo: ready ip=(\S+) http=(\d+)$"


def make(*args):
    os.makedirs(BUILD, exist_ok=True)
    for tree in ("lwip-src", "mbedtls-src", "apt"):
        src, dst = os.path.join(ROOT, "build", tree), os.path.join(BUILD, tree)
        if os.path.isdir(src) and not os.path.exists(dst):
            shutil.copytree(src, dst, symlinks=True)
    r = subprocess.run(["make", "-C", ROOT, f"BUILD={os.path.relpath(BUILD, ROOT)}", "TLS=1", "-j2",
                        *args, "image"], capture_output=True, text=True, timeout=1200)
    assert r.returncode == 0, r.stdout[-3000:] + r.stderr[-3000:]
    return r.stdout



def boot_and_get(boot):
    port = free_tcp_port()
    vm = boot(image=os.path.join(BUILD, "vireo.img"), extra=[
        "-netdev", f"user,id=n0,restrict=on,hostfwd=tcp:127.0.0.1:{port}-:80",
        "-device", "virtio-net-pci,netdev=n0,romfile="])
    vm.wait_for(READY, timeout=120)

    def get(path):
        with socket.create_connection(("127.0.0.1", port), timeout=20) as s:
            s.sendall(f"GET {path} HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n".encode())
            return parse_response(read_all(s))
    return vm, get


def test_dev_certificate_loads(boot):
    make()
    vm, get = boot_and_get(boot)
    assert re.search(r"^tls: EC P-256 key, self-signed DEVELOPMENT certificate", vm.text, re.M), vm.text
    status, _, _ = get("/")
    assert status == 200
    status, _, body = get("/metrics")
    m = parse_prometheus(body.decode())
    assert m["vireo_tls_ready"] == 1
    assert m["vireo_tls_heap_arena_bytes"] == 2 * 1024 * 1024
    assert m["vireo_tls_heap_alloc_failures_total"] == 0
    # The parsed chain and key stay; the copies made while parsing are gone.
    assert 0 < m["vireo_tls_heap_in_use_bytes"] < m["vireo_tls_heap_peak_bytes"]


def test_mismatched_key_refused_http_serves(boot, tmp_path):
    # The development certificate with a fresh key that is not its own.
    key = tmp_path / "other-key.pem"
    subprocess.run(["openssl", "genpkey", "-algorithm", "EC", "-pkeyopt", "ec_paramgen_curve:P-256",
                    "-out", str(key)], check=True, capture_output=True)
    cert = os.path.join(BUILD, "tls", "dev-cert.pem")
    if not os.path.exists(cert):
        make()
    make(f"TLS_CERT={cert}", f"TLS_KEY={key}")
    vm, get = boot_and_get(boot)
    assert re.search(r"^tls: key does not match the certificate .*; HTTPS off, HTTP unaffected$",
                     vm.text, re.M), vm.text
    assert "DEVELOPMENT" not in vm.text
    status, _, _ = get("/")
    assert status == 200
    status, _, body = get("/metrics")
    assert parse_prometheus(body.decode())["vireo_tls_ready"] == 0
