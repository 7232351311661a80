"""Request smuggling through a real proxy (issue 29, framing): apps/kv booted
(`make APP=apps/kv image`, user networking, a loopback port forward) behind
Debian's HAProxy 2.6 with `http-reuse always`, so every client's request may
go over one backend connection another client used before. An attacker
hides a request in the Content-Length body of requests the appliance
answers without wanting the body (the runtime's 404, since kv has no site),
or with a body longer than the server drops (it closes then), or to the
runtime's /healthz (413); after each, a victim on its own connection asks
for its own key and must get its own value, every time. The hidden request
is the prefix "GET /metrics ...\\r\\nX: ", which would swallow the victim's
request line and answer the victim with /metrics, and "PUT /kv/stolen",
which would store the victim's request as a value. Before the framing rule
(docs/appliance.md "Framing") the victims received /metrics. Bounded: a
dozen rounds, every socket with a timeout; under a minute with the boot."""
import os
import shutil
import socket
import subprocess
import tempfile
import time

import pytest

from httpc import free_tcp_port, parse_response, read_all

HAPROXY = shutil.which("haproxy") or "/usr/sbin/haproxy"
SECRET = b"the victim's own value"

CONFIG = """global
    maxconn 64
defaults
    mode http
    timeout connect 5s
    timeout client 10s
    timeout server 10s
    http-reuse always
frontend f
    bind 127.0.0.1:{front}
    default_backend b
backend b
    server s 127.0.0.1:{back}
"""


@pytest.fixture(scope="module")
def proxied(app_boot):
    if not os.path.exists(HAPROXY):
        pytest.fail("haproxy missing: `make deps` installs it")
    app = app_boot()
    tmp = tempfile.mkdtemp(prefix="vireo-framing-")
    front = free_tcp_port()
    cfg = os.path.join(tmp, "haproxy.cfg")
    with open(cfg, "w") as f:
        f.write(CONFIG.format(front=front, back=app.port))
    log = open(os.path.join(tmp, "haproxy.log"), "wb")
    proc = subprocess.Popen([HAPROXY, "-db", "-f", cfg], stdout=subprocess.DEVNULL, stderr=log)
    try:
        deadline = time.monotonic() + 10
        while True:
            try:
                socket.create_connection(("127.0.0.1", front), timeout=1).close()
                break
            except OSError:
                assert proc.poll() is None, open(log.name, "rb").read().decode(errors="replace")
                assert time.monotonic() < deadline, "haproxy did not listen"
                time.sleep(0.1)
        yield app, front
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
        log.close()
        shutil.rmtree(tmp, ignore_errors=True)


def exchange(port, raw, timeout=15):
    """One client connection to the proxy: raw bytes out, all bytes back
    until the proxy closes (every request here asks it to)."""
    with socket.create_connection(("127.0.0.1", port), timeout=timeout) as s:
        s.sendall(raw)
        return read_all(s)


def victim(port):
    st, h, body = parse_response(exchange(port, b"GET /kv/mine HTTP/1.1\r\nHost: x\r\n"
                                          b"Authorization: Bearer victim-token\r\nConnection: close\r\n\r\n"))
    return st, h.get("content-type"), body


def attack(port, head, hidden, length=None):
    """head with a Content-Length body that is the hidden request (padded to
    length, if given), then close: what the attacker itself gets is not
    judged (a 404, 413 or a close)."""
    body = hidden if length is None else hidden + b"#" * (length - len(hidden))
    raw = head + b"\r\nHost: x\r\nContent-Length: %d\r\nConnection: close\r\n\r\n" % len(body) + body
    try:
        exchange(port, raw, timeout=15)
    except OSError:
        pass


HIDDEN = [
    b"GET /metrics HTTP/1.1\r\nX: ",
    b"PUT /kv/stolen HTTP/1.1\r\nHost: x\r\nContent-Length: 120\r\n\r\n",
]


def test_victim_always_gets_its_own_response(proxied):
    app, front = proxied
    st, _, _ = app.http("PUT", "/kv/mine", SECRET)
    assert st in (201, 204)
    assert victim(front) == (200, "application/octet-stream", SECRET)
    rounds = [
        (b"GET /nope HTTP/1.1", None),		# the runtime's 404: the body is read and dropped
        (b"POST /also/nope HTTP/1.1", None),
        (b"GET /nope HTTP/1.1", 9000),		# past HTTP_DISCARD_MAX: 404 and close
        (b"GET /healthz HTTP/1.1", None),	# 413 and close
    ]
    n = 0
    for head, length in rounds:
        for hidden in HIDDEN:
            attack(front, head, hidden, length)
            got = victim(front)
            assert got == (200, "application/octet-stream", SECRET), (head, hidden, got)
            n += 1
    assert n == 8
    # Nothing the attacker hid ran: no key stored from a victim's request.
    st, _, body = app.http("GET", "/kv/stolen")
    assert st == 404, body
