"""apps/dns's operator features, booted once with them on (make test-apps):
NSID (RFC 5001) as kdig asks for it, CHAOS version.bind and id.server, DNS
cookies (RFC 7873) as dig sends them, a client with a good server cookie
answered past its prefix's rate limit, and the global answers-per-second
ceiling (dns.rrl.global) holding the total down while many prefixes each
stay within their own budget. Off by default: apps/dns/tests/test_dns.py's
boot checks CHAOS is refused there."""
import json
import os
import re
import subprocess
import sys

import pytest

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "..", "..", "tests", "qemu"))
import netns as nsmod  # noqa: E402
import rootskip  # noqa: E402
from vm import ROOT, Vm  # noqa: E402

DNS_IMAGE = os.environ.get("VIREO_DNS_IMAGE", os.path.join(ROOT, "build", "apps", "dns", "vireo.img"))
CLIENT = os.path.join(HERE, "dns_client.py")
READY = r"^vireo: ready ip=(\S+) http=(\d+)$"
# Eight other /24s for the ceiling's burst, one for the cookie client.
NETS = [f"10.{80 + i}.0.1" for i in range(8)]
COOKIE_NET = "10.90.0.1"


@pytest.fixture(scope="module")
def dns():
    if not os.path.exists(DNS_IMAGE):
        pytest.fail(f"{DNS_IMAGE} missing: run `make APP=apps/dns image` (make test does)")
    if not nsmod.available():
        rootskip.skip_root_only()
    with nsmod.Netns() as ns:
        for a in NETS + [COOKIE_NET]:
            subprocess.run(ns.wrap + ["ip", "addr", "add", f"{a}/24", "dev", ns.tap], check=True)
        vm = Vm(cmdline=f"ip={ns.guest_ip}/24 gw={ns.host_ip} dns.nsid=ns-a.vireo dns.chaos=on dns.cookies=on "
                "dns.rrl.rate=10 dns.rrl.slip=0 dns.rrl.global=40", image=DNS_IMAGE, wrap=ns.wrap,
                extra=ns.qemu_args())
        try:
            vm.wait_for(READY, timeout=120)
            vm.wait_for(r"^dns: nsid ns-a\.vireo, cookies on, chaos on$", timeout=30)
            yield ns, vm
        finally:
            vm.stop()
    assert "vireo: panic" not in vm.text


def dig(ns, *args, tool="dig"):
    tries = "+tries=1" if tool == "dig" else "+retry=0"
    return ns.run(tool, f"@{ns.guest_ip}", "+time=5", tries, *args, timeout=60).stdout.decode()


def client(ns, *args):
    p = ns.run(sys.executable, CLIENT, *[str(a) for a in args], timeout=180)
    assert p.returncode == 0, p.stderr.decode()
    return json.loads(p.stdout)


def test_boot_lines(dns):
    _, vm = dns
    assert re.search(r"^dns: built-in zone, serial 2026120401$", vm.text, re.M), vm.text
    assert re.search(r"^dns: at most 40 UDP answers a second in all \(dns\.rrl\.global\)$", vm.text, re.M)


def test_nsid_and_chaos(dns):
    ns, _ = dns
    out = dig(ns, "+nsid", "vireo.test", "SOA", tool="kdig")
    assert re.search(r'^;; NSID: 6E732D612E766972656F "ns-a\.vireo"$', out, re.M), out
    assert 'NSID' not in dig(ns, "vireo.test", "SOA", tool="kdig")	# only to those who ask
    assert dig(ns, "+short", "CH", "TXT", "version.bind").strip() == '"vireo"'
    assert dig(ns, "+short", "CH", "TXT", "id.server").strip() == '"ns-a.vireo"'
    assert "status: REFUSED" in dig(ns, "CH", "TXT", "authors.bind")


def test_cookies(dns):
    ns, _ = dns
    # dig sends a client cookie and shows the server's.
    out = dig(ns, "+cookie", "vireo.test", "A")
    m = re.search(r"^; COOKIE: ([0-9a-f]{16})([0-9a-f]{32})( \(good\))?$", out, re.M)
    assert m, out
    # A client that sends back its server cookie is not rate-limited: 60
    # at once from one /24, with dns.rrl.rate=10 (and slip 0: no slips).
    r = client(ns, "cookieburst", ns.guest_ip, 53, COOKIE_NET, 60)
    assert r["cookie_len"] == 24, r
    assert r["answered"] == 60, r


def test_global_ceiling(dns):
    ns, _ = dns
    # 8 prefixes x 8 queries at once: each within its 10 a second, 64 in
    # all, over the 40 a second ceiling (a burst of 40).
    r = client(ns, "multiburst", ns.guest_ip, 53, ",".join(NETS), 8)
    assert r["sent"] == 64
    assert 40 <= r["answered"] <= 40 + 8, r	# a few more if the guest took a while to read them
    assert r["slipped"] == 0, r
    m = ns.run("curl", "-s", "--max-time", "10", f"http://{ns.guest_ip}/metrics").stdout.decode()
    drops = re.search(r'^dns_rrl_total\{verdict="drop"\} (\d+)$', m, re.M)
    assert drops and int(drops.group(1)) >= 64 - 48, m[-2000:]
