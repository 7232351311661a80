#!/usr/bin/env python3
"""A fleet of vireo instances behind HAProxy (Debian's haproxy), all inside
one network namespace: a bridge br0 (10.78.0.1/24), one tap per instance on
it, instance i at 10.78.0.(11+i) booted from the PVH kernel (q35, TCG), and
HAProxy on 10.78.0.1:8080 balancing round-robin with health checks on
/healthz (every 500 ms, down after 2 failures, up after 2 successes) and
retries on a failed connection or an empty response, redispatched to
another instance. Nothing touches the host's own network.

  tests/fleet/fleet.py [--n 3] [--kernel build/vireo.elf]

(`make fleet N=3`) boots the fleet, prints the front address and how to
reach it, and runs until Ctrl-C. tests/fleet/test_fleet.py uses Fleet."""
import argparse
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
import uuid

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "qemu"))
from vm import PVH_ELF, Vm  # noqa: E402

FRONT_IP = "10.78.0.1"
FRONT_PORT = 8080
READY = r"^vireo: ready ip=(\S+) http=(\d+)$"
HAPROXY = shutil.which("haproxy") or "/usr/sbin/haproxy"

CONFIG = """global
    maxconn 512
    stats socket {sock} mode 600 level admin

defaults
    mode http
    timeout connect 1s
    timeout client 10s
    timeout server 5s
    retries 3
    option redispatch 1
    retry-on conn-failure empty-response
    option http-server-close

frontend front
    bind {front}:{port}
    default_backend vireo

backend vireo
    balance roundrobin
    option httpchk GET /healthz
    http-check expect status 200
    default-server inter 500ms fall 2 rise 2
{servers}
"""


def instance_ip(i):
    return f"10.78.0.{11 + i}"


class Fleet:
    def __init__(self, n=3, kernel=PVH_ELF, mem=32):
        self.n, self.kernel, self.mem = n, kernel, mem
        self.ns = "vireo-fleet-" + uuid.uuid4().hex[:6]
        self.tmp = tempfile.mkdtemp(prefix="vireo-fleet-")
        self.sock = os.path.join(self.tmp, "haproxy.sock")
        self.vms, self.haproxy = [], None
        self.front = f"http://{FRONT_IP}:{FRONT_PORT}/"

    @property
    def wrap(self):
        return ["ip", "netns", "exec", self.ns]

    def _ip(self, *args):
        subprocess.run(["ip", "-n", self.ns] + list(args), check=True, capture_output=True)

    def start(self):
        subprocess.run(["ip", "netns", "add", self.ns], check=True, capture_output=True)
        try:
            self._ip("link", "set", "lo", "up")
            self._ip("link", "add", "br0", "type", "bridge")
            self._ip("addr", "add", f"{FRONT_IP}/24", "dev", "br0")
            self._ip("link", "set", "br0", "up")
            for i in range(self.n):
                self._ip("tuntap", "add", "dev", f"tap{i}", "mode", "tap")
                self._ip("link", "set", f"tap{i}", "master", "br0")
                self._ip("link", "set", f"tap{i}", "up")
            for i in range(self.n):
                self.vms.append(Vm(kernel=self.kernel, mem=self.mem, wrap=self.wrap,
                                   cmdline=f"ip={instance_ip(i)}/24 gw={FRONT_IP} shutdown.grace=5",
                                   extra=["-netdev", f"tap,id=n0,ifname=tap{i},script=no,downscript=no,vhost=off",
                                          "-device", f"virtio-net-pci,netdev=n0,romfile=,mac=52:54:00:78:00:{i:02x}"]))
            for vm in self.vms:
                vm.wait_for(READY, timeout=120)
            servers = "\n".join(f"    server v{i} {instance_ip(i)}:80 check" for i in range(self.n))
            cfg = os.path.join(self.tmp, "haproxy.cfg")
            with open(cfg, "w") as f:
                f.write(CONFIG.format(sock=self.sock, front=FRONT_IP, port=FRONT_PORT, servers=servers))
            self.haproxy = subprocess.Popen(self.wrap + [HAPROXY, "-db", "-f", cfg], stdout=subprocess.DEVNULL,
                                            stderr=open(os.path.join(self.tmp, "haproxy.log"), "wb"))
            self.wait_states(["UP"] * self.n, timeout=30)
        except BaseException:
            self.stop()
            raise
        return self

    def stats(self):
        """{server name: status} from HAProxy's stats socket."""
        s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        s.settimeout(5)
        s.connect(self.sock)
        s.sendall(b"show stat\n")
        data = b""
        while True:
            chunk = s.recv(65536)
            if not chunk:
                break
            data += chunk
        s.close()
        lines = data.decode().splitlines()
        head = lines[0].lstrip("# ").split(",")
        out = {}
        for line in lines[1:]:
            row = dict(zip(head, line.split(",")))
            if row.get("pxname") == "vireo" and row.get("svname", "").startswith("v"):
                out[row["svname"]] = row["status"]
        return out

    def wait_states(self, want, timeout=30):
        """Waits until server i's status starts with want[i] (None: any)."""
        deadline = time.monotonic() + timeout
        st = {}
        while time.monotonic() < deadline:
            try:
                st = self.stats()
            except OSError:
                st = {}
            if len(st) == self.n and all(w is None or st[f"v{i}"].startswith(w) for i, w in enumerate(want)):
                return st
            time.sleep(0.2)
        raise AssertionError(f"HAProxy states {st}, wanted {want}")

    def stop(self):
        if self.haproxy and self.haproxy.poll() is None:
            self.haproxy.terminate()
            try:
                self.haproxy.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self.haproxy.kill()
                self.haproxy.wait()
        for vm in self.vms:
            vm.stop()
        subprocess.run(["ip", "netns", "del", self.ns], capture_output=True)
        shutil.rmtree(self.tmp, ignore_errors=True)

    def __enter__(self):
        return self.start()

    def __exit__(self, *exc):
        self.stop()


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--n", type=int, default=3)
    ap.add_argument("--kernel", default=PVH_ELF)
    a = ap.parse_args()
    if not 1 <= a.n <= 32:
        ap.error("--n: 1 to 32 instances")
    with Fleet(a.n, a.kernel) as fl:
        print(f"fleet: {a.n} instances at {instance_ip(0)}..{instance_ip(a.n - 1)}, HAProxy front {fl.front} "
              f"in network namespace {fl.ns}")
        print(f"fleet: try  ip netns exec {fl.ns} curl -s {fl.front}healthz")
        print(f"fleet: HAProxy stats  echo 'show stat' | ip netns exec {fl.ns} socat - {fl.sock}")
        print("fleet: Ctrl-C stops it")
        try:
            signal.pause()
        except KeyboardInterrupt:
            pass


if __name__ == "__main__":
    main()
