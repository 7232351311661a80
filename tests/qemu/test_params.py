"""Registration: the command-line keys (CMDLINE_PARAM) and shell commands
(SHELL_CMD) found in the image's linker sets, as the kernel lists them."""
import os
import re
import subprocess
import sys
import time

from vm import ROOT

READY = r"^vireo: kernel ready$"


def table_from_sources():
    """`params`' lines as tools/cmdline_table.py prints them from the sources
    of the default image: with its app's keys (apps/site), the TLS ones
    and the block path's (TLS and the store are its defaults); the TLS-only
    keys are left out for a build/tls-build.0 (make TLS=0) image, the
    block path's for one linked without the store (build/storage-link.0)."""
    tls = not os.path.exists(os.path.join(ROOT, "build", "tls-build.0"))
    storage = os.path.exists(os.path.join(ROOT, "build", "storage-link.1"))
    out = subprocess.run([sys.executable, f"{ROOT}/tools/cmdline_table.py", "--plain",
                          *([] if storage else ["--no-storage"]),
                          *([] if tls else ["--no-tls"]), "--with-app", "apps/site"],
                         check=True, capture_output=True, text=True).stdout
    return out.splitlines()


def test_params_match_the_sources_and_check_clean(boot):
    """Every key the sources register is in the image, with the values,
    default and help the docs' table is made from; the table's own check
    (duplicates, defaults that drifted from their variables) is clean."""
    want = table_from_sources()
    assert len(want) >= 13, want
    vm = boot()
    ready = vm.wait_for(READY)
    assert "warning: cmdline" not in vm.text[:ready.start()], vm.text
    time.sleep(0.5)
    vm.send("params\r")
    vm.wait_for(rf"^{re.escape(want[-1])}$", timeout=20, start=ready.end())
    text = vm.text[ready.end():]
    got = [line.rstrip("\r") for line in text.splitlines() if re.match(r"^  [a-z][a-z0-9_.]*=", line)]
    assert got == want, "\n".join(got)


def test_shell_commands_register_themselves(boot):
    """help lists the commands registered next to their code (the console
    driver's vcons, the netif's net, config's params), but not the
    test-only ones without debug; a debug command is refused without
    debug, and a command that takes no arguments says so."""
    vm = boot()
    ready = vm.wait_for(READY)
    time.sleep(0.5)
    vm.send("help\r")
    vm.wait_for(r"^  vcons +virtio-console", timeout=20, start=ready.end())  # the last, sorted
    listed = re.findall(r"^  (\S+)(?: \S+)? +\S", vm.text[ready.end():], re.M)
    for name in ("help", "mem", "net", "params", "reboot", "stats", "timeline", "vcons"):
        assert name in listed, listed
    # test-only verbs are listed only with debug (test_console.py's prompt test)
    assert "fault" not in listed and "panic" not in listed, listed
    assert listed == sorted(listed), listed
    mark = len(vm.text)
    vm.send("fault net-needs-reset\r")
    vm.wait_for(r"^fault: needs debug on the command line$", timeout=20, start=mark)
    vm.send("mem now\r")
    vm.wait_for(r"^mem: takes no arguments$", timeout=20, start=mark)
    vm.send("nosuch\r")
    vm.wait_for(r"^unknown command 'nosuch' \(try help\)$", timeout=20, start=mark)


def test_net_command_and_static_bring_up(boot):
    """The netif registers `net`; bring-up takes the ip=/gw= it is given and
    says ready once the link is up (QEMU's socket netdev on loopback, so no
    root and no traffic leaves the host)."""
    import socket
    ours = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    ours.bind(("127.0.0.1", 0))
    probe = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    probe.bind(("127.0.0.1", 0))
    qemu_port = probe.getsockname()[1]
    probe.close()
    try:
        vm = boot(cmdline="ip=10.9.8.7/28 gw=10.9.8.1", extra=[
            "-netdev", f"socket,id=n0,udp=127.0.0.1:{ours.getsockname()[1]},localaddr=127.0.0.1:{qemu_port}",
            "-device", "virtio-net-pci,netdev=n0,romfile="])
        ready = vm.wait_for(r"^vireo: ready ip=(\S+) http=(\d+)(?: https=\d+)?$")
        assert ready.group(1) == "10.9.8.7" and ready.group(2) == "80", ready.group(0)
        text = vm.text
        assert re.search(r"^net: address by static configuration$", text, re.M), text
        assert re.search(r"^net: 10\.9\.8\.7/28 gw 10\.9\.8\.1 \(static\)$", text, re.M), text
        assert re.search(r"^net: lwIP \S+ on virtio\d+, mtu \d+, checksums: tx \w+, rx \w+; segmentation offload: off; receive offload: off$", text, re.M), text
        time.sleep(0.5)
        vm.send("net\r")
        m = vm.wait_for(r"^net: virtio\d+ link (\w+); rx \d+ frames \d+ B, tx (\d+) frames \d+ B, "
                        r"tx ring full \d+; backlog (\d+) of 4096; rx buffers held \d+ of (\d+)$",
                        timeout=20, start=ready.end())
        # Link up; the gratuitous ARP (and IPv6 reports) went out; nothing parked.
        assert m.group(1) == "up" and int(m.group(2)) >= 1 and m.group(3) == "0" and int(m.group(4)) > 0, m.group(0)
    finally:
        ours.close()
