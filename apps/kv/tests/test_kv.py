"""apps/kv booted (`make APP=apps/kv`) and driven with curl over QEMU's user
network (a loopback port forward): the put/get/delete round trip, ETags and
conditional requests, listings with a prefix and a cursor, binary values
byte for byte, the refusals (400/404/405/411/412/413), and filling the store
to kv.max_bytes: 507, then the appliance still serving, and room again after
a delete. One boot for the module."""
import json
import os
import random
import re
import subprocess
import tempfile
import urllib.parse

import pytest

from httpc import parse_head, parse_prometheus, parse_response, promtool_findings

MAX_BYTES = 65536
VALUE_MAX = 16384


def charge(klen, vlen):
    """apps/kv/kv_store.h's per-entry charge, written out again."""
    return 48 + (32 + klen + vlen + 15) // 16 * 16


class Kv:
    """The booted app (apps/conftest.py's AppVm) and curl against it."""

    def __init__(self, app):
        self.app = app
        self.port = app.port
        self.tmp = tempfile.mkdtemp(prefix="vireo-kv-")

    def url(self, path):
        return f"http://127.0.0.1:{self.port}{path}"

    def curl(self, method, path, data=None, headers=()):
        """(status, {header: value}, body bytes) from one curl request."""
        args = ["curl", "-sS", "--max-time", "30", "-D", "-", "-o", "-", "-X", method]
        if method == "HEAD":
            args = ["curl", "-sS", "--max-time", "30", "-I"]
        for h in headers:
            args += ["-H", h]
        if data is not None:
            f = os.path.join(self.tmp, "body")
            with open(f, "wb") as fh:
                fh.write(data)
            # (An empty Expect: keeps curl from waiting for a 100 Continue.)
            args += ["--data-binary", "@" + f, "-H", "Content-Type: application/octet-stream",
                     "-H", "Expect:"]
        out = subprocess.run(args + [self.url(path)], capture_output=True, timeout=60)
        assert out.returncode == 0, out.stderr.decode()
        st, h, rest = parse_head(out.stdout)
        if method == "HEAD" or st == 304:
            return st, h, rest	# Content-Length is the 200's; no body follows
        return parse_response(out.stdout)

    def raw(self, req):
        return parse_response(self.app.request(req))

    def metrics(self):
        st, _, body = self.curl("GET", "/metrics")
        assert st == 200
        return parse_prometheus(body.decode())

    def listing(self, query):
        st, h, body = self.curl("GET", "/kv/" + query)
        assert st == 200, body
        assert h["content-type"] == "application/json"
        return json.loads(body)


@pytest.fixture(scope="module")
def kv(app_boot):
    return Kv(app_boot(cmdline=f"kv.max_bytes={MAX_BYTES} kv.value_max={VALUE_MAX}"))


def test_round_trip(kv):
    assert f"kv: /kv/ serving, max_bytes={MAX_BYTES} value_max={VALUE_MAX}" in kv.app.vm.text
    st, h, _ = kv.curl("PUT", "/kv/greeting", b"hello")
    assert st == 201
    tag = h["etag"]
    assert len(tag) == 18 and tag[0] == tag[-1] == '"'
    st, h, body = kv.curl("GET", "/kv/greeting")
    assert (st, body, h["etag"], h["content-type"]) == (200, b"hello", tag, "application/octet-stream")
    st, h, body = kv.curl("HEAD", "/kv/greeting")
    assert st == 200 and h["content-length"] == "5" and h["etag"] == tag
    st, h2, _ = kv.curl("PUT", "/kv/greeting", b"hello again")
    assert st == 204 and h2["etag"] != tag
    # The same bytes again: the same strong tag.
    st, h3, _ = kv.curl("PUT", "/kv/greeting", b"hello again")
    assert st == 204 and h3["etag"] == h2["etag"]
    assert kv.curl("GET", "/kv/greeting")[2] == b"hello again"
    assert kv.curl("DELETE", "/kv/greeting")[0] == 204
    st, h, body = kv.curl("GET", "/kv/greeting")
    assert st == 404 and json.loads(body)["status"] == 404
    assert kv.curl("DELETE", "/kv/greeting")[0] == 404


def test_binary_values_byte_identical(kv):
    rng = random.Random(20)
    values = [bytes(range(256)) * 8, bytes(rng.getrandbits(8) for _ in range(VALUE_MAX)), b"",
              b"\r\n\r\n\x00"]
    for i, v in enumerate(values):
        st, _, _ = kv.curl("PUT", f"/kv/bin/{i}", v)
        assert st == 201
    for i, v in enumerate(values):
        st, h, body = kv.curl("GET", f"/kv/bin/{i}")
        assert st == 200 and body == v and int(h["content-length"]) == len(v)
        assert kv.curl("DELETE", f"/kv/bin/{i}")[0] == 204


def test_conditionals(kv):
    st, h, _ = kv.curl("PUT", "/kv/cond", b"v1")
    t1 = h["etag"]
    st, h, body = kv.curl("GET", "/kv/cond", headers=[f"If-None-Match: {t1}"])
    assert st == 304 and h["etag"] == t1 and h["content-length"] == "2" and body == b""
    assert kv.curl("GET", "/kv/cond", headers=[f"If-None-Match: W/{t1}"])[0] == 304
    assert kv.curl("GET", "/kv/cond", headers=['If-None-Match: "0000000000000000"'])[0] == 200
    assert kv.curl("GET", "/kv/cond", headers=['If-Match: "0000000000000000"'])[0] == 412
    # Lost-update protection: a write naming an old tag is refused.
    st, h, _ = kv.curl("PUT", "/kv/cond", b"v2", headers=[f"If-Match: {t1}"])
    assert st == 204
    t2 = h["etag"]
    assert kv.curl("PUT", "/kv/cond", b"v3", headers=[f"If-Match: {t1}"])[0] == 412
    assert kv.curl("GET", "/kv/cond")[2] == b"v2"
    # Create-only.
    assert kv.curl("PUT", "/kv/cond", b"x", headers=["If-None-Match: *"])[0] == 412
    assert kv.curl("PUT", "/kv/cond-new", b"x", headers=["If-None-Match: *"])[0] == 201
    assert kv.curl("PUT", "/kv/cond-none", b"x", headers=["If-Match: *"])[0] == 412
    assert kv.curl("GET", "/kv/cond-none")[0] == 404
    # Conditional delete.
    assert kv.curl("DELETE", "/kv/cond", headers=[f"If-Match: {t1}"])[0] == 412
    assert kv.curl("DELETE", "/kv/cond", headers=[f"If-Match: {t2}"])[0] == 204
    assert kv.curl("DELETE", "/kv/cond-new")[0] == 204


def test_listing_prefix_and_cursor(kv):
    keys = [f"list/{i:03d}" for i in range(25)] + ['list"q', "lisz", "other"]
    for k in keys:
        assert kv.curl("PUT", "/kv/" + urllib.parse.quote(k, safe="/"), k.encode())[0] == 201
    seen, cursor, pages = [], None, 0
    while True:
        q = "?prefix=list/&limit=10" + (f"&cursor={cursor}" if cursor else "")
        page = kv.listing(q)
        pages += 1
        assert len(page["keys"]) <= 10
        for e in page["keys"]:
            assert e["bytes"] == len(e["key"]) and len(e["etag"]) == 18
        seen += [e["key"] for e in page["keys"]]
        if not page["more"]:
            assert page["cursor"] is None
            break
        cursor = page["cursor"]
        assert bytes.fromhex(cursor).decode() == seen[-1]
    assert pages == 3
    assert seen == sorted(k for k in keys if k.startswith("list/"))
    # JSON escaping of a key with a quote, and the prefix decoded from %22.
    page = kv.listing("?prefix=list%22")
    assert [e["key"] for e in page["keys"]] == ['list"q']
    # Everything, default page size.
    assert [e["key"] for e in kv.listing("")["keys"]] == sorted(keys)
    assert kv.listing("?prefix=nothing")["keys"] == []
    for bad in ("?cursor=zz", "?cursor=616", "?limit=0", "?limit=1001", "?limit=x",
                "?prefix=" + "a" * 251):
        st, _, body = kv.curl("GET", "/kv/" + bad)
        assert st == 400, bad
        assert json.loads(body)["status"] == 400
    for k in keys:
        assert kv.curl("DELETE", "/kv/" + urllib.parse.quote(k, safe="/"))[0] == 204


def test_refusals(kv):
    assert kv.curl("PUT", "/kv/a%20b", b"x")[0] == 400	# a space
    assert kv.curl("PUT", "/kv/%C3%A9", b"x")[0] == 400	# not ASCII
    assert kv.curl("PUT", "/kv/" + "k" * 251, b"x")[0] == 400
    assert kv.curl("PUT", "/kv/" + "k" * 250, b"x")[0] == 201
    assert kv.curl("DELETE", "/kv/" + "k" * 250)[0] == 204
    assert kv.curl("GET", "/kv/missing")[0] == 404
    st, h, _ = kv.curl("POST", "/kv/x", b"x")	# the runtime refuses it for the route
    assert st == 405 and "allow" in h
    st, h, _ = kv.curl("PUT", "/kv/", b"x")
    assert st == 405 and h["allow"] == "GET, HEAD"
    assert kv.curl("DELETE", "/kv/")[0] == 405
    st, _, _ = kv.raw(b"PUT /kv/nolength HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
    assert st == 411
    assert kv.curl("PUT", "/kv/big", b"x" * (VALUE_MAX + 1))[0] == 413
    assert kv.curl("PUT", "/kv/big", b"x" * VALUE_MAX)[0] == 201
    assert kv.curl("DELETE", "/kv/big")[0] == 204
    assert kv.curl("GET", "/healthz")[0] == 200


def test_fill_to_bound_then_507_and_still_serving(kv):
    m0 = kv.metrics()
    assert m0["kv_bytes_max"] == MAX_BYTES
    assert m0["kv_durable"] == 0	# no data disk: in memory, and /metrics says so
    assert m0["kv_keys"] == 0 and m0["kv_bytes_used"] == 0
    value = bytes(range(256)) * 16	# 4096 B
    each = charge(len("fill/00"), len(value))
    stored = 0
    for i in range(100):	# bounded: the store holds MAX_BYTES // each = 15
        st, _, body = kv.curl("PUT", f"/kv/fill/{i:02d}", value)
        if st == 507:
            assert json.loads(body)["status"] == 507
            break
        assert st == 201
        stored += 1
    assert stored == MAX_BYTES // each
    m = kv.metrics()
    assert m["kv_keys"] == stored
    assert m["kv_bytes_used"] == stored * each <= MAX_BYTES
    assert m['kv_refused_total{reason="full"}'] >= 1
    # Still serving: reads, the runtime's routes, a small put that fits the rest.
    assert kv.curl("GET", "/kv/fill/00")[2] == value
    assert kv.curl("GET", "/healthz")[0] == 200
    # What is left (65536 - 15 * 4192 = 2656) takes one entry of exactly that
    # charge: 48 + ALIGN_UP(32 + 7 + 2569, 16) = 2656; one byte more is 507.
    left = MAX_BYTES - stored * each
    small = left - 48 - 32 - len("fill/sm")
    assert charge(7, small) == left and charge(7, small + 1) > left
    assert kv.curl("PUT", "/kv/fill/sm", b"s" * (small + 1))[0] == 507
    assert kv.curl("PUT", "/kv/fill/sm", b"s" * small)[0] == 201
    assert kv.metrics()["kv_bytes_used"] == MAX_BYTES
    assert kv.curl("PUT", "/kv/fill/more", b"")[0] == 507
    # A delete makes room again.
    assert kv.curl("DELETE", "/kv/fill/00")[0] == 204
    assert kv.curl("PUT", "/kv/fill/more", value)[0] == 201
    for k in kv.listing("?prefix=fill/&limit=1000")["keys"]:
        assert kv.curl("DELETE", "/kv/" + k["key"])[0] == 204
    m = kv.metrics()
    assert m["kv_keys"] == 0 and m["kv_bytes_used"] == 0
    assert m['kv_requests_total{op="put"}'] >= stored + 3
    # The app's families (and the runtime's) pass promtool.
    assert promtool_findings(kv.curl("GET", "/metrics")[2]) == []
    assert m['kv_requests_total{op="list"}'] >= 1


def test_bearer_token(app_boot):
    """kv.token= on a booted appliance: 401 with WWW-Authenticate: Bearer
    without the token, served with it; no console line carries it (the
    command line's echo and the configuration's origin log both show
    kv.token=...)."""
    token = "T0k-" + "".join(random.choice("abcdef0123456789") for _ in range(24))
    k = Kv(app_boot(cmdline=f"kv.token={token}"))
    auth = f"Authorization: Bearer {token}"
    st, h, _ = k.curl("PUT", "/kv/t", data=b"v")
    assert st == 401 and h["www-authenticate"].startswith("Bearer")
    st, _, _ = k.curl("GET", "/kv/", headers=["Authorization: Bearer wrong"])
    assert st == 401
    st, _, _ = k.curl("PUT", "/kv/t", data=b"v", headers=[auth])
    assert st == 201
    st, _, body = k.curl("GET", "/kv/t", headers=[auth])
    assert st == 200 and body == b"v"
    text = k.app.vm.text
    assert "config: kv.token=... (from cmdline" in text
    assert token not in text
    assert re.search(r"^cmdline \(.*\bkv\.token=\.\.\.", text, re.M)
