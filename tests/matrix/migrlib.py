"""What the live-migration test (test_migration.py) and the migration
benchmark (tests/bench/migration.py) share: a namespace with a bridge and
two taps, booting a source or a destination QEMU (-incoming) on either tap,
a bounded two-loop client load that counts every failure, and a migration
driven over QMP until it ends."""
import threading
import time

import mxlib
from mxlib import GUEST_MAC, INDEX, Vm, nsmod, read_responses

GUEST_IP = "10.77.0.2"
HOST_IP = "10.77.0.1"
MIG_PORT = 4444
# Both sides: the destination reports the outcome of loading the state
# back to the source. Without it the source calls a migration "completed"
# once it has sent everything and stays paused even when the destination
# then refuses the device state (seen with test_migration's lock-down pair:
# the guest was lost); with it the source sees "failed" and resumes.
RETURN_PATH = [{"capability": "return-path", "state": True}]
LOAD_CAP = 200000  # requests per load thread, whatever happens


class BridgedNs:
    """A namespace with br0 (the client's address) and two taps on it."""

    def __init__(self):
        self.ns = nsmod.Netns(tap="tap0")
        try:
            run = lambda *a: self.ns.run(*a, check=True)  # noqa: E731
            run("ip", "addr", "flush", "dev", "tap0")
            run("ip", "link", "add", "br0", "type", "bridge", "stp_state", "0", "forward_delay", "0")
            run("ip", "tuntap", "add", "dev", "tap1", "mode", "tap")
            for tap in ("tap0", "tap1"):
                run("ip", "link", "set", tap, "master", "br0")
                run("ip", "link", "set", tap, "up")
            run("ip", "addr", "add", f"{HOST_IP}/24", "dev", "br0")
            run("ip", "link", "set", "br0", "up")
            self.ns.tap = "br0"  # where NsClient.add_source would add addresses
        except BaseException:
            self.ns.close()
            raise

    def fdb_port(self, mac=GUEST_MAC):
        """The bridge port the guest's MAC is learned on, or None."""
        out = self.ns.run("bridge", "fdb", "show", "br", "br0").stdout.decode()
        for line in out.splitlines():
            f = line.split()
            if f and f[0] == mac and "dev" in f:
                return f[f.index("dev") + 1]
        return None

    def close(self):
        self.ns.close()


def qemu_extra(tap, device_opts):
    dev = f"virtio-net-pci,netdev=n0,id=nic0,romfile=,mac={GUEST_MAC},addr=0x3"
    if device_opts:
        dev += "," + device_opts
    return ["-netdev", f"tap,id=n0,ifname={tap},script=no,downscript=no,vhost=off,vnet_hdr=on",
            "-device", dev]


def boot(bns, tap, device_opts="", cmdline="", incoming=False, more=(), port=MIG_PORT):
    cl = f"ip={GUEST_IP}/24 gw={HOST_IP}" + (f" {cmdline}" if cmdline else "")
    extra = qemu_extra(tap, device_opts) + list(more)
    if incoming:
        extra += ["-incoming", f"tcp:127.0.0.1:{port}"]
    vm = Vm(cmdline=cl, wrap=bns.ns.wrap, extra=extra)
    if incoming:
        try:
            # QMP answers once QEMU has set up, the -incoming socket included.
            assert vm.qmp("query-status")["status"] == "inmigrate"
            vm.qmp("migrate-set-capabilities", capabilities=RETURN_PATH)
        except BaseException:
            vm.stop()
            raise
    return vm


class MixedLoad:
    """Two bounded client loops: keep-alive GETs on one connection held for
    the whole run (mxlib.Load, no reconnect: a reset is a failure) and a
    new connection per GET (Connection: close). Every exception counts as
    a failure; nothing is retried."""

    def __init__(self, client):
        self.client = client
        self.keep = mxlib.Load(client, conns=1, per_conn=None, timeout=30)
        self.fresh_ok = 0
        self.fresh_errors = []
        self.stopping = threading.Event()
        self.thread = threading.Thread(target=self._fresh, daemon=True)

    def _fresh(self):
        req = b"GET / HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n"
        for _ in range(LOAD_CAP):
            if self.stopping.is_set():
                return
            try:
                with self.client.connect(timeout=30) as s:
                    s.sendall(req)
                    (r,), _ = read_responses(s, 1)
                if r[0] != 200 or r[2] != INDEX:
                    raise AssertionError(f"bad response {r[0]} {len(r[2])} bytes")
                self.fresh_ok += 1
            except Exception as e:  # noqa: BLE001
                self.fresh_errors.append(repr(e))
            time.sleep(0.01)

    def start(self):
        self.keep.start()
        self.thread.start()
        return self

    @property
    def ok(self):
        return self.keep.ok + self.fresh_ok

    @property
    def errors(self):
        return self.keep.errors + self.fresh_errors

    def stop(self):
        self.stopping.set()
        self.keep.stop()
        self.thread.join(60)
        assert not self.thread.is_alive(), "load did not finish"


def wait_ok_grows(load, by, timeout=120):
    """Waits until `by` more requests succeeded (the load is moving)."""
    start = load.ok
    deadline = time.monotonic() + timeout
    while load.ok < start + by:
        assert not load.errors, load.errors[:3]
        assert load.keep.threads[0].is_alive() or load.keep.stopping.is_set(), "keep-alive loop ended"
        assert time.monotonic() < deadline, f"only {load.ok - start} requests in {timeout}s"
        time.sleep(0.1)


def migrate(src, timeout=300, port=MIG_PORT):
    """Starts the migration and polls query-migrate until it ends; returns
    the final query-migrate answer."""
    src.qmp("migrate-set-capabilities", capabilities=RETURN_PATH)
    src.qmp("migrate-set-parameters", **{"max-bandwidth": 1 << 30, "downtime-limit": 300})
    src.qmp("migrate", uri=f"tcp:127.0.0.1:{port}")
    deadline = time.monotonic() + timeout
    while True:
        info = src.qmp("query-migrate")
        if info.get("status") in ("completed", "failed", "cancelled"):
            return info
        assert time.monotonic() < deadline, f"migration still {info.get('status')} after {timeout}s"
        time.sleep(0.1)
