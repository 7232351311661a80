"""virtio-console: the boot log and the shell on a virtconsole, the log on a
MULTIPORT port named vireo.log, and panic output (EMERG_WRITE). The serial
shell's prompt, help with debug, and Ctrl-A X quitting images/qemu.sh."""
import os
import re
import socket
import tempfile
import time

import pytest

from vm import Output

READY = r"^vireo: kernel ready$"


class Chardev(Output):
    """The host end of a QEMU unix-socket chardev (server=on,wait=off),
    connected as soon as QEMU creates it; output is gathered by a thread
    (vm.Output)."""

    what = "the virtconsole"

    def __init__(self, path, timeout=20):
        deadline = time.monotonic() + timeout
        while True:
            try:
                self.sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
                self.sock.connect(path)
                break
            except OSError:
                self.sock.close()
                if time.monotonic() > deadline:
                    raise
                time.sleep(0.02)
        self._gather(lambda: self.sock.recv(4096))

    def wait_for(self, pattern, timeout=60, start=0):
        return super().wait_for(pattern, timeout, start)

    def send(self, s):
        self.sock.sendall(s.encode())

    def close(self):
        self.sock.close()


def probe_line(text):
    m = re.search(r"^virtio(\d+): console: (.*)$", text, re.M)
    assert m, text
    feats = re.search(rf"^virtio{m.group(1)}: features (.*)$", text, re.M).group(1).split()
    return m.group(1), m.group(2), set(feats)


@pytest.fixture
def tmpdir_short():
    # unix socket paths must stay under 108 bytes
    d = tempfile.mkdtemp(prefix="vcons-")
    yield d
    for f in os.listdir(d):
        os.unlink(os.path.join(d, f))
    os.rmdir(d)


# device options -> features that must / must not be negotiated
CASES = {
    "disable-legacy=on,packed=on": ({"RING_PACKED", "MULTIPORT", "EMERG_WRITE"}, set()),
    "vectors=0,max_ports=1": (set(), {"MULTIPORT"}),
    "disable-modern=on": ({"MULTIPORT", "EMERG_WRITE"}, {"VERSION_1"}),
}


@pytest.mark.parametrize("opts", list(CASES))
def test_virtconsole_boot_log_and_shell(boot, tmpdir_short, opts):
    path = os.path.join(tmpdir_short, "c0.sock")
    vm = boot(extra=["-chardev", f"socket,id=c0,path={path},server=on,wait=off",
                     "-device", f"virtio-serial-pci,{opts}", "-device", "virtconsole,chardev=c0"])
    con = Chardev(path)
    try:
        vm.wait_for(READY)
        # the log ring is replayed when the port goes live, so the banner comes too
        con.wait_for(r"^vireo \d+\.\d+\.\d+ ")
        con.wait_for(READY)
        idx, line, feats = probe_line(vm.text)
        must, must_not = CASES[opts]
        assert must <= feats and not (must_not & feats), (opts, feats)
        assert ("single port" in line) == ("max_ports=1" in opts), line
        assert re.search(rf"^virtio{idx}: console: port 0 console", vm.text, re.M)
        # a command typed on the virtconsole is answered there (and on the UART)
        mark = len(con.text)
        con.send("help\r")
        con.wait_for(r"^  help +this list$", timeout=20, start=mark)
        con.send("vcons\r")
        m = con.wait_for(r"^virtio\d+: console: port 0 console.*: out (\d+) B, in (\d+) B, dropped (\d+) B$",
                         timeout=20, start=mark)
        assert int(m.group(2)) >= len("help\rvcons\r") and int(m.group(3)) == 0, m.group(0)
        assert "broken" not in vm.text
    finally:
        con.close()


def test_multiport_log_port_hot_added(boot, tmpdir_short):
    con = os.path.join(tmpdir_short, "con.txt")
    log = os.path.join(tmpdir_short, "log.txt")
    other = os.path.join(tmpdir_short, "other.txt")
    vm = boot(extra=["-chardev", f"file,id=c0,path={con}", "-chardev", f"file,id=o0,path={other}",
                     "-device", "virtio-serial-pci,id=vs0", "-device", "virtconsole,chardev=c0",
                     "-device", "virtserialport,chardev=o0,name=org.example.other"])
    vm.wait_for(READY)
    idx, line, feats = probe_line(vm.text)
    assert "MULTIPORT" in feats and line.startswith("multiport"), line
    # the log port arrives after boot: handled from the loop, with the ring replayed
    vm.qmp("chardev-add", id="l0", backend={"type": "file", "data": {"out": log}})
    vm.qmp("device_add", driver="virtserialport", bus="vs0.0", chardev="l0", name="vireo.log", id="logport")
    vm.wait_for(rf'^virtio{idx}: console: port (\d+) "vireo.log" log', timeout=20)
    mark = len(vm.text)
    vm.send("vcons\r")
    vm.wait_for(rf"^virtio{idx}: console: port \d+ log host-open guest-open: out \d+ B, in 0 B, dropped 0 B$",
                timeout=20, start=mark)
    vm.wait_for(rf"^virtio{idx}: console: port 0 console .*dropped 0 B$", timeout=20, start=mark)
    time.sleep(0.3)
    # the log port has the boot log from the banner on, \n line ends, and live output
    with open(log, "rb") as f:
        data = f.read().decode()
    assert re.search(r"^vireo \d+\.\d+\.\d+ ", data, re.M) and "\nvireo: kernel ready\n" in data, data[-2000:]
    assert "\r" not in data
    assert "vcons" in data
    with open(con, "rb") as f:
        assert b"vireo: kernel ready\r\n" in f.read()
    # a port we were not asked to use gets nothing
    assert os.path.getsize(other) == 0
    # unplugged again: its sink goes, the rest keeps working
    vm.qmp("device_del", id="logport")
    vm.wait_for(rf"^virtio{idx}: console: port \d+ removed$", timeout=20)
    mark = len(vm.text)
    vm.send("vcons\r")
    vm.wait_for(rf"^virtio{idx}: console: port 0 console .*dropped 0 B$", timeout=20, start=mark)
    assert " log " not in vm.text[mark:]
    assert "broken" not in vm.text


def test_panic_reaches_virtconsole(boot, tmpdir_short):
    con = os.path.join(tmpdir_short, "con.txt")
    log = os.path.join(tmpdir_short, "log.txt")
    vm = boot(cmdline="selftest=panic", reboot=False,
              extra=["-chardev", f"file,id=c0,path={con}", "-chardev", f"file,id=l0,path={log}",
                     "-device", "virtio-serial-pci,emergency-write=on", "-device", "virtconsole,chardev=c0",
                     "-device", "virtserialport,chardev=l0,name=vireo.log"])
    vm.wait_for(r"^vireo: halted$")
    assert re.search(r"^virtio\d+: console: port 0 console .*panic output via emerg_wr$", vm.text, re.M)
    time.sleep(0.5)  # let QEMU flush the file chardevs
    with open(con, "rb") as f:
        data = f.read().decode().replace("\r\n", "\n")
    assert "\nvireo: panic: selftest: requested panic\n" in data, data[-2000:]
    assert "\nvireo: halted\n" in data
    with open(log, "rb") as f:  # the log port's polled ring path
        assert "vireo: panic: selftest: requested panic\n" in f.read().decode()


def test_prompt_help_with_debug_and_ctrl_a_x(boot, tmpdir_short):
    """The shell prints a prompt after each command; output that comes while
    one is shown starts on its own line (line-based readers, this file's
    included, still see every log line whole) and the text typed so far is
    drawn again below it. With debug, help lists the test-only verbs.
    Ctrl-A X quits: images/qemu.sh puts COM1 and QEMU's monitor on one mux
    (-serial mon:stdio); a plain stdio serial passed it to the guest."""
    vm = boot(cmdline="debug", extra=["-device", "virtio-serial-pci,id=vs0"])
    ready = vm.wait_for(READY)
    vm.wait_for(r"^time: tsc ")  # the last line the boot logs late
    assert "vireo> " not in vm.text  # no prompt before anyone types
    vm.send("help\r")
    vm.wait_for(r"^  vcons +virtio-console", timeout=20, start=ready.end())
    vm.wait_for(r"^vireo> \Z", timeout=20, start=ready.end())
    listed = dict(re.findall(r"^  (\S+)(?: \S+)? +(.*)$", vm.text[ready.end():], re.M))
    assert listed["fault"].endswith("(tests; needs debug)"), listed
    assert listed["panic"].endswith("(tests; needs debug)"), listed
    # a half-typed line, then a log line from the loop (a hot-added log port)
    vm.send("me")
    vm.wait_for(r"^vireo> me\Z", timeout=20, start=ready.end())
    mark = len(vm.text) - len("vireo> me")
    log = os.path.join(tmpdir_short, "log.txt")
    vm.qmp("chardev-add", id="l0", backend={"type": "file", "data": {"out": log}})
    vm.qmp("device_add", driver="virtserialport", bus="vs0.0", chardev="l0", name="vireo.log")
    vm.wait_for(r'^virtio\d+: console: port \d+ "vireo.log" log.*\nvireo> me\Z', timeout=20, start=mark)
    lines = vm.text[mark:].split("\n")
    assert lines[0] == "vireo> me" and lines[-1] == "vireo> me", lines
    # each log line whole on its own, each followed by the prompt drawn again
    assert lines[1::2] and all(line.startswith("virtio") for line in lines[1::2]), lines
    assert all(line == "vireo> me" for line in lines[0::2]), lines
    vm.send("m\r")  # the line kept what was typed before the log line: "mem"
    vm.wait_for(r"^vireo> mem\nmem: .*\nvireo> \Z", timeout=20, start=mark)
    vm.send("\x01x")
    vm.proc.wait(timeout=15)
    assert vm.proc.returncode == 0, vm.text[-500:]
