"""Remote syslog: every console line as an RFC 5424 datagram to a listener
in the test's namespace, the boot log included; a burst past the 128-line
ring is dropped and counted, never waited for."""
import re
import socket
import subprocess
import time

from httpc import parse_prometheus, promtool_findings

READY = r"^vireo: ready ip=(\S+) http=(\d+)(?: https=\d+)?$"
RFC5424 = re.compile(r"^<(\d{1,3})>1 (\S+) (\S+) vireo - - - (.*)$", re.S)

LISTEN = r'''
import socket, sys
s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 1 << 20)
s.bind(("{host}", 5514))
s.settimeout(150)
while True:
    try:
        d = s.recv(4096)
    except socket.timeout:
        break
    sys.stdout.buffer.write(d.replace(b"\n", b"\\n") + b"\n")
    sys.stdout.flush()
    s.settimeout({idle})
'''


def _metrics(netns):
    r = netns.run("curl", "-sS", "--max-time", "20", f"http://{netns.guest_ip}/metrics")
    assert promtool_findings(r.stdout) == []  # syslog's families too
    return parse_prometheus(r.stdout.decode())


def test_console_lines_reach_the_syslog_listener(boot, netns):
    lst = netns.popen("/usr/bin/python3", "-c", LISTEN.format(host=netns.host_ip, idle=8),
                      stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    try:
        vm = boot(cmdline=f"ip={netns.guest_ip}/24 syslog={netns.host_ip}:5514", wrap=netns.wrap,
                  extra=netns.qemu_args())
        vm.wait_for(READY, timeout=120)
        vm.wait_for(r"^syslog: to \S+ port 5514$")
        time.sleep(3)
        before = _metrics(netns)
        # A burst: six `params` listings (25+ lines each) in one read of the
        # serial line, more than the ring's 128 lines before the loop drains it.
        vm.send("params\n" * 6)
        vm.wait_for(r"(?s)(shutdown\.grace=.*){6}", timeout=60)
        time.sleep(3)
        after = _metrics(netns)
        out, err = lst.communicate(timeout=60)
    finally:
        if lst.poll() is None:
            lst.kill()
            lst.wait()
    msgs = [m for m in out.decode(errors="replace").split("\n") if m]
    parsed = [RFC5424.match(m) for m in msgs]
    assert msgs and all(parsed), [m for m, p in zip(msgs, parsed) if not p][:5]
    texts = [p.group(4) for p in parsed]
    assert all(p.group(3) == netns.guest_ip and p.group(2) == "-" for p in parsed)  # no clock: nil time
    # the boot log from the console's ring, then what came after
    assert any(t.startswith("vireo ") for t in texts), texts[:5]
    assert any(re.fullmatch(r"vireo: ready ip=%s http=80(?: https=443)?" % re.escape(netns.guest_ip), t)
               for t in texts), texts
    assert any(t.startswith("syslog: to ") for t in texts)
    assert all(int(p.group(1)) in (10, 12, 14) for p in parsed)
    # the burst: some lines dropped and counted, every line sent arrived
    assert after["vireo_syslog_dropped_total"] > before["vireo_syslog_dropped_total"], (before, after)
    assert len(msgs) >= after["vireo_syslog_sent_total"], (len(msgs), after)
    assert sum(t.lstrip().startswith("shutdown.grace=") for t in texts) >= 1
    r = netns.run("curl", "-sS", "--max-time", "20", f"http://{netns.guest_ip}/healthz")
    assert r.stdout == b"ok\n"


def test_bad_syslog_dns_ntp_values_warn_and_boot(boot):
    vm = boot(cmdline="syslog=10.0.0.1:99999 syslog=nowhere dns=1.2.3 dns=1.2.3.4, ntp=bad_name!",
              extra=["-netdev", "user,id=n0,restrict=on", "-device", "virtio-net-pci,netdev=n0,romfile="])
    vm.wait_for(READY, timeout=120)
    assert re.search(r"^warning: cmdline: syslog=10\.0\.0\.1:99999: want off or A\.B\.C\.D\[:port\], "
                     r"keeping default off$", vm.text, re.M), vm.text
    assert re.search(r"^warning: cmdline: syslog=nowhere: ", vm.text, re.M)
    assert "syslog: to" not in vm.text
    assert re.search(r"^warning: cmdline: dns=1\.2\.3: want one or two A\.B\.C\.D, comma-separated", vm.text, re.M)
    assert re.search(r"^warning: cmdline: dns=1\.2\.3\.4,: want", vm.text, re.M)
    assert re.search(r"^warning: cmdline: ntp=bad_name!: want off, dhcp, a server's A\.B\.C\.D or its name, "
                     r"keeping default off$", vm.text, re.M), vm.text
    assert "ntp: server" not in vm.text


def test_panic_lines_reach_the_syslog_listener(boot, netns):
    """A panic stops the loop that sends syslog lines: its lines go out as
    frames built by the panic writer and handed straight to the driver."""
    lst = netns.popen("/usr/bin/python3", "-c", LISTEN.format(host=netns.host_ip, idle=6),
                      stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    try:
        vm = boot(cmdline=f"ip={netns.guest_ip}/24 syslog={netns.host_ip}:5514 debug", wrap=netns.wrap,
                  extra=netns.qemu_args(), reboot=False)
        vm.wait_for(READY, timeout=120)
        vm.wait_for(r"^syslog: to \S+ port 5514$")
        time.sleep(2)   # the loop has sent (the next hop's MAC is known)
        vm.send("panic\r")
        vm.wait_for(r"^vireo: panic: shell: requested panic$", timeout=30)
        vm.wait_for(r"^vireo: halted$", timeout=30)
        out, err = lst.communicate(timeout=60)
    finally:
        if lst.poll() is None:
            lst.kill()
            lst.wait()
    msgs = [m for m in out.decode(errors="replace").split("\n") if m]
    parsed = [RFC5424.match(m) for m in msgs]
    assert msgs and all(parsed), msgs[-5:]
    texts = [(int(p.group(1)), p.group(3), p.group(4)) for p in parsed]
    assert (10, netns.guest_ip, "vireo: panic: shell: requested panic") in texts, texts[-10:]
    assert (14, netns.guest_ip, "vireo: halted") in texts, texts[-10:]
    # the backtrace follows the panic line, in order, at most 16 lines in all
    at = [t for _, _, t in texts].index("vireo: panic: shell: requested panic")
    after = [t for _, _, t in texts[at:]]
    assert after[1].startswith("backtrace ("), after
    assert len(after) <= 16

