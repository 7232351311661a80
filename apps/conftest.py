"""Shared by every app's QEMU tests (apps/NAME/tests/test_*.py), run by
`make test-apps` after `make APP=apps/NAME image`: the image of the app a
test file belongs to, and a VM booting it with user networking and host
ports forwarded to the guest's (tests/qemu/vm.py underneath)."""
import os
import socket
import sys

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(ROOT, "tests", "qemu"))
from httpc import free_tcp_port, parse_prometheus, parse_response, read_all  # noqa: E402
from vm import Vm  # noqa: E402
import netns as nsmod  # noqa: E402
import rootskip  # noqa: E402

READY = r"^vireo: ready ip=(\S+) http=(\d+)"


def app_name(path):
    """apps/NAME/tests/test_x.py -> NAME."""
    rel = os.path.relpath(os.path.abspath(path), os.path.join(ROOT, "apps"))
    return rel.split(os.sep)[0]


def app_image(name):
    """The app's image as the Makefile builds it (make APP=apps/NAME image)."""
    if name == "site":
        return os.path.join(ROOT, "build", "vireo.img")
    return os.path.join(ROOT, "build", "apps", name, "vireo.img")


class AppVm:
    """The app's image booted with user networking: host 127.0.0.1:port
    forwarded to guest TCP port guest_port (80), and each (proto, guest
    port) in fwd to a fresh host port of its own (self.fwd[(proto, port)])."""

    def __init__(self, image, cmdline="", guest_port=80, fwd=(), mem=64):
        self.port = free_tcp_port()
        rules = [f"hostfwd=tcp:127.0.0.1:{self.port}-:{guest_port}"]
        self.fwd = {}
        for proto, gport in fwd:
            hport = free_tcp_port()
            self.fwd[(proto, gport)] = hport
            rules.append(f"hostfwd={proto}:127.0.0.1:{hport}-:{gport}")
        self.vm = Vm(cmdline=cmdline, mem=mem, image=image, extra=[
            "-netdev", "user,id=n0,restrict=on," + ",".join(rules),
            "-device", "virtio-net-pci,netdev=n0,id=nic0,romfile="])
        self.ready = self.vm.wait_for(READY, timeout=120)

    def request(self, raw, timeout=20):
        """Sends raw bytes, reads until the server closes; returns bytes."""
        with socket.create_connection(("127.0.0.1", self.port), timeout=timeout) as s:
            s.sendall(raw)
            return read_all(s)

    def http(self, method, path, body=b"", headers=""):
        """One request with Connection: close -> (status, headers, body)."""
        head = f"{method} {path} HTTP/1.1\r\nHost: x\r\nConnection: close\r\n{headers}"
        if body or method in ("POST", "PUT"):
            head += f"Content-Length: {len(body)}\r\n"
        return parse_response(self.request(head.encode() + b"\r\n" + body))

    def metrics(self):
        status, _, body = self.http("GET", "/metrics")
        assert status == 200
        return parse_prometheus(body.decode())

    def stop(self):
        self.vm.stop()


@pytest.fixture(scope="module")
def app_boot(request):
    """app_boot(**kw) boots this test file's app (AppVm's arguments); every
    VM is stopped when the module ends."""
    image = app_image(app_name(request.module.__file__))
    if not os.path.exists(image):
        pytest.fail(f"{image} missing: run make APP=apps/{app_name(request.module.__file__)} image")
    vms = []

    def boot(**kw):
        a = AppVm(image, **kw)
        vms.append(a)
        return a

    yield boot
    for a in vms:
        a.stop()


@pytest.fixture
def ns():
    """A network namespace with a tap device (tests/qemu/netns.py), deleted
    afterwards; skipped where namespaces cannot be made, and the run then
    fails unless VIREO_SKIP_ROOT_TESTS=1 (tests/qemu/rootskip.py)."""
    if not nsmod.available():
        rootskip.skip_root_only()
    with nsmod.Netns() as n:
        yield n


def ns_get(ns, path, timeout=20):
    """GET http://GUEST{path} with curl from inside the namespace: (status, body)."""
    r = ns.run("curl", "-sS", "--max-time", str(timeout), "-w", "\n%{http_code}", f"http://{ns.guest_ip}{path}")
    body, _, code = r.stdout.decode(errors="replace").rpartition("\n")
    return int(code), body
