"""Wall-clock time over SNTP: chronyd (Debian's chrony) serving in the
test's namespace sets the guest's clock; the HTTP Date header and the
console's timestamps follow it. A hostile server's bad replies are refused,
logged a bounded number of times, and the appliance keeps serving."""
import calendar
import email.utils
import os
import re
import shutil
import subprocess
import time

import pytest

READY = r"^vireo: ready ip=(\S+) http=(\d+)(?: https=\d+)?$"
CHRONYD = shutil.which("chronyd") or "/usr/sbin/chronyd"
STAMP = r"\[\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z\] "


def _wait_udp_123(netns, timeout=10):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        out = netns.run("ss", "-Hlun", "sport", "= :123").stdout.decode()
        if out.strip():
            return
        time.sleep(0.2)
    raise AssertionError("nothing listens on UDP 123 in the namespace")


@pytest.fixture
def chronyd(netns, tmp_path):
    """chronyd serving the host's clock (-x: it never touches it) on the
    namespace's side of the tap, stratum 8 from its local reference."""
    if not os.path.exists(CHRONYD):
        pytest.fail("chronyd missing: `make deps` installs chrony")
    conf = tmp_path / "chrony.conf"
    conf.write_text(f"cmdport 0\nallow {netns.host_ip}/24\nlocal stratum 8\n"
                    f"pidfile {tmp_path}/chronyd.pid\ndriftfile {tmp_path}/drift\n")
    log = open(tmp_path / "chronyd.log", "wb")
    proc = netns.popen(CHRONYD, "-x", "-d", "-f", str(conf), stdout=log, stderr=subprocess.STDOUT)
    try:
        _wait_udp_123(netns)
        yield proc
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait(timeout=10)
        log.close()


def test_sntp_sets_the_clock_date_and_stamps(boot, netns, chronyd):
    vm = boot(cmdline=f"ip={netns.guest_ip}/24 ntp={netns.host_ip}", wrap=netns.wrap, extra=netns.qemu_args())
    vm.wait_for(READY, timeout=120)
    m = vm.wait_for(rf"^{STAMP}time: (\S+) from ntp {re.escape(netns.host_ip)} \(stratum 8, round trip \d+ us\)$",
                    timeout=60)
    guest = calendar.timegm(time.strptime(m.group(1)[:19], "%Y-%m-%dT%H:%M:%S"))
    assert abs(guest - time.time()) < 30, (m.group(1), time.time())
    r = netns.run("curl", "-sS", "-i", "--max-time", "20", f"http://{netns.guest_ip}/healthz")
    head = r.stdout.decode(errors="replace")
    date = re.search(r"^Date: (.*)\r$", head, re.M)
    assert date, head
    assert re.fullmatch(r"[A-Z][a-z]{2}, \d\d [A-Z][a-z]{2} \d{4} \d\d:\d\d:\d\d GMT", date.group(1))
    served = email.utils.parsedate_to_datetime(date.group(1)).timestamp()
    assert abs(served - time.time()) < 5, (date.group(1), time.time())
    # site files carry Last-Modified (the build's time, never after Date)
    # and answer If-Modified-Since; If-None-Match, when present, decides
    r = netns.run("curl", "-sS", "-i", "--max-time", "20", f"http://{netns.guest_ip}/index.html")
    head = r.stdout.decode(errors="replace").split("\r\n\r\n")[0]
    lm = re.search(r"^Last-Modified: ([^\r\n]*)", head, re.M)
    assert lm and head.startswith("HTTP/1.1 200"), head
    lm_s = email.utils.parsedate_to_datetime(lm.group(1)).timestamp()
    assert calendar.timegm((2024, 1, 1, 0, 0, 0)) <= lm_s <= served + 1, (lm.group(1), date.group(1))
    earlier = email.utils.format_datetime(email.utils.parsedate_to_datetime(lm.group(1)).replace(
        year=2023), usegmt=True)
    for hdrs, want in (([f"If-Modified-Since: {lm.group(1)}"], "304"),
                       ([f"If-Modified-Since: {earlier}"], "200"),
                       (["If-Modified-Since: yesterday"], "200"),
                       (['If-None-Match: "nope"', f"If-Modified-Since: {lm.group(1)}"], "200")):
        args = []
        for h in hdrs:
            args += ["-H", h]
        r = netns.run("curl", "-sS", "-o", "/dev/null", "-w", "%{http_code}", "--max-time", "20", *args,
                      f"http://{netns.guest_ip}/index.html")
        assert r.stdout.decode() == want, (hdrs, r.stdout, r.stderr)
    # every console line from the clock on carries its stamp; none before
    after = vm.text[m.start():]
    lines = [line for line in after.split("\n")[:-1] if line]
    assert lines and all(re.match(STAMP, line) for line in lines), lines
    assert not re.search(rf"^{STAMP}", vm.text[:m.start()], re.M)


HOSTILE = r'''
import socket, struct, sys
s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
s.bind(("{host}", 123))
s.settimeout(150)  # the guest's boot, then {secs} s after each request
n = 0
def hdr(li_vn_mode, stratum, orig, rx, tx, ref=b"\0\0\0\0"):
    return struct.pack("!BBbb", li_vn_mode, stratum, 0, 0) + b"\0" * 8 + ref + b"\0" * 8 + orig + rx + tx
ntp = struct.pack("!II", 3_940_000_000, 0)  # 2024-11
try:
    while True:
        req, peer = s.recvfrom(2048)
        s.settimeout({secs})
        n += 1
        orig = req[40:48]
        bad = [
            hdr(0x24, 2, orig, ntp, ntp)[:47],                         # short
            hdr(0x23, 2, orig, ntp, ntp),                              # mode 3
            hdr(0x24, 2, b"\1" * 8, ntp, ntp),                         # wrong originate
            hdr(0x24, 0, orig, ntp, ntp, b"RATE"),                     # kiss-o'-death
            hdr(0xe4, 2, orig, ntp, ntp),                              # unsynchronised
            hdr(0x24, 2, orig, struct.pack("!II", 3_000_000_000, 0), struct.pack("!II", 3_000_000_000, 0)),
        ]
        for b in bad:
            s.sendto(b, peer)
        s.sendto(b"x" * 1400, peer)                                    # oversized junk
except socket.timeout:
    pass
print(n)
'''


def test_hostile_server_refused_and_serving_goes_on(boot, netns):
    vm = boot(cmdline=f"ip={netns.guest_ip}/24 ntp={netns.host_ip}", wrap=netns.wrap, extra=netns.qemu_args())
    srv = netns.popen("/usr/bin/python3", "-c", HOSTILE.format(host=netns.host_ip, secs=10),
                      stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    try:
        vm.wait_for(READY, timeout=120)
        out, err = srv.communicate(timeout=180)
    finally:
        if srv.poll() is None:
            srv.kill()
            srv.wait()
    requests = int(out.decode().strip() or 0)
    assert requests >= 2, err.decode()  # retried: 2 s, then 4 s, ...
    text = vm.text
    refusals = re.findall(rf"^warning: ntp: reply from {re.escape(netns.host_ip)} refused: (.*)$", text, re.M)
    assert len(refusals) == 8, refusals  # SNTP_LOG_MAX, then only counted
    assert set(refusals[:6]) == {
        "shorter than 48 bytes", "not a server reply (mode)", "not an answer to our request (originate)",
        "kiss-o'-death RATE", "server not synchronised (leap indicator 3)", "time outside 2024..2105"}
    assert not re.search(r"^(\[.*\] )?time: .* from ntp", text, re.M)
    r = netns.run("curl", "-sS", "-i", "--max-time", "20", f"http://{netns.guest_ip}/healthz")
    head = r.stdout.decode(errors="replace")
    # no SNTP time: Date and Last-Modified come from the firmware's clock
    # (OVMF's RTC, the host's time under QEMU), console lines unstamped
    assert head.startswith("HTTP/1.1 200 OK"), head
    date = re.search(r"^Date: (.*)\r$", head, re.M)
    assert date, head
    assert abs(email.utils.parsedate_to_datetime(date.group(1)).timestamp() - time.time()) < 300, head
    assert re.search(r"^clock: \S+Z from UEFI GetTime \(provisional\)$", text, re.M), text
    r = netns.run("curl", "-sS", "-I", "--max-time", "20", f"http://{netns.guest_ip}/index.html")
    head = r.stdout.decode(errors="replace")
    assert head.startswith("HTTP/1.1 200 OK") and "\r\nLast-Modified: " in head, head


FAKE_DNS = r'''
import socket, struct
s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
s.bind(("{host}", 53))
s.settimeout(150)
while True:
    try:
        q, peer = s.recvfrom(512)
    except socket.timeout:
        break
    qid, flags, qd = struct.unpack("!HHH", q[:6])
    i, labels = 12, []
    while q[i]:
        labels.append(q[i + 1:i + 1 + q[i]].decode())
        i += 1 + q[i]
    question = q[12:i + 5]
    name = ".".join(labels).lower()
    print(name, flush=True)
    if name == "time.vireo.test":
        ans = b"\xc0\x0c" + struct.pack("!HHIH", 1, 1, 60, 4) + socket.inet_aton("{host}")
        s.sendto(struct.pack("!HHHHHH", qid, 0x8180, 1, 1, 0, 0) + question + ans, peer)
    else:
        s.sendto(struct.pack("!HHHHHH", qid, 0x8183, 1, 0, 0, 0) + question, peer)
'''


def test_ntp_server_by_name_through_dns(boot, netns, chronyd):
    dns = netns.popen("/usr/bin/python3", "-c", FAKE_DNS.format(host=netns.host_ip),
                      stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    try:
        vm = boot(cmdline=f"ip={netns.guest_ip}/24 dns={netns.host_ip} ntp=time.vireo.test", wrap=netns.wrap,
                  extra=netns.qemu_args())
        vm.wait_for(READY, timeout=120)
        vm.wait_for(rf"^ntp: time\.vireo\.test is {re.escape(netns.host_ip)}$", timeout=60)
        vm.wait_for(rf"^{STAMP}time: \S+ from ntp {re.escape(netns.host_ip)} ", timeout=60)
    finally:
        dns.kill()
        out, _ = dns.communicate(timeout=10)
    assert "time.vireo.test" in out.decode().split()


DNSMASQ = shutil.which("dnsmasq") or "/usr/sbin/dnsmasq"


def test_ntp_server_from_dhcp_option_42(boot, netns, chronyd, tmp_path):
    """ntp=dhcp: dnsmasq (Debian's dnsmasq-base) leases an address and names
    the namespace's chronyd in option 42; the guest asks it."""
    if not os.path.exists(DNSMASQ):
        pytest.fail("dnsmasq missing: `make deps` installs dnsmasq-base")
    dhcp = netns.popen(DNSMASQ, "--no-daemon", "--conf-file=/dev/null", "--port=0", f"--interface={netns.tap}",
                       "--bind-interfaces", "--dhcp-range=10.77.0.50,10.77.0.60,255.255.255.0,1h",
                       f"--dhcp-option=option:ntp-server,{netns.host_ip}", "--dhcp-authoritative",
                       f"--dhcp-leasefile={tmp_path}/leases", f"--pid-file={tmp_path}/dnsmasq.pid", "--user=root",
                       stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
    try:
        vm = boot(cmdline="ntp=dhcp", wrap=netns.wrap, extra=netns.qemu_args())
        m = vm.wait_for(READY, timeout=120)
        addr = m.group(1)
        assert re.match(r"10\.77\.0\.(5\d|60)$", addr), vm.text
        assert re.search(r"^ntp: server from DHCP \(option 42\), none yet$", vm.text, re.M), vm.text
        vm.wait_for(rf"^ntp: server {re.escape(netns.host_ip)} \(from DHCP\)$", timeout=30)
        vm.wait_for(rf"^{STAMP}time: \S+ from ntp {re.escape(netns.host_ip)} ", timeout=60)
        r = netns.run("curl", "-sS", "-i", "--max-time", "20", f"http://{addr}/healthz")
        assert "\r\nDate: " in r.stdout.decode(errors="replace")
    finally:
        dhcp.terminate()
        dhcp.wait(timeout=10)
