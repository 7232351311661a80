"""The appliance over lwIP: the ready line, HTTP behaviour seen by real
clients (curl and raw sockets), ping, static addresses, echo, and no leaks
after a load. User-mode networking with a host port forward for HTTP; a tap
device in a namespace of the test's own for ping and static addressing."""
import os
import re
import socket
import subprocess
import threading
import time

import pytest

from httpc import free_tcp_port, parse_prometheus, parse_response, promtool_findings, read_all, read_responses
from vm import ROOT, Vm

READY = r"^vireo: ready ip=(\S+) http=(\d+)(?: https=\d+)?$"
SITE = os.path.join(ROOT, "runtime", "default-site")
GUEST_LL = "fe80::5054:ff:fe12:3456"



class App:
    """A VM with user networking, host port `port` forwarded to the guest's
    HTTP port, and a few HTTP helpers."""

    def __init__(self, cmdline="", device_opts="", guest_port=80, mem=64, machine="q35"):
        self.port = free_tcp_port()
        dev = "virtio-net-pci,netdev=n0,id=nic0,romfile=" + (f",{device_opts}" if device_opts else "")
        self.vm = Vm(cmdline=cmdline, mem=mem, machine=machine, extra=[
            "-netdev", f"user,id=n0,restrict=on,hostfwd=tcp:127.0.0.1:{self.port}-:{guest_port}",
            "-device", dev])
        self.ready = self.vm.wait_for(READY, timeout=90)

    def connect(self, timeout=20):
        return socket.create_connection(("127.0.0.1", self.port), timeout=timeout)

    def request(self, raw, timeout=20):
        """Sends raw bytes, reads until the server closes; returns bytes."""
        with self.connect(timeout) as s:
            s.sendall(raw)
            return read_all(s)

    def get(self, path, headers=""):
        resp = self.request(f"GET {path} HTTP/1.1\r\nHost: x\r\nConnection: close\r\n{headers}\r\n".encode())
        return parse_response(resp)

    def metrics(self):
        status, _, body = self.get("/metrics")
        assert status == 200
        return parse_prometheus(body.decode())

    def stop(self):
        self.vm.stop()


@pytest.fixture(scope="module")
def app():
    a = App()
    # Let IPv6 settle before anything compares memory levels: lwIP joins the
    # solicited-node multicast group (one MLD6_GROUP from its heap) on its
    # first ND timer tick after the link comes up, about a second later.
    # Waiting longer than 30 s is a failure of the leak test, which needs the
    # settled level as its baseline (a.ipv6_settle_error says why).
    key = 'vireo_lwip_memp_used{pool="MLD6_GROUP"}'
    t0 = time.monotonic()
    a.ipv6_settle_error = None
    while a.metrics()[key] < 1:
        if time.monotonic() - t0 > 30:
            a.ipv6_settle_error = f"IPv6 did not settle within 30 s of ready: {key} is still 0"
            break
        time.sleep(0.5)
    yield a
    a.stop()


def test_ready_line_exactly_once(app):
    assert app.ready.group(1) == "10.0.2.15" and app.ready.group(2) == "80"
    time.sleep(1)
    assert len(re.findall(READY, app.vm.text, re.M)) == 1


def test_index_is_byte_identical(app):
    with open(os.path.join(SITE, "index.html"), "rb") as f:
        want = f.read()
    out = subprocess.run(["curl", "-sS", "-D", "-", "--max-time", "20", f"http://127.0.0.1:{app.port}/"],
                         capture_output=True, check=True).stdout
    status, headers, body = parse_response(out)
    assert status == 200
    assert body == want and len(want) == 612
    assert headers["content-type"].startswith("text/html")
    assert headers["content-length"] == "612"


def test_head_has_no_body(app):
    with app.connect() as s:
        s.sendall(b"HEAD /index.html HTTP/1.1\r\nHost: x\r\n\r\nGET /healthz HTTP/1.1\r\nHost: x\r\n\r\n")
        (head,), rest = read_responses(s, 1, head_only=True)
        assert head[0] == 200 and head[1]["content-length"] == "612"
        # the next response starts right after the HEAD response's head
        s.settimeout(20)
        while b"\r\n\r\nok\n" not in rest:
            c = s.recv(4096)
            assert c
            rest += c
        assert rest.startswith(b"HTTP/1.1 200")


def test_healthz(app):
    status, headers, body = app.get("/healthz")
    assert (status, body) == (200, b"ok\n")
    assert headers["content-type"].startswith("text/plain")


def test_large_file(app):
    status, headers, body = app.get("/64k.bin")
    assert status == 200 and len(body) == 65536
    assert body == bytes(i % 251 for i in range(65536))


def test_metrics_parse(app):
    m = app.metrics()
    names = {k.split("{")[0] for k in m}
    for want in ["vireo_uptime_seconds", "vireo_vnet_frames_total", "vireo_vnet_interrupts_total",
                 "vireo_vnet_coalesce_frames"]:
        assert want in names, sorted(names)
    assert any(n.startswith("vireo_lwip_") for n in names)


def test_metrics_promtool(app):
    """The text passes `promtool check metrics` with no finding: Prometheus'
    naming conventions (base units, _total on counters only) and the format.
    (Before the renames it named a counter in microseconds and a gauge
    vireo_mem_frames_total.)"""
    app.get("/")  # some traffic first: every family has moved
    status, _, body = app.get("/metrics")
    assert status == 200
    assert promtool_findings(body) == []


def test_halted_time_metric(app):
    """vireo_loop_halted_seconds_total: the guest's own idle time, to the
    microsecond. An idle appliance is halted most of a second; never longer
    than it ran."""
    m0, t0 = app.metrics(), time.monotonic()
    time.sleep(2)
    m1, wall = app.metrics(), time.monotonic() - t0
    h0, h1 = m0["vireo_loop_halted_seconds_total"], m1["vireo_loop_halted_seconds_total"]
    assert 0 < h0 <= m0["vireo_uptime_seconds"] + 1
    assert h0 != int(h0) or h1 != int(h1), (h0, h1)  # fractions of a second, not whole ones
    assert 0.5 * wall <= h1 - h0 <= wall + 0.5, (h0, h1, wall)


@pytest.mark.parametrize("raw,status", [
    (b"GET /nope HTTP/1.1\r\nHost: x\r\n\r\n", 404),
    (b"GARBAGE\r\n\r\n", 400),
    (b"GET / HTTP/1.1\r\nHost: x\r\nBad header line\r\n\r\n", 400),
    (b"POST / HTTP/1.1\r\nHost: x\r\nContent-Length: 0\r\n\r\n", 405),
    (b"GET /" + b"a" * 5000 + b" HTTP/1.1\r\nHost: x\r\n\r\n", 414),
    (b"GET / HTTP/1.1\r\nHost: x\r\n" + b"X-Big: " + b"b" * 9000 + b"\r\n\r\n", 431),
])
def test_error_statuses(app, raw, status):
    with app.connect() as s:
        s.sendall(raw)
        (r,), rest = read_responses(s, 1)
        assert r[0] == status
        if status == 404:
            # not an error in the request: the connection stays usable
            s.sendall(b"GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n")
            (r,), rest = read_responses(s, 1)
            assert r[0] == 200
        else:
            # a bad request ends the connection after the response
            assert rest + read_all(s) == b""
    # and it keeps serving
    assert app.get("/healthz")[0] == 200


def test_keep_alive_and_pipelining(app):
    with open(os.path.join(SITE, "index.html"), "rb") as f:
        index = f.read()
    with app.connect() as s:
        # three pipelined requests in one write, answered in order
        s.sendall(b"GET / HTTP/1.1\r\nHost: x\r\n\r\n"
                  b"GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n"
                  b"GET /nope HTTP/1.1\r\nHost: x\r\n\r\n")
        resps, rest = read_responses(s, 3)
        assert [r[0] for r in resps] == [200, 200, 404]
        assert resps[0][2] == index and resps[1][2] == b"ok\n"
        assert rest == b""
        # the same connection serves more, one request at a time
        for _ in range(5):
            s.sendall(b"GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n")
            (r,), rest = read_responses(s, 1)
            assert r[0] == 200 and rest == b""
        # and Connection: close ends it after the response
        s.sendall(b"GET /healthz HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
        data = read_all(s)
        assert parse_response(data)[0] == 200


def pool_levels(m):
    """Every lwIP pool's use, TCP PCBs without those in TIME_WAIT (which the
    closing side keeps for 2 MSL by design, up to the port's cap)."""
    levels = {k: v for k, v in m.items() if k.startswith("vireo_lwip_memp_used{")}
    key = 'vireo_lwip_memp_used{pool="TCP_PCB"}'
    assert key in levels, sorted(m)[:20]
    levels[key] -= m['vireo_tcp_pcbs{list="time_wait"}']
    levels["active"] = m['vireo_tcp_pcbs{list="active"}']
    return levels


def test_thousand_requests_16_connections_no_leak(app):
    assert app.ipv6_settle_error is None, app.ipv6_settle_error
    before = app.metrics()
    errors = []
    counts = [0] * 16

    def worker(i):
        try:
            with app.connect(timeout=30) as s:
                n = 1000 // 16 + (1 if i < 1000 % 16 else 0)
                for k in range(n):
                    s.sendall(b"GET / HTTP/1.1\r\nHost: x\r\n\r\n")
                    (r,), rest = read_responses(s, 1)
                    if r[0] != 200 or len(r[2]) != 612 or rest:
                        errors.append((i, k, r[0]))
                        return
                    counts[i] += 1
        except Exception as e:  # noqa: BLE001
            errors.append((i, repr(e)))

    threads = [threading.Thread(target=worker, args=(i,)) for i in range(16)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=300)
    assert not errors, errors[:5]
    assert sum(counts) == 1000
    # connections closed by the client: the server's PCBs and buffers return
    deadline = time.monotonic() + 20
    while True:
        after = app.metrics()
        if pool_levels(after) == pool_levels(before) or time.monotonic() > deadline:
            break
        time.sleep(0.5)
    assert pool_levels(after) == pool_levels(before)
    # lwIP's heap holds the pools too (MEMP_MEM_MALLOC): no growth beyond the
    # TIME_WAIT PCBs that appeared meanwhile, 320 bytes each (tcp_pcb plus
    # mem.c's size header, in net/port/segheap.c's 320-byte class; net/port/lwipopts.h).
    # It may shrink: boot-time leftovers (an ARP-queued pbuf, DHCP) can be
    # freed in between.
    tw = after['vireo_tcp_pcbs{list="time_wait"}'] - before['vireo_tcp_pcbs{list="time_wait"}']
    # The heap level counts whole blocks of fixed size classes, so the same
    # live allocations always weigh the same (lwIP's old first-fit heap
    # drifted by up to 24 B per block with fragmentation). The allowance
    # keeps 24 B per live pool element plus 16 blocks outside the pools at
    # idle (ARP/ND queues, DHCP, MLD, the /metrics response being built),
    # which covers those blocks' coming and going. Measured: rounds of this load in one boot grow by exactly one
    # TIME_WAIT PCB each (the /metrics connection), so nothing leaks per
    # round; after the earlier tests of this module the figure drifted by up
    # to 744 B beyond it. A leak per request (1000 of them) or per connection would be
    # kilobytes; a leaked pool element shows in pool_levels() above.
    live = sum(v for k, v in after.items() if k.startswith("vireo_lwip_memp_used{")) + 16
    grew = after["vireo_lwip_mem_used_bytes"] - before["vireo_lwip_mem_used_bytes"]
    assert grew <= 320 * tw + 24 * live, (grew, tw, live)
    # the kernel heap counts a block's unsplittable tail (< 64 B) as in use, so
    # the level moves by a few bytes with fragmentation; one leaked HTTP
    # connection would be ~14.5 KiB
    assert after["vireo_mem_heap_in_use_bytes"] - before["vireo_mem_heap_in_use_bytes"] < 1024
    assert after['vireo_http_connections_active'] == 1  # the /metrics request itself
    assert after["vireo_vnet_rx_buffers_held"] == 0


# ---- over a tap device in a namespace of the test's own ----

def test_ping_static_address_and_echo(boot, netns):
    vm = boot(cmdline=f"ip={netns.guest_ip}/24 gw={netns.host_ip} echo=tcp,udp", wrap=netns.wrap,
              extra=netns.qemu_args())
    m = vm.wait_for(READY, timeout=90)
    assert m.group(1) == netns.guest_ip
    assert re.search(rf"^net: {re.escape(netns.guest_ip)}/24 gw {re.escape(netns.host_ip)} \(static\)$", vm.text, re.M)
    r = netns.run("ping", "-c", "3", "-i", "0.2", "-W", "5", netns.guest_ip)
    assert r.returncode == 0, r.stdout.decode() + r.stderr.decode()
    r = netns.run("ping", "-c", "2", "-s", "4000", "-W", "5", netns.guest_ip)  # fragmented both ways
    assert r.returncode == 0, r.stdout.decode()
    r = netns.run("ping", "-6", "-c", "2", "-W", "5", f"{GUEST_LL}%{netns.tap}")
    assert r.returncode == 0, r.stdout.decode() + r.stderr.decode()
    # TCP and UDP echo on port 7
    script = f"""
import socket
s = socket.create_connection(("{netns.guest_ip}", 7), timeout=10)
data = bytes(range(256)) * 200
s.sendall(data)
got = b""
while len(got) < len(data):
    c = s.recv(65536)
    assert c
    got += c
assert got == data
u = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
u.settimeout(10)
u.sendto(b"hello vireo", ("{netns.guest_ip}", 7))
assert u.recvfrom(2048)[0] == b"hello vireo"
print("echo ok")
"""
    r = netns.run("/usr/bin/python3", "-c", script)
    assert b"echo ok" in r.stdout, r.stderr.decode()
    # checksum offload is negotiated over a tap with vnet headers
    assert "checksums: tx offloaded, rx offloaded" in vm.text
    r = netns.run("curl", "-sS", "--max-time", "20", f"http://{netns.guest_ip}/64k.bin")
    assert r.stdout == bytes(i % 251 for i in range(65536))
    # echo's families too pass promtool (test_metrics_promtool has the rest)
    r = netns.run("curl", "-sS", "--max-time", "20", f"http://{netns.guest_ip}/metrics")
    assert b"vireo_echo_udp_datagrams_total" in r.stdout
    assert promtool_findings(r.stdout) == []


def test_bad_static_address_falls_back_to_dhcp(boot):
    vm = boot(cmdline="ip=10.0.2.300/24 http=8080",
              extra=["-netdev", "user,id=n0,restrict=on", "-device", "virtio-net-pci,netdev=n0,romfile="])
    m = vm.wait_for(READY, timeout=90)
    assert m.group(1) == "10.0.2.15" and m.group(2) == "8080"
    assert re.search(r"^warning: cmdline: ip=10\.0\.2\.300/24: .*DHCP", vm.text, re.M)


def test_forwarded_for_from_trusted_proxy():
    """proxy.trusted= and X-Forwarded-For on a booted appliance: user
    networking's 10.0.2.2 is the trusted proxy; each request's rightmost
    untrusted X-Forwarded-For address is its client, as metrics.allow= sees
    it (what a client wrote itself, left of the proxy's entry, is not);
    without the field the proxy is the client. Before X-Forwarded-For was
    honoured, a trusted peer without a PROXY header was reset."""
    a = App(cmdline="proxy.trusted=10.0.2.2/32 metrics.allow=192.0.2.0/24")
    try:
        assert a.ready
        status, _, body = a.get("/metrics", "X-Forwarded-For: 10.1.1.1, 192.0.2.7\r\n")
        assert status == 200 and b"vireo_http_forwarded_total 1" in body
        status, _, _ = a.get("/metrics")
        assert status == 403
        status, _, _ = a.get("/metrics", "X-Forwarded-For: 192.0.2.7\r\nX-Forwarded-For: 203.0.113.5\r\n")
        assert status == 403
    finally:
        a.stop()


def test_metrics_allow():
    """metrics.allow= on a booted appliance: a client outside the list (user
    networking's 10.0.2.2) gets 403 from /metrics and still 200 from
    /healthz; a bad list later on the line is refused whole with a warning
    naming the prefix, and the value before it stays."""
    a = App(cmdline="metrics.allow=192.0.2.0/24,2001:db8::/32 metrics.allow=10.0.0.1/8")
    try:
        assert a.ready
        assert re.search(r"^warning: cmdline: metrics\.allow=10\.0\.0\.1/8: '10\.0\.0\.1/8': host bits set",
                         a.vm.text, re.M)
        status, _, _ = a.get("/metrics")
        assert status == 403
        status, _, body = a.get("/healthz")
        assert status == 200 and body == b"ok\n"
    finally:
        a.stop()
