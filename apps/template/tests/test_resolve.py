"""vireo_resolve() through apps/template's GET /resolve, booted on a tap in
a network namespace of its own with two DNS servers: dns=DEAD,LIVE, where
DEAD is an address nobody answers on and LIVE a small responder this test
runs in the namespace. Shows: an answer after failover from the dead
server, the second ask answered from the cache (the responder sees one
query), NXDOMAIN cached the same way (RFC 2308, with an SOA), and the
counters on /metrics."""
import os
import re
import subprocess
import sys

import pytest

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "..", "tests", "qemu"))
from conftest import READY, app_image, ns_get  # noqa: E402
from httpc import parse_prometheus  # noqa: E402
from vm import Vm  # noqa: E402

DEAD = "10.77.0.9"
SECOND = "10.77.0.5"	# a second address of the namespace's: the only one listening on PORT
PORT = 8081

LISTENER = r'''
import socket
s = socket.socket()
s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
s.bind(("{second}", {port}))
s.listen(4)
s.settimeout(150)
try:
    while True:
        c, _ = s.accept()
        print("accepted", flush=True)
        c.close()
except socket.timeout:
    pass
'''

RESPONDER = r'''
import socket, struct
s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
s.bind(("{host}", 53))
s.settimeout(150)
soa = b"\xc0\x0c" + struct.pack("!HHIH", 6, 1, 60, 22) + b"\0\0" + struct.pack("!IIIII", 1, 60, 60, 60, 60)
while True:
    try:
        q, peer = s.recvfrom(512)
    except socket.timeout:
        break
    qid = struct.unpack("!H", q[:2])[0]
    i, labels = 12, []
    while q[i]:
        labels.append(q[i + 1:i + 1 + q[i]].decode())
        i += 1 + q[i]
    question = q[12:i + 5]
    qtype = struct.unpack("!H", q[i + 1:i + 3])[0]
    name = ".".join(labels).lower()
    print(name, qtype, flush=True)
    addrs = {{"a.vireo.test": ["192.0.2.10"], "meta.vireo.test": ["169.254.169.254"],
             "web.vireo.test": ["{host}", "{second}"]}}.get(name, []) if qtype == 1 else []
    if addrs:
        ans = b"".join(b"\xc0\x0c" + struct.pack("!HHIH", 1, 1, 60, 4) + socket.inet_aton(a) for a in addrs)
        s.sendto(struct.pack("!HHHHHH", qid, 0x8180, 1, len(addrs), 0, 0) + question + ans, peer)
    elif name == "a.vireo.test" and qtype == 1:
        ans = b"\xc0\x0c" + struct.pack("!HHIH", 1, 1, 60, 4) + socket.inet_aton("192.0.2.10")
        s.sendto(struct.pack("!HHHHHH", qid, 0x8180, 1, 1, 0, 0) + question + ans, peer)
    elif name in ("a.vireo.test", "meta.vireo.test", "web.vireo.test"):
        s.sendto(struct.pack("!HHHHHH", qid, 0x8180, 1, 0, 1, 0) + question + soa, peer)
    else:
        s.sendto(struct.pack("!HHHHHH", qid, 0x8183, 1, 0, 1, 0) + question + soa, peer)
'''


def get(ns, path):
    return ns_get(ns, path, 20)


def test_resolve_failover_cache_negative(ns):
    image = app_image("template")
    if not os.path.exists(image):
        pytest.fail(f"{image} missing: run make APP=apps/template image")
    ns.run("ip", "addr", "add", f"{SECOND}/24", "dev", ns.tap, check=True)
    dns = ns.popen("/usr/bin/python3", "-c", RESPONDER.format(host=ns.host_ip, second=SECOND),
                   stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    lsn = ns.popen("/usr/bin/python3", "-c", LISTENER.format(second=SECOND, port=PORT), stdout=subprocess.PIPE,
                   stderr=subprocess.PIPE)
    vm = None
    try:
        # the namespace's /24 allowed (its private addresses), the metadata
        # address not
        vm = Vm(image=image, cmdline=f"ip={ns.guest_ip}/24 dns={DEAD},{ns.host_ip} egress.allow=10.77.0.0/24",
                wrap=ns.wrap, extra=ns.qemu_args())
        vm.wait_for(READY, timeout=120)
        code, body = get(ns, "/resolve?name=A.vireo.test&family=4")
        assert code == 200 and body.startswith("192.0.2.10\nttl "), body
        code, body = get(ns, "/resolve?name=a.vireo.test&family=4")
        assert code == 200 and body.startswith("192.0.2.10\nttl "), body
        assert 0 < int(re.search(r"ttl (\d+)", body).group(1)) <= 60
        for _ in range(2):
            code, body = get(ns, "/resolve?name=nope.vireo.test&family=4")
            assert code == 502 and body.strip() == "error -2", body
        # both families: the AAAA query is NODATA, the A answer cached
        code, body = get(ns, "/resolve?name=a.vireo.test")
        assert code == 200 and body.startswith("192.0.2.10\n"), body
        # by name: the first address resets (nothing listens on the host's
        # PORT), the second connects
        code, body = get(ns, f"/connect?name=web.vireo.test&port={PORT}")
        assert code == 200 and body.strip() == f"connected {SECOND}", body
        # a name resolving to the metadata service: refused, not connected
        code, body = get(ns, f"/connect?name=meta.vireo.test&port={PORT}")
        assert code == 502 and body.strip() == "failed policy", body
        vm.wait_for(r"a name gave 169\.254\.169\.254, link-local: refused by the egress policy", timeout=10)
        code, body = get(ns, f"/connect?name=nope.vireo.test&port={PORT}")
        assert code == 502 and body.strip() == "failed name", body
        code, body = get(ns, "/metrics")
        m = parse_prometheus(body)
        assert m["vireo_resolve_refused_egress_total"] == 1
        assert m['vireo_app_tcp_out_failures_total{client="template",reason="policy"}'] == 1
        assert m['vireo_app_tcp_out_failures_total{client="template",reason="name"}'] == 1
        assert m['vireo_app_tcp_out_connections_total{client="template"}'] == 1
        assert m["vireo_resolve_lookups_total"] == 8
        assert m["vireo_resolve_cache_hits_total"] == 1, m
        # nope.vireo.test's A the second time; /connect asks A (cached:
        # negative) and AAAA (asked), so not all from the cache
        assert m["vireo_resolve_negative_hits_total"] == 1
        assert m["vireo_resolve_failovers_total"] >= 1
        assert m["vireo_resolve_timeouts_total"] == 0
    finally:
        if vm:
            vm.stop()
        dns.kill()
        lsn.kill()
        out, _ = dns.communicate(timeout=10)
        accepted, _ = lsn.communicate(timeout=10)
    assert accepted.decode().split() == ["accepted"]
    asked = out.decode().split("\n")
    # one query each: the second asks came from the cache
    assert asked.count("a.vireo.test 1") == 1, asked
    assert asked.count("nope.vireo.test 1") == 1, asked
    assert asked.count("a.vireo.test 28") == 1, asked
    assert asked.count("nope.vireo.test 28") == 1, asked
