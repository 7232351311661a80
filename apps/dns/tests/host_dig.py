"""The engine behind host sockets (build/host/dns_serve, ASan/UBSan) asked by
real clients: dig and kdig (Debian's dnsutils, knot-dnsutils) and the raw
client apps/dns/tests/dns_client.py, on 127.0.0.1. The same questions are put to
the booted appliance by apps/dns/tests/test_dns.py; this runs in make test-host."""
import json
import os
import re
import socket
import subprocess
import sys

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))
SERVE = os.path.join(ROOT, "build", "host", "dns_serve")
CLIENT = os.path.join(ROOT, "apps", "dns", "tests", "dns_client.py")
sys.path.insert(0, os.path.join(ROOT, "apps", "dns", "tests"))
from digout import count, flags, status  # noqa: E402


def free_port():
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    p = s.getsockname()[1]
    s.close()
    return p


class Server:
    def __init__(self, rate, slip):
        self.port = free_port()
        self.proc = subprocess.Popen([SERVE, str(self.port), str(rate), str(slip), "120"], stdout=subprocess.PIPE,
                                     stderr=subprocess.STDOUT, text=True)
        assert self.proc.stdout.readline().strip() == "dns_serve: ready"

    def stop(self):
        self.proc.terminate()
        out = self.proc.communicate(timeout=10)[0]
        # ASan/UBSan reports go to the same stream: none allowed.
        assert "ERROR" not in out and "runtime error" not in out, out
        return out


@pytest.fixture(scope="module")
def srv():
    s = Server(0, 0)
    yield s
    s.stop()


def dig(srv, *args, tool="dig"):
    tries = "+tries=1" if tool == "dig" else "+retry=0"
    p = subprocess.run([tool, "@127.0.0.1", "-p", str(srv.port), "+time=2", tries] + list(args),
                       capture_output=True, text=True, timeout=30)
    return p.stdout


def test_each_type(srv):
    assert dig(srv, "+short", "vireo.test", "A").split() == ["192.0.2.1"]
    assert dig(srv, "+short", "vireo.test", "AAAA").split() == ["2001:db8::1"]
    assert sorted(dig(srv, "+short", "vireo.test", "NS").split()) == ["ns1.vireo.test.", "ns2.vireo.test."]
    assert dig(srv, "+short", "vireo.test", "MX").splitlines() == ["10 mail.vireo.test.", "20 mail2.example.net."]
    assert dig(srv, "+short", "txt.vireo.test", "TXT").strip() == \
        '"hello" "world" "bare-word" "with \\"quotes\\" and \\\\ and A"'
    assert dig(srv, "+short", "vireo.test", "SOA").split() == \
        ["ns1.vireo.test.", "hostmaster.vireo.test.", "2026120401", "7200", "900", "1209600", "300"]
    assert dig(srv, "+short", "www.vireo.test", "A").split() == ["web.vireo.test.", "host.vireo.test.", "192.0.2.80"]


def test_header_bits_and_case(srv):
    out = dig(srv, "ViReO.TeSt", "A")
    assert status(out) == "NOERROR"
    assert flags(out) == {"qr", "aa", "rd"}	# RA clear: no recursion
    assert re.search(r"^;ViReO\.TeSt\.\s+IN\s+A$", out, re.M)
    out = dig(srv, "+norec", "vireo.test", "A")
    assert flags(out) == {"qr", "aa"}


def test_negative_and_refused(srv):
    out = dig(srv, "nope.vireo.test", "A")
    assert status(out) == "NXDOMAIN"
    assert count(out, "ANSWER") == 0 and count(out, "AUTHORITY") == 1
    assert re.search(r"^vireo\.test\.\s+300\s+IN\s+SOA", out, re.M)
    out = dig(srv, "host.vireo.test", "MX")
    assert status(out) == "NOERROR" and count(out, "ANSWER") == 0 and count(out, "AUTHORITY") == 1
    out = dig(srv, "example.com", "A")
    assert status(out) == "REFUSED" and "aa" not in flags(out)
    out = dig(srv, "+tcp", "vireo.test", "AXFR")
    assert "Transfer failed" in out or "REFUSED" in out


def test_referral(srv):
    out = dig(srv, "+norec", "www.child.vireo.test", "A")
    assert status(out) == "NOERROR" and "aa" not in flags(out)
    assert count(out, "AUTHORITY") == 2
    assert re.search(r"^ns\.child\.vireo\.test\.\s+3600\s+IN\s+A\s+192\.0\.2\.200$", out, re.M)


def test_truncation_and_tcp(srv):
    out = dig(srv, "+noedns", "+ignore", "big.vireo.test", "TXT")
    assert "tc" in flags(out)
    assert count(out, "ANSWER") == 1
    out = dig(srv, "+ignore", "+bufsize=4096", "big.vireo.test", "TXT")
    assert "tc" in flags(out) and count(out, "ANSWER") == 4	# clamped to 1232
    out = dig(srv, "+noedns", "big.vireo.test", "TXT")	# dig retries over TCP by itself
    assert "Truncated, retrying in TCP mode" in out
    assert count(out, "ANSWER") == 12
    out = dig(srv, "+tcp", "big.vireo.test", "TXT")
    assert "tc" not in flags(out) and count(out, "ANSWER") == 12
    out = dig(srv, "+tcp", "big.vireo.test", "TXT", tool="kdig")
    assert "ANSWER: 12" in out and "(TCP)" in out


def client(*args):
    p = subprocess.run([sys.executable, CLIENT] + [str(a) for a in args], capture_output=True, text=True,
                       timeout=120)
    assert p.returncode == 0, p.stderr
    return json.loads(p.stdout)


def test_malformed_then_still_serving(srv):
    r = client("malformed", "127.0.0.1", srv.port)
    for silent in ("short", "empty", "response"):
        assert r[silent] is None, silent
    for name in ("qdcount0", "qdcount2", "ancount1", "truncated_name", "pointer_in_name", "label_over_63",
                 "name_over_255", "trailing_byte", "opt_missing", "opt_overrun", "garbage"):
        assert r[name] is not None and r[name]["rcode"] == 1 and r[name]["len"] == 12, (name, r[name])
    for name in ("opcode_notify", "opcode_update"):
        assert r[name]["rcode"] == 4, name
    assert r["edns_version_1"]["rcode"] == 0 and r["edns_version_1"]["ar"] == 1	# BADVERS is in the OPT
    assert r["after"]["rcode"] == 0 and r["after"]["an"] == 1


def test_tcp_framing(srv):
    r = client("tcp", "127.0.0.1", srv.port, "unbounded")
    assert [h["id"] for h in r["pipelined"]] == [100, 101, 102, 103]
    assert [h["rcode"] for h in r["pipelined"]] == [0, 0, 3, 0]
    assert r["pipelined"][3]["an"] == 12 and r["pipelined"][3]["tc"] == 0
    assert r["bytewise"]["an"] == 1
    assert [(h["an"], h["tc"]) for h in r["big_pipelined"]] == [(12, 0)] * 8
    assert r["bad_length"] in ("closed", "reset")


def test_rate_limit_one_prefix_not_another():
    s = Server(10, 2)
    try:
        burst = client("burst", "127.0.0.1", s.port, "127.0.0.1", 300)
        # 10 a second: a burst sent within well under a second gets about 10
        # answers (a few more if sending took longer), half of the rest slip.
        assert 10 <= burst["answered"] <= 10 + 10 * (burst["send_s"] + 1), burst
        # (Some of the burst may be lost in the host's socket buffers, so
        # only a part of the expected 145 slips is asked for.)
        assert burst["slipped"] >= 50, burst
        assert burst["silent"] >= 100, burst
        # Another /24 (127.0.1.1, loopback too) is answered meanwhile.
        other = client("burst", "127.0.0.1", s.port, "127.0.1.1", 3)
        assert other["answered"] == 3, other
    finally:
        out = s.stop()
    m = re.search(r"rrl pass (\d+) drop (\d+) slip (\d+)", out)
    assert int(m.group(1)) == burst["answered"] + 3 and int(m.group(3)) >= burst["slipped"], out
