"""A network namespace with a tap device for one test: QEMU runs inside it
(Vm(wrap=ns.wrap)) and attaches the tap, the test talks to the guest from
inside it (ns.run / ns.popen). Nothing touches the host's own network, and
deleting the namespace removes the tap with it."""
import os
import subprocess
import uuid

HOST_IP = "10.77.0.1"
GUEST_IP = "10.77.0.2"
PREFIX = 24


def available():
    """True if this machine lets us create namespaces and tap devices."""
    if os.geteuid() != 0 or not os.path.exists("/dev/net/tun"):
        return False
    return subprocess.run(["ip", "netns", "list"], capture_output=True).returncode == 0


class Netns:
    owned = True

    def __init__(self, tap="tap0", host_ip=HOST_IP, prefix=PREFIX):
        self.name = "vireo-" + uuid.uuid4().hex[:8]
        self.tap = tap
        self.host_ip = host_ip
        self.guest_ip = GUEST_IP
        sh = lambda *a: subprocess.run(a, check=True, capture_output=True)  # noqa: E731
        sh("ip", "netns", "add", self.name)
        try:
            sh("ip", "-n", self.name, "link", "set", "lo", "up")
            sh("ip", "-n", self.name, "tuntap", "add", "dev", tap, "mode", "tap")
            sh("ip", "-n", self.name, "addr", "add", f"{host_ip}/{prefix}", "dev", tap)
            sh("ip", "-n", self.name, "link", "set", tap, "up")
        except subprocess.CalledProcessError:
            self.close()
            raise

    @classmethod
    def attach(cls, name, tap, host_ip, guest_ip):
        """A namespace someone else made and will delete (e.g. the benchmark
        boot of tests/bench/extra.py): run/popen inside it; close() leaves it."""
        ns = cls.__new__(cls)
        ns.name, ns.tap, ns.host_ip, ns.guest_ip, ns.owned = name, tap, host_ip, guest_ip, False
        return ns

    @property
    def wrap(self):
        return ["ip", "netns", "exec", self.name]

    def qemu_args(self, device_opts="", vnet_hdr=True, mac="52:54:00:12:34:56"):
        dev = f"virtio-net-pci,netdev=n0,id=nic0,romfile=,mac={mac}" + (f",{device_opts}" if device_opts else "")
        return ["-netdev", f"tap,id=n0,ifname={self.tap},script=no,downscript=no,vhost=off,"
                f"vnet_hdr={'on' if vnet_hdr else 'off'}", "-device", dev]

    def run(self, *cmd, timeout=60, check=False, input=None):
        return subprocess.run(self.wrap + list(cmd), capture_output=True, timeout=timeout, check=check,
                              input=input)

    def popen(self, *cmd, **kw):
        return subprocess.Popen(self.wrap + list(cmd), **kw)

    def close(self):
        if not self.owned:
            return
        subprocess.run(["ip", "netns", "del", self.name], capture_output=True)

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()
