"""Cloud metadata (metadata=gce|aws|auto): a fake metadata server
(metadata_server.py) on 169.254.169.254 in the test's namespace, reached
through the gateway. The body's keys take effect after boot (http= moves
the listener, ip= re-addresses the netif), boot-only keys are refused by
name, and hostile servers (huge, dripping, garbage, redirecting) are
bounded and warned about while the appliance serves on its boot
configuration."""
import os
import re
import shutil
import subprocess
import sys

import pytest

READY = r"^vireo: ready ip=(\S+) http=(\d+)(?: https=\d+)?$"
SERVER = os.path.join(os.path.dirname(os.path.abspath(__file__)), "metadata_server.py")


@pytest.fixture
def mdserver(netns, tmp_path):
    """start(mode, body) runs the fake server in the namespace; returns the
    process (its stdout logs the requests)."""
    subprocess.run(["ip", "-n", netns.name, "addr", "add", "169.254.169.254/32", "dev", netns.tap], check=True)
    procs = []

    def start(mode, body=b""):
        f = tmp_path / "body"
        f.write_bytes(body)
        p = netns.popen(sys.executable, SERVER, mode, str(f), stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        procs.append(p)
        assert p.stdout.readline() == b"listening\n", p.stderr.read()
        return p

    yield start
    for p in procs:
        p.kill()
        p.wait()


def _requests(proc):
    proc.kill()
    out, _ = proc.communicate(timeout=10)
    return [line for line in out.decode().split("\n") if line.startswith("REQ ")]


def _boot(boot, netns, mode, extra=""):
    return boot(cmdline=f"ip={netns.guest_ip}/24 gw={netns.host_ip} metadata={mode} {extra}".strip(),
                wrap=netns.wrap, extra=netns.qemu_args())


def _get(netns, url):
    return netns.run("curl", "-sS", "--max-time", "10", url)


def test_gce_attribute_moves_the_http_port(boot, netns, mdserver):
    srv = mdserver("gce", b"# from the instance attribute\nhttp=8080\nverbose=on\ndns=10.77.0.1\nnosuchkey=1\n"
                          b"syslog=10.77.0.1:5514\nntp=10.77.0.1\n")
    vm = _boot(boot, netns, "gce")
    m = vm.wait_for(READY, timeout=120)
    assert m.group(2) == "8080", vm.text
    text = vm.text
    assert re.search(r"^metadata: asking gce at 169\.254\.169\.254 \(at most 10 s\)$", text, re.M)
    took = re.search(r"^metadata: gce: \d+ bytes of configuration after (\d+) ms$", text, re.M)
    assert took, text
    print(f"metadata: the gce step took {took.group(1)} ms")
    assert re.search(r"^config: http=8080 \(from metadata\)$", text, re.M)
    assert re.search(r"^config: dns=10\.77\.0\.1 \(from metadata\)$", text, re.M)
    assert re.search(r"^warning: metadata line 3: verbose takes effect only at boot", text, re.M), text
    assert re.search(r"^warning: metadata line 5: .*nosuchkey", text, re.M), text
    assert re.search(r"^http: listening on port 8080 \(was 80\)$", text, re.M)
    # syslog= and ntp= started after boot, from metadata
    assert re.search(r"^syslog: to 10\.77\.0\.1 port 5514$", text, re.M), text
    assert re.search(r"^ntp: server 10\.77\.0\.1$", text, re.M), text
    # the ready line came after the metadata step
    assert text.index("bytes of configuration") < m.start()
    assert _get(netns, f"http://{netns.guest_ip}:8080/healthz").stdout == b"ok\n"
    assert _get(netns, f"http://{netns.guest_ip}/healthz").returncode != 0   # port 80 closed
    reqs = _requests(srv)
    assert reqs == ["REQ GET /computeMetadata/v1/instance/attributes/vireo-config "
                    "connection,host,metadata-flavor,user-agent"], reqs


def test_auto_falls_back_to_imdsv2_and_readdresses(boot, netns, mdserver):
    srv = mdserver("aws", b"ip=10.77.0.3/24\nhttp=8081\n")
    vm = _boot(boot, netns, "auto")
    m = vm.wait_for(READY, timeout=120)
    assert m.groups() == ("10.77.0.3", "8081"), vm.text
    assert re.search(r"^metadata: gce: not found \(404\)$", vm.text, re.M)
    assert re.search(r"^metadata: aws user-data: \d+ bytes of configuration", vm.text, re.M)
    assert re.search(r"^net: 10\.77\.0\.3/24 gw 10\.77\.0\.1 \(static, changed after boot\)$", vm.text, re.M)
    assert _get(netns, "http://10.77.0.3:8081/healthz").stdout == b"ok\n"
    reqs = _requests(srv)
    assert [r.split(" ")[1:3] for r in reqs] == [
        ["GET", "/computeMetadata/v1/instance/attributes/vireo-config"],
        ["PUT", "/latest/api/token"], ["GET", "/latest/user-data"]], reqs
    assert "x-aws-ec2-metadata-token-ttl-seconds" in reqs[1] and "x-aws-ec2-metadata-token" in reqs[2]


def test_aws_token_refused_falls_back_to_imdsv1(boot, netns, mdserver):
    """A server that refuses the IMDSv2 token request (405, as IMDSv1-only
    EC2-compatible services do) is asked for the user data without a
    token, once."""
    srv = mdserver("aws1", b"http=8082\n")
    vm = _boot(boot, netns, "aws")
    m = vm.wait_for(READY, timeout=120)
    assert m.group(2) == "8082", vm.text
    assert re.search(r"^warning: metadata: aws token: HTTP 405$", vm.text, re.M), vm.text
    assert re.search(r"^metadata: aws token: refused; asking IMDSv1 \(no token\)$", vm.text, re.M), vm.text
    assert re.search(r"^metadata: aws user-data \(IMDSv1\): \d+ bytes of configuration", vm.text, re.M)
    assert re.search(r"^config: http=8082 \(from metadata\)$", vm.text, re.M)
    assert _get(netns, f"http://{netns.guest_ip}:8082/healthz").stdout == b"ok\n"
    reqs = _requests(srv)
    assert [r.split(" ")[1:3] for r in reqs] == [["PUT", "/latest/api/token"], ["GET", "/latest/user-data"]], reqs
    assert "x-aws-ec2-metadata-token" not in reqs[1], reqs


@pytest.mark.parametrize("mode,warning", [
    ("huge", r"^warning: metadata: gce: body over 16384 bytes$"),
    ("garbage", r"^warning: metadata: gce: malformed status line$"),
    ("redirect", r"^warning: metadata: gce: HTTP 302 \(redirects are not followed\)$"),
    ("drip", r"^metadata: gce: try 2: no answer within 2 s$"),
])
def test_hostile_server_is_bounded_and_boot_goes_on(boot, netns, mdserver, mode, warning):
    srv = mdserver(mode)
    vm = _boot(boot, netns, "gce")
    m = vm.wait_for(READY, timeout=120)
    assert m.group(2) == "80"
    assert re.search(warning, vm.text, re.M), vm.text
    took = re.search(r"^metadata: none applied \(\S.*\) after (\d+) ms; serving with the boot configuration$",
                     vm.text, re.M)
    assert took and int(took.group(1)) <= 10500, vm.text
    print(f"metadata: {mode} server: gave up after {took.group(1)} ms")
    assert "(from metadata)" not in vm.text
    assert _get(netns, f"http://{netns.guest_ip}/healthz").stdout == b"ok\n"
    # a bad answer is not asked again; no answer is, once
    assert len(_requests(srv)) == (2 if mode == "drip" else 1)


def test_no_server_times_out_within_the_bound(boot, netns):
    # No 169.254.169.254 anywhere: the gateway answers nothing for it.
    vm = _boot(boot, netns, "auto")
    vm.wait_for(READY, timeout=120)
    took = re.search(r"^metadata: none applied \(.*\) after (\d+) ms", vm.text, re.M)
    assert took and int(took.group(1)) <= 10500, vm.text
    print(f"metadata: no server: gave up after {took.group(1)} ms")
    assert _get(netns, f"http://{netns.guest_ip}/healthz").stdout == b"ok\n"


def test_metadata_after_a_dhcp_lease(boot, netns, mdserver, tmp_path):
    """With DHCP (Debian's dnsmasq in the namespace, its address the
    router), the metadata step runs once the lease is bound."""
    dnsmasq = shutil.which("dnsmasq") or "/usr/sbin/dnsmasq"
    if not os.path.exists(dnsmasq):
        pytest.fail("dnsmasq missing: `make deps` installs dnsmasq-base")
    dhcp = netns.popen(dnsmasq, "--no-daemon", "--conf-file=/dev/null", "--port=0", f"--interface={netns.tap}",
                       "--bind-interfaces", "--dhcp-range=10.77.0.50,10.77.0.60,255.255.255.0,1h",
                       "--dhcp-authoritative", f"--dhcp-leasefile={tmp_path}/leases",
                       f"--pid-file={tmp_path}/dnsmasq.pid", "--user=root",
                       stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        mdserver("gce", b"http=8082\n")
        vm = boot(cmdline="metadata=gce", wrap=netns.wrap, extra=netns.qemu_args())
        m = vm.wait_for(READY, timeout=120)
        assert m.group(2) == "8082", vm.text
        assert re.search(r"^net: 10\.77\.0\.\d+/24 gw 10\.77\.0\.1 \(dhcp\)$", vm.text, re.M), vm.text
        assert _get(netns, f"http://{m.group(1)}:8082/healthz").stdout == b"ok\n"
    finally:
        dhcp.terminate()
        dhcp.wait(timeout=10)
