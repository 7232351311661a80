"""The HTTP client (vireo/http_client.h) through apps/template's GET /fetch,
booted once on a tap in a network namespace of its own, against a small
scripted HTTP/1.1 server this test runs in the namespace. Shows: a
Content-Length body and a chunked one; keep-alive reuse (the server sees
one connection for three requests); the stale keep-alive case (the server
closes a reused connection on the request without answering: a GET is sent
again on a fresh connection and succeeds, a POST is not sent again and
fails as "closed"); a head over the cap and a response with both
Content-Length and Transfer-Encoding refused; the counters on /metrics."""
import os
import subprocess
import sys

import pytest

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "..", "tests", "qemu"))
from conftest import READY, app_image, ns_get  # noqa: E402
from httpc import parse_prometheus  # noqa: E402
from vm import Vm  # noqa: E402

PORT = 8082

# One thread per connection; prints "conn N" per accept and "N METHOD PATH"
# per request (N the connection's number), so the test sees reuse and
# retries from the server's side.
SERVER = r'''
import socket, threading, sys
s = socket.socket()
s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
s.bind(("{host}", {port}))
s.listen(8)
s.settimeout(150)
lock = threading.Lock()
count = [0]

def say(*a):
    with lock:
        print(*a, flush=True)

def serve(c, n):
    buf = b""
    served = 0
    try:
        while True:
            while b"\r\n\r\n" not in buf:
                d = c.recv(4096)
                if not d:
                    return
                buf += d
            head, _, buf = buf.partition(b"\r\n\r\n")
            line = head.split(b"\r\n")[0].decode()
            method, path = line.split(" ")[:2]
            clen = 0
            for h in head.split(b"\r\n")[1:]:
                k, _, v = h.partition(b":")
                if k.strip().lower() == b"content-length":
                    clen = int(v)
            while len(buf) < clen:
                buf += c.recv(4096)
            buf = buf[clen:]
            say(n, method, path)
            if path == "/once" and served:
                c.close()  # the keep-alive race: closed with the request unanswered
                return
            served += 1
            if path == "/chunked":
                out = (b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n"
                       b"6;ext=1\r\nhello,\r\nE\r\n chunked world\r\n0\r\nX-Trailer: t\r\n\r\n")
            elif path == "/bighead":
                out = b"HTTP/1.1 200 OK\r\nX-Pad: " + b"a" * 9000 + b"\r\nContent-Length: 2\r\n\r\nno"
            elif path == "/clte":
                out = b"HTTP/1.1 200 OK\r\nContent-Length: 5\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n"
            else:
                body = ("%s %s on %d" % (method, path, n)).encode()
                out = b"HTTP/1.1 200 OK\r\nContent-Length: %d\r\n\r\n%s" % (len(body), body)
            c.sendall(out)
    except OSError:
        pass
    finally:
        c.close()

try:
    while True:
        c, _ = s.accept()
        count[0] += 1
        say("conn", count[0])
        threading.Thread(target=serve, args=(c, count[0]), daemon=True).start()
except socket.timeout:
    pass
'''


def get(ns, path):
    return ns_get(ns, path, 30)


def test_http_client(ns):
    image = app_image("template")
    if not os.path.exists(image):
        pytest.fail(f"{image} missing: run make APP=apps/template image")
    srv = ns.popen("/usr/bin/python3", "-c", SERVER.format(host=ns.host_ip, port=PORT), stdout=subprocess.PIPE,
                   stderr=subprocess.PIPE)
    vm = None
    up = f"/fetch?host={ns.host_ip}&port={PORT}&path="
    try:
        vm = Vm(image=image, cmdline=f"ip={ns.guest_ip}/24 egress.allow=10.77.0.0/24", wrap=ns.wrap,
                extra=ns.qemu_args())
        vm.wait_for(READY, timeout=120)
        assert get(ns, up + "/a") == (200, "200\nGET /a on 1")
        # kept alive: the same connection
        assert get(ns, up + "/b") == (200, "200\nGET /b on 1")
        assert get(ns, up + "/chunked") == (200, "200\nhello, chunked world")
        # the server closes the reused connection on this request unanswered:
        # sent again on a fresh connection (the server's second)
        assert get(ns, up + "/once") == (200, "200\nGET /once on 2")
        # the same for a POST: not sent again
        assert get(ns, up + "/once&method=POST") == (502, "error closed\n")
        assert get(ns, up + "/bighead") == (502, "error too_large\n")
        assert get(ns, up + "/clte") == (502, "error framing\n")
        assert get(ns, up + "/c") == (200, "200\nGET /c on 5")
        code, body = get(ns, "/metrics")
        m = parse_prometheus(body)
        lab = 'pool="upstream"'
        assert m[f"vireo_app_http_out_requests_total{{{lab}}}"] == 8
        assert m[f"vireo_app_http_out_retries_total{{{lab}}}"] == 1
        # /b, /chunked, /once (then sent again), POST /once; the refused
        # responses' connections are closed, so /bighead, /clte and /c open new ones
        assert m[f"vireo_app_http_out_reused_total{{{lab}}}"] == 4
        assert m[f"vireo_app_http_out_connections_total{{{lab}}}"] == 5
        assert m[f'vireo_app_http_out_failures_total{{{lab},reason="closed"}}'] == 1
        assert m[f'vireo_app_http_out_failures_total{{{lab},reason="too_large"}}'] == 1
        assert m[f'vireo_app_http_out_failures_total{{{lab},reason="framing"}}'] == 1
        assert m[f"vireo_app_http_out_connections_idle{{{lab}}}"] == 1
    finally:
        if vm:
            vm.stop()
            print(vm.text)
        srv.kill()
        out, err = srv.communicate(timeout=10)
    seen = out.decode().split("\n")
    assert seen.count("conn 1") == 1 and "conn 6" not in seen, seen
    # the POST reached the server once (not retried); the GET twice
    assert sum(1 for s in seen if s.endswith("POST /once")) == 1, seen
    assert sum(1 for s in seen if s.endswith("GET /once")) == 2, seen
