"""apps/dns booted (make APP=apps/dns; make test-apps runs this) on a tap in a network namespace of its
own, asked by real clients: dig and kdig (Debian's dnsutils, knot-dnsutils)
and the raw client dns_client.py. One boot for the module: every record
type, NXDOMAIN/NODATA/REFUSED, the big TXT truncated over UDP and whole over
TCP, malformed queries with the server still answering, the TCP bounds, a query
from a service's source port (19) unanswered, and
a reflection burst from one network rate-limited while another network is
still answered. The same questions are put to the engine on the host by
apps/dns/tests/host_dig.py (make test-host)."""
import json
import os
import re
import subprocess
import sys
import time

import pytest

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "..", "..", "tests", "qemu"))
import netns as nsmod  # noqa: E402
from httpc import promtool_findings  # noqa: E402
import rootskip  # noqa: E402
from vm import ROOT, Vm  # noqa: E402

sys.path.insert(0, HERE)
from digout import count, flags, status  # noqa: E402

DNS_IMAGE = os.environ.get("VIREO_DNS_IMAGE", os.path.join(ROOT, "build", "apps", "dns", "vireo.img"))
CLIENT = os.path.join(HERE, "dns_client.py")
READY = r"^vireo: ready ip=(\S+) http=(\d+)$"
ZONE_LINE = r"^dns: zone vireo\.test\. \((\d+) records\) on udp/tcp 53, rrl 20/s slip 2$"
OTHER_NET = "10.78.0.1"		# another /24: answered during the burst
ATTACK_NET = "10.79.0.1"	# the reflection burst's (spoofed, in real life) source


@pytest.fixture(scope="module")
def dns():
    if not os.path.exists(DNS_IMAGE):
        pytest.fail(f"{DNS_IMAGE} missing: run `make APP=apps/dns image` (make test does)")
    if not nsmod.available():
        rootskip.skip_root_only()
    with nsmod.Netns() as ns:
        for a in (OTHER_NET, ATTACK_NET):
            subprocess.run(ns.wrap + ["ip", "addr", "add", f"{a}/24", "dev", ns.tap], check=True)
        vm = Vm(cmdline=f"ip={ns.guest_ip}/24 gw={ns.host_ip}", image=DNS_IMAGE, wrap=ns.wrap,
                extra=ns.qemu_args())
        try:
            vm.wait_for(READY, timeout=120)
            vm.wait_for(ZONE_LINE, timeout=30)
            yield ns, vm
        finally:
            vm.stop()
    assert "vireo: panic" not in vm.text


def dig(ns, *args, tool="dig", src=None):
    tries = "+tries=1" if tool == "dig" else "+retry=0"
    cmd = [tool, f"@{ns.guest_ip}", "+time=5", tries] + (["-b", src] if src else []) + list(args)
    return ns.run(*cmd, timeout=60).stdout.decode()


def client(ns, *args):
    p = ns.run(sys.executable, CLIENT, *[str(a) for a in args], timeout=180)
    assert p.returncode == 0, p.stderr.decode()
    return json.loads(p.stdout)


def metric(ns, name):
    out = ns.run("curl", "-s", "--max-time", "10", f"http://{ns.guest_ip}/metrics").stdout.decode()
    m = re.search("^" + re.escape(name) + r" (\d+)$", out, re.M)
    return int(m.group(1)) if m else None


def test_each_type(dns):
    ns, _ = dns
    assert dig(ns, "+short", "vireo.test", "A").split() == ["192.0.2.1"]
    assert dig(ns, "+short", "vireo.test", "AAAA").split() == ["2001:db8::1"]
    assert sorted(dig(ns, "+short", "vireo.test", "NS").split()) == ["ns1.vireo.test.", "ns2.vireo.test."]
    assert dig(ns, "+short", "vireo.test", "MX").splitlines() == ["10 mail.vireo.test.", "20 mail2.example.net."]
    assert dig(ns, "+short", "txt.vireo.test", "TXT").strip() == \
        '"hello" "world" "bare-word" "with \\"quotes\\" and \\\\ and A"'
    assert dig(ns, "+short", "vireo.test", "SOA").split() == \
        ["ns1.vireo.test.", "hostmaster.vireo.test.", "2026120401", "7200", "900", "1209600", "300"]
    assert dig(ns, "+short", "www.vireo.test", "A").split() == ["web.vireo.test.", "host.vireo.test.", "192.0.2.80"]
    out = dig(ns, "vireo.test", "NS", tool="kdig")
    assert "NOERROR" in out and "ADDITIONAL: 3" in out	# glue for ns1 (A, AAAA) and ns2


def test_header_and_negative(dns):
    ns, _ = dns
    out = dig(ns, "ViReO.TeSt", "A")
    assert status(out) == "NOERROR"
    assert flags(out) == {"qr", "aa", "rd"}	# RA clear: no recursion
    assert re.search(r"^;ViReO\.TeSt\.\s+IN\s+A$", out, re.M)
    out = dig(ns, "nope.vireo.test", "A")
    assert status(out) == "NXDOMAIN" and count(out, "AUTHORITY") == 1
    assert re.search(r"^vireo\.test\.\s+300\s+IN\s+SOA", out, re.M)
    out = dig(ns, "host.vireo.test", "MX")
    assert status(out) == "NOERROR" and count(out, "ANSWER") == 0 and count(out, "AUTHORITY") == 1
    out = dig(ns, "sub.vireo.test", "A")	# an empty non-terminal
    assert status(out) == "NOERROR" and count(out, "ANSWER") == 0
    assert status(dig(ns, "example.com", "A")) == "REFUSED"
    assert status(dig(ns, "CH", "TXT", "version.bind")) == "REFUSED"	# dns.chaos is off by default
    out = dig(ns, "+norec", "www.child.vireo.test", "A")
    assert "aa" not in flags(out) and count(out, "AUTHORITY") == 2


def test_truncated_over_udp_whole_over_tcp(dns):
    ns, _ = dns
    out = dig(ns, "+noedns", "+ignore", "big.vireo.test", "TXT")
    assert "tc" in flags(out) and count(out, "ANSWER") == 1
    out = dig(ns, "+ignore", "+bufsize=4096", "big.vireo.test", "TXT")
    assert "tc" in flags(out) and count(out, "ANSWER") == 4	# EDNS size clamped to 1232
    out = dig(ns, "+noedns", "big.vireo.test", "TXT")		# dig falls back to TCP itself
    assert "Truncated, retrying in TCP mode" in out and count(out, "ANSWER") == 12
    out = dig(ns, "+tcp", "big.vireo.test", "TXT")
    assert "tc" not in flags(out) and count(out, "ANSWER") == 12
    out = dig(ns, "+tcp", "big.vireo.test", "TXT", tool="kdig")
    assert "ANSWER: 12" in out and "(TCP)" in out


def test_malformed_then_still_serving(dns):
    ns, _ = dns
    r = client(ns, "malformed", ns.guest_ip, 53)
    for silent in ("short", "empty", "response"):
        assert r[silent] is None, silent
    for name in ("qdcount0", "qdcount2", "ancount1", "truncated_name", "pointer_in_name", "label_over_63",
                 "name_over_255", "trailing_byte", "opt_missing", "opt_overrun", "garbage"):
        assert r[name] is not None and r[name]["rcode"] == 1 and r[name]["len"] == 12, (name, r[name])
    for name in ("opcode_notify", "opcode_update"):
        assert r[name]["rcode"] == 4, name
    assert r["edns_version_1"]["ar"] == 1
    assert r["after"]["rcode"] == 0 and r["after"]["an"] == 1
    assert dig(ns, "+short", "host.vireo.test", "AAAA", tool="kdig").split() == ["2001:db8::80"]


def test_tcp_pipelining_and_bounds(dns):
    ns, _ = dns
    mem0 = metric(ns, "vireo_app_mem_bytes")
    r = client(ns, "tcp", ns.guest_ip, 53)
    assert [h["id"] for h in r["pipelined"]] == [100, 101, 102, 103]
    assert [h["rcode"] for h in r["pipelined"]] == [0, 0, 3, 0]
    assert r["pipelined"][3]["an"] == 12 and r["pipelined"][3]["tc"] == 0
    assert r["bytewise"]["an"] == 1
    assert [(h["an"], h["tc"]) for h in r["big_pipelined"]] == [(12, 0)] * 8
    assert r["bad_length"] in ("closed", "reset")
    assert r["bounded"] == 100	# DNS_TCP_QUERIES, then the server closes
    assert metric(ns, "dns_tcp_bad_length_total") >= 1
    # Every connection's 9,246-byte block is back once they are closed.
    for _ in range(50):
        if metric(ns, "vireo_app_mem_bytes") <= mem0:
            break
        time.sleep(0.2)
    assert metric(ns, "vireo_app_mem_bytes") <= mem0	# (an earlier test's may close meanwhile)
    # The app's families (and the runtime's, the services' included) pass promtool.
    out = ns.run("curl", "-s", "--max-time", "10", f"http://{ns.guest_ip}/metrics").stdout
    assert b"dns_tcp_bad_length_total" in out and b"vireo_app_tcp_connections_accepted_total" in out
    assert promtool_findings(out) == []


def test_query_from_service_port_unanswered(dns):
    """A query from chargen's port (19) gets no answer: the runtime drops a
    datagram from a service's port before the app (the loop a spoofed
    source would start) and counts it; the same from a high port is answered."""
    ns, _ = dns
    name = 'vireo_app_udp_dropped_source_total{service="dns",reason="service_port"}'
    before = metric(ns, name)
    assert before is not None
    q = ["+time=2", "+tries=1", "+short", "host.vireo.test", "A"]
    out = ns.run("dig", f"@{ns.guest_ip}", "-b", f"{ns.host_ip}#19", *q, timeout=30).stdout.decode()
    assert "192.0.2.80" not in out and "timed out" in out, out
    assert metric(ns, name) == before + 1
    out = ns.run("dig", f"@{ns.guest_ip}", "-b", f"{ns.host_ip}#40019", *q, timeout=30).stdout.decode()
    assert out.split() == ["192.0.2.80"], out


def test_reflection_burst_limited_other_network_served(dns):
    ns, _ = dns
    slips0 = metric(ns, 'dns_rrl_total{verdict="slip"}')
    burst = client(ns, "burst", ns.guest_ip, 53, ATTACK_NET, 400)
    other = client(ns, "burst", ns.guest_ip, 53, OTHER_NET, 3)
    # 20 a second and a burst of 20: sending 400 takes well under a second
    # here, but the guest may take longer to read them all (TCG).
    assert burst["answered"] >= 20, burst
    assert burst["answered"] <= 20 + 20 * (burst["send_s"] + 10), burst
    assert burst["slipped"] >= 50 and burst["silent"] >= 100, burst
    assert other["answered"] == 3, other
    assert metric(ns, 'dns_rrl_total{verdict="drop"}') >= burst["silent"] // 2
    assert metric(ns, 'dns_rrl_total{verdict="slip"}') - slips0 >= burst["slipped"]
    # The limited network's real clients get through over TCP (dig follows the slip's TC).
    assert dig(ns, "+short", "+tcp", "host.vireo.test", "A", src=ATTACK_NET).split() == ["192.0.2.80"]
