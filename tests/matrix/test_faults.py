"""Link and device faults under load: the NIC's link taken down and up from
the QEMU monitor, and a DEVICE_NEEDS_RESET provoked at run time (the shell's
`fault net-needs-reset` posts one malformed receive descriptor; QEMU flags
the device, vireo resets it and probes it again without rebooting). Clients
may see errors while the link is down or the device resets; afterwards
every new request succeeds, the address is unchanged, and memory is back to
its idle level. After a link flap, service must come from requests made
after link-up, and the guest must announce itself (gratuitous ARP,
unsolicited IPv6 neighbour advertisement) as seen on the tap."""
import re
import subprocess
import time

import pytest

from mxlib import GUEST_LL, GUEST_MAC, Guest, Load

pytestmark = pytest.mark.hostile


# Fixed: a timeout here that was not the fault under test. The host reused
# the source port of a connection the appliance had closed (serves() asks for
# Connection: close) less than 2 MSL before; lwIP answered the new SYN from
# TIME_WAIT with an ACK for the old connection and ignored the host's RST
# (tcp_timewait_input), so the host's SYNs backed off until TIME_WAIT ended.
# Seen once in 36 flap runs (tap capture). net/port/patches/0002 now reopens from
# TIME_WAIT, as Linux does, when the new SYN's sequence number is above the
# old connection's (RFC 1122 4.2.2.13, RFC 6191), counted in
# vireo_lwip_time_wait_reopened_total; tested by tests/host/net/tcp/test_syncookie.c
# and, over the tap, test_tw_reuse.py.
def after_fault(g, base):
    check = Load(g, conns=5, per_conn=10).start().join()
    assert not check.errors and check.ok == 50, check.errors[:5]
    g.serves()
    g.ping()
    g.udp_echo(b"after the fault")
    return g.wait_idle(base, timeout=180)


def start_sniff(g, filt):
    """tcpdump on the namespace's tap, one line a packet, until stopped."""
    p = subprocess.Popen(g.ns.wrap + ["tcpdump", "-l", "-n", "-e", "-i", g.ns.tap, filt],
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    time.sleep(1.5)  # tcpdump is listening once it has opened the tap
    return p


def stop_sniff(p):
    p.terminate()
    out, _ = p.communicate(timeout=30)
    return out.decode(errors="replace")


def test_link_down_and_up_during_load():
    with Guest(cmdline="echo=udp") as g:
        g.serves()
        base = g.baseline()
        load = Load(g, conns=8, per_conn=None, tolerate_errors=True).start()
        time.sleep(2)
        mark = len(g.vm.text)
        g.qmp_link(False)
        g.vm.wait_for(r"^virtio\d+: net: link down$", timeout=30, start=mark)
        time.sleep(4)
        sniff = start_sniff(g, "arp or icmp6")
        g.qmp_link(True)
        g.vm.wait_for(r"^virtio\d+: net: link up$", timeout=30, start=mark)
        # only requests made after link-up count: the load's clients come
        # back (reconnecting where they gave up) and get answers again
        served_at_up = load.ok
        deadline = time.monotonic() + 60
        while load.ok < served_at_up + 20 and time.monotonic() < deadline:
            time.sleep(0.2)
        time.sleep(2)
        load.stop()
        seen = stop_sniff(sniff)
        print(f"during the link cycle: {load.ok} requests served ({load.ok - served_at_up} after link-up), "
              f"{len(load.errors)} errors {load.errors[:3]}")
        assert load.ok >= served_at_up + 20, f"no service after link-up: {load.errors[-3:]}"
        # the guest announced itself at link-up: a gratuitous ARP (sender
        # and target its own address) and an unsolicited neighbour
        # advertisement for its link-local address to all nodes
        assert re.search(rf"^.*{GUEST_MAC}.*Request who-has {re.escape(g.ip)} tell {re.escape(g.ip)}\b", seen, re.M), seen
        assert re.search(rf"^.*{GUEST_MAC} > 33:33:00:00:00:01.*neighbor advertisement, tgt is {GUEST_LL}", seen,
                         re.M), seen
        m = after_fault(g, base)
        assert m["vireo_vnet_device_resets_total"] == 0
        g.log_clean()


@pytest.mark.parametrize("opts", ["", "disable-legacy=on,packed=on"], ids=["split", "packed"])
def test_device_needs_reset_during_load(opts):
    with Guest(device_opts=opts, cmdline="echo=udp debug") as g:
        g.serves()
        base = g.baseline()
        load = Load(g, conns=8, per_conn=None, tolerate_errors=True).start()
        time.sleep(2)
        mark = len(g.vm.text)
        g.vm.send("fault net-needs-reset\n")
        g.vm.wait_for(r"^fault: net-needs-reset: virtio(\d+): the next receive buffer gets a malformed descriptor$",
                      timeout=30, start=mark)
        # QEMU meets the malformed buffer once it has filled the ~255
        # posted before it: keep frames coming until it does
        rx = re.compile(r"^virtio(\d+): device needs reset; resetting and probing again$", re.M)
        deadline = time.monotonic() + 180
        while not rx.search(g.vm.text, mark) and time.monotonic() < deadline:
            g.ns.run("ping", "-q", "-c", "100", "-i", "0.01", "-W", "1", g.ip, timeout=120)
        reset = g.vm.wait_for(rx.pattern, timeout=10, start=mark)
        idx = reset.group(1)
        g.vm.wait_for(rf"^virtio{idx}: net: link up$", timeout=60, start=reset.end())
        g.vm.wait_for(rf"^virtio{idx}: virtio-net driver bound, status \S*DRIVER_OK", timeout=60, start=reset.end())
        time.sleep(5)
        load.stop()
        print(f"during the reset: {load.ok} requests served, {len(load.errors)} errors {load.errors[:3]}")
        m = after_fault(g, base)
        assert m["vireo_vnet_device_resets_total"] == 1
        text = g.vm.text
        assert len(re.findall(r"^virtio\d+: device needs reset", text, re.M)) == 1, text[-3000:]
        # still the same address: the ready line is not repeated, the
        # requests above went to it
        assert len(re.findall(r"^vireo: ready ip=", text, re.M)) == 1
        g.log_clean()
