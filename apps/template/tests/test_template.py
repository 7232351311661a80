"""apps/template booted as its own appliance (make APP=apps/template image):
its routes answer through real clients (curl and raw sockets), its
configuration key comes from the command line, its metric and the API's
counters are on /metrics, and the runtime's routes stay the runtime's."""
import random
import subprocess

import pytest
from httpc import parse_head


@pytest.fixture(scope="module")
def app(app_boot):
    return app_boot(cmdline="template.greeting=howdy")


def test_boot_log(app):
    app.vm.wait_for(r"app template: GET /hello, POST /echo, POST /sum")
    app.vm.wait_for(r"config: template.greeting=howdy \(from cmdline")


def test_hello_with_curl(app):
    out = subprocess.run(["curl", "-sS", "--max-time", "20", "-D", "-",
                          f"http://127.0.0.1:{app.port}/hello?name=vireo%20user"],
                         capture_output=True, check=True).stdout
    head, _, body = out.partition(b"\r\n\r\n")
    assert head.startswith(b"HTTP/1.1 200 ")
    assert b"Content-Type: text/plain; charset=utf-8" in head
    assert body == b"howdy, vireo user!\n"


def test_hello_default_name_and_head(app):
    assert app.http("GET", "/hello")[2] == b"howdy, world!\n"
    raw = app.request(b"HEAD /hello HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
    status, headers, rest = parse_head(raw)
    assert status == 200 and headers["content-length"] == str(len("howdy, world!\n")) and rest == b""


def test_echo_body(app):
    body = bytes(range(256)) * 16	# 4096 bytes: the route's max_body
    status, headers, got = app.http("POST", "/echo", body)
    assert status == 200 and got == body


def fnv1a(data):
    h = 2166136261
    for b in data:
        h = ((h ^ b) * 16777619) & 0xffffffff
    return h


def test_sum_streamed_upload(app):
    """POST /sum streams its body (on_body): 4 MiB chunked by curl -T -,
    four times the 1 MiB a body read whole may have, and 1 MiB + 1 by
    Content-Length; each answered with its length and hash."""
    data = random.Random(32).randbytes(4 * 1024 * 1024)
    want = fnv1a(data)
    out = subprocess.run(["curl", "-sS", "--max-time", "60", "-T", "-", "-H", "Transfer-Encoding: chunked",
                          "-H", "Expect:", f"http://127.0.0.1:{app.port}/sum"],
                         input=data, capture_output=True, check=True).stdout
    assert out == b"bytes %d fnv1a %08x\n" % (len(data), want)
    part = data[:1024 * 1024 + 1]
    status, _, got = app.http("POST", "/sum", part)
    assert status == 200 and got == b"bytes %d fnv1a %08x\n" % (len(part), fnv1a(part))


def test_refusals(app):
    assert app.http("POST", "/echo", b"x" * 4097)[0] == 413	# over max_body
    status, headers, _ = app.http("GET", "/echo")
    assert status == 405 and headers["allow"] == "POST"
    assert app.http("GET", "/nothing-here")[0] == 404
    assert app.http("GET", "/healthz")[2] == b"ok\n"	# the runtime's


def test_metrics(app):
    before = app.metrics()["template_hello_total"]
    for _ in range(3):
        assert app.http("GET", "/hello?name=m")[0] == 200
    m = app.metrics()
    assert m["template_hello_total"] == before + 3
    assert m["vireo_app_http_requests_total"] >= 3
    assert m['vireo_app_http_refused_total{reason="body_too_large"}'] >= 0
