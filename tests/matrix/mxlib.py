"""Helpers for the matrix, hostile-input, fault and soak suites: a guest on a
tap device in a network namespace of the test's own, sockets made inside that
namespace (setns(2) on the calling thread, then back), HTTP over them, the
/metrics reader and the "back to idle" comparison.

Nothing here depends on speed: waits are bounded by generous deadlines and
only fail when the expected state never comes."""
import ctypes
import os
import shutil
import socket
import subprocess
import sys
import threading
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(os.path.dirname(HERE), "qemu"))

import netns as nsmod  # noqa: E402
from httpc import parse_prometheus, parse_response, read_all, read_responses  # noqa: E402,F401
from vm import IMAGE, ROOT, Vm  # noqa: E402,F401

READY = r"^vireo: ready ip=(\S+) http=(\d+)(?: https=\d+)?$"
SITE = os.path.join(ROOT, "runtime", "default-site")
with open(os.path.join(SITE, "index.html"), "rb") as _f:
    INDEX = _f.read()
BIG = bytes(i % 251 for i in range(65536))
GUEST_MAC = "52:54:00:12:34:56"
GUEST_LL = "fe80::5054:ff:fe12:3456"
PYTHON = "/usr/bin/python3"
# An lwIP TCP PCB in TIME_WAIT costs this much of lwIP's heap (MEMP_MEM_MALLOC:
# the tcp_pcb plus mem.c's size header, in net/port/segheap.c's 320-byte class).
TW_PCB_BYTES = 320

_libc = ctypes.CDLL(None, use_errno=True)
CLONE_NEWNET = 0x40000000


def _setns(fd):
    if _libc.setns(fd, CLONE_NEWNET) != 0:
        err = ctypes.get_errno()
        raise OSError(err, f"setns: {os.strerror(err)}")


class NsClient:
    """Sockets and HTTP from inside a network namespace to a guest at `ip`
    (port 80). ns: a tests/qemu/netns.Netns (made by the test, or attached
    to one someone else made: Netns.attach)."""

    def __init__(self, ns, ip):
        self.ns = ns
        self.ip = ip
        self._nsfd = os.open(f"/run/netns/{ns.name}", os.O_RDONLY)

    def close_ns(self):
        try:
            os.close(self._nsfd)
        except (AttributeError, OSError):
            pass

    # ---- sockets inside the namespace ----

    def socket(self, family=socket.AF_INET, type=socket.SOCK_STREAM):
        """A socket that lives in the guest's namespace (usable from any thread)."""
        own = os.open("/proc/thread-self/ns/net", os.O_RDONLY)
        try:
            _setns(self._nsfd)
            try:
                return socket.socket(family, type)
            finally:
                _setns(own)
        finally:
            os.close(own)

    def connect(self, port=80, timeout=30, host=None, src=None):
        """A connected TCP socket; src: a source address of the namespace's
        (add_source()) to bind to, else the tap's own. src may be an
        (address, port) pair."""
        s = self.socket()
        s.settimeout(timeout)
        try:
            if src:
                s.bind(src if isinstance(src, tuple) else (src, 0))
            s.connect((host or self.ip, port))
        except BaseException:
            s.close()
            raise
        return s

    def add_source(self, ip):
        """Another IPv4 address on the namespace's tap (same /24): a second
        source for per-source limits."""
        self.ns.run("ip", "addr", "add", f"{ip}/24", "dev", self.ns.tap, check=True)

    def request(self, raw, timeout=30, src=None):
        """Sends raw bytes, reads until the server closes; returns bytes."""
        with self.connect(timeout=timeout, src=src) as s:
            s.sendall(raw)
            return read_all(s)

    def get(self, path, headers="", timeout=30, src=None):
        resp = self.request(f"GET {path} HTTP/1.1\r\nHost: x\r\nConnection: close\r\n{headers}\r\n".encode(),
                            timeout=timeout, src=src)
        return parse_response(resp)


class Guest(NsClient):
    """A namespace with a tap device, and vireo on it with a static address.

    device_opts: virtio-net-pci properties; machine: q35 or pc; mem: MiB;
    extra: more QEMU arguments; tap_mtu: the tap's MTU (the host side);
    image: the disk to boot (default: build/vireo.img)."""

    def __init__(self, device_opts="", machine="q35", mem=64, extra=(), tap_mtu=None, cmdline="", image=IMAGE):
        ns = nsmod.Netns()
        self.ns = ns
        self.vm = None
        try:
            if tap_mtu:
                ns.run("ip", "link", "set", ns.tap, "mtu", str(tap_mtu), check=True)
            NsClient.__init__(self, ns, ns.guest_ip)
            cl = f"ip={self.ip}/24 gw={ns.host_ip}" + (f" {cmdline}" if cmdline else "")
            self.vm = Vm(cmdline=cl, machine=machine, mem=mem, wrap=ns.wrap, image=image,
                         extra=ns.qemu_args(device_opts) + list(extra))
            self.ready = self.vm.wait_for(READY, timeout=180)
            assert self.ready.group(1) == self.ip, self.ready.group(0)
        except BaseException:
            self.close()
            raise

    def metrics(self, src=None):
        status, _, body = self.get("/metrics", src=src)
        assert status == 200, status
        return parse_prometheus(body.decode())

    def udp_echo(self, payload, timeout=10, tries=3):
        """One UDP datagram to port 7 and its echo (a few tries: UDP)."""
        with self.socket(type=socket.SOCK_DGRAM) as u:
            u.settimeout(timeout)
            for _ in range(tries):
                u.sendto(payload, (self.ip, 7))
                try:
                    while True:
                        data, _ = u.recvfrom(65536)
                        if data == payload:
                            return data
                except socket.timeout:
                    continue
        raise AssertionError(f"no UDP echo of {len(payload)} bytes")

    def tcp_echo(self, payload, timeout=30):
        with self.connect(port=7, timeout=timeout) as s:
            s.sendall(payload)
            got = b""
            while len(got) < len(payload):
                c = s.recv(65536)
                assert c, "echo connection closed early"
                got += c
        assert got == payload
        return got

    def qmp_link(self, up):
        self.vm.qmp("set_link", name="nic0", up=up)

    def ping(self, *args):
        r = self.ns.run("ping", "-c", "2", "-i", "0.3", "-W", "10", *args, self.ip, timeout=90)
        assert r.returncode == 0, r.stdout.decode() + r.stderr.decode()

    def serves(self):
        """The appliance's basic answers, byte for byte."""
        status, headers, body = self.get("/")
        assert status == 200 and body == INDEX, (status, len(body))
        status, _, body = self.get("/64k.bin")
        assert status == 200 and body == BIG, (status, len(body))
        status, _, body = self.get("/healthz")
        assert (status, body) == (200, b"ok\n")

    # ---- idle level ----

    def baseline(self, timeout=60):
        """The idle metrics: once the link-local address has left TENTATIVE
        (lwIP joins its solicited-node group then, on the first ND timer
        tick after link up: one MLD6_GROUP element) and two reads a second
        apart agree on idle_levels()."""
        key = 'vireo_lwip_memp_used{pool="MLD6_GROUP"}'
        deadline = time.monotonic() + timeout
        prev = self.metrics()
        while True:
            time.sleep(1)
            m = self.metrics()
            if m.get(key, 0) >= 1 and idle_levels(m) == idle_levels(prev):
                return m
            if time.monotonic() >= deadline:
                if m.get(key, 0) < 1:
                    raise AssertionError(f"no idle baseline: IPv6 did not settle within {timeout} s "
                                         f"({key} is {m.get(key, 0)})")
                diff = {k: (prev.get(k), v) for k, v in idle_levels(m).items() if idle_levels(prev).get(k) != v}
                raise AssertionError(f"no idle baseline: levels still moving after {timeout} s: {diff}")
            prev = m

    def wait_idle(self, base, timeout=150):
        """Polls /metrics until every level in idle_levels() equals `base`'s;
        returns the last metrics. TIME_WAIT PCBs are left out (2 MSL by
        design), half-open ones and reassembly buffers expire within lwIP's
        timeouts (SYN_RCVD 3 s with the port's trim, IPv4 and IPv6 reassembly
        15 s)."""
        want = idle_levels(base)
        deadline = time.monotonic() + timeout
        while True:
            m = self.metrics()
            got = idle_levels(m)
            slack, allowed = lwip_heap_excess(base, m)
            if got == want and abs(slack) <= allowed:
                break
            if time.monotonic() > deadline:
                diff = {k: (want.get(k), got.get(k)) for k in set(want) | set(got) if want.get(k) != got.get(k)}
                raise AssertionError(f"not back to idle after {timeout} s: (idle, now) {diff}; "
                                     f"lwIP heap {slack:+.0f} B beyond the TIME_WAIT PCBs (allowed {allowed:.0f})")
            time.sleep(1)
        # the kernel heap counts a block's unsplittable tail as in use, so it
        # moves by a few bytes with fragmentation; one leaked HTTP connection
        # would be ~14.5 KiB
        grew = m["vireo_mem_heap_in_use_bytes"] - base["vireo_mem_heap_in_use_bytes"]
        assert grew < 2048, f"kernel heap grew by {grew} bytes"
        return m

    def log_clean(self):
        text = self.vm.text
        for bad in ("vireo: panic", "broken"):
            assert bad not in text, f"{bad!r} in the console log:\n{text[-4000:]}"

    def close(self):
        if self.vm is not None:
            self.vm.stop()
        self.close_ns()
        self.ns.close()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()


def extra_site_image(site_build, app_extra):
    """build/'s objects relinked with APP_EXTRA's synthetic files in the site
    (e.g. "1m.bin=1048576"), in a build directory of its own (site_build,
    emptied first; build/'s objects, fetched sources and build stamps are
    copied in, so only the site and the link are redone). Returns the
    image's path."""
    build = os.path.join(ROOT, "build")
    shutil.rmtree(site_build, ignore_errors=True)
    os.makedirs(site_build)
    # The objects, lwIP, mbedTLS and the stamps that say which build they
    # are (TLS on or off, storage linked or not, the cold code's COLD_OPT):
    # without tls-build.* or cold-opt.* every object is compiled again,
    # serially (35 s of each make test; mbedTLS another minute).
    stamps = [f for f in os.listdir(build) if f.startswith(("tls-build.", "storage-link.", "cold-opt."))]
    for d in ("k", "gen", "lwip", "lwip-src", "apt", "mbedtls", "mbedtls-src", "tls-lwip", *stamps):
        if os.path.exists(os.path.join(build, d)):
            subprocess.run(["cp", "-a", os.path.join(build, d), site_build], check=True)
    env = {k: v for k, v in os.environ.items() if k not in ("MAKEFLAGS", "MFLAGS", "MAKELEVEL", "MAKEOVERRIDES")}
    # A test image, not the product: its synthetic files' table is not the
    # default image's, so the image budget does not apply (IMAGE_BUDGET=0).
    r = subprocess.run(["make", "-s", f"BUILD={site_build}", f"APP_EXTRA={app_extra}", "IMAGE_BUDGET=0", "image"],
                       cwd=ROOT, env=env, capture_output=True, text=True, timeout=900)
    assert r.returncode == 0, r.stdout[-3000:] + r.stderr[-3000:]
    return os.path.join(site_build, "vireo.img")


def idle_levels(m):
    """What must return to its idle value: every lwIP pool (TCP PCBs without
    those in TIME_WAIT), the active PCB list, lwIP's heap without the TIME_WAIT
    PCBs, receive buffers the stack holds, and open HTTP/echo connections. The
    /metrics request that reads these is one active connection itself."""
    tw = m['vireo_tcp_pcbs{list="time_wait"}']
    out = {k: v for k, v in m.items() if k.startswith("vireo_lwip_memp_used{")}
    key = 'vireo_lwip_memp_used{pool="TCP_PCB"}'
    assert key in out, sorted(m)[:20]
    out[key] -= tw
    out["tcp_active"] = m['vireo_tcp_pcbs{list="active"}']
    out["rx_held"] = m["vireo_vnet_rx_buffers_held"]
    out["http_active"] = m["vireo_http_connections_active"]
    out["echo_active"] = m.get("vireo_echo_tcp_connections_active", 0)  # echo may be off
    out["orphans"] = m["vireo_lwip_orphans"]
    return out


def lwip_heap_excess(base, m):
    """lwIP's heap in use beyond `base`, TIME_WAIT PCBs (320 B each) taken
    out, and the slack allowed: 32 B per pool element in use. The heap
    (net/port/segheap.c) counts whole blocks of fixed classes, so layout no
    longer moves the level; the slack stays for the idle blocks outside
    the pools. A leaked frame-sized pbuf is well beyond it."""
    def net(x):
        return x["vireo_lwip_mem_used_bytes"] - TW_PCB_BYTES * x['vireo_tcp_pcbs{list="time_wait"}']

    def elems(x):
        return sum(v for k, v in x.items() if k.startswith("vireo_lwip_memp_used{"))

    return net(m) - net(base), 32 * max(elems(m), elems(base))


def delta(after, before, key):
    return after.get(key, 0) - before.get(key, 0)


class Load:
    """`conns` client threads, each doing `per_conn` keep-alive GETs of `path`
    (a list: one count per connection; None: until stop()), reconnecting after an error when
    tolerate_errors. Counts successes and failures; never fails on slowness."""

    def __init__(self, guest, conns=8, per_conn=100, path="/", want=None, tolerate_errors=False, timeout=30):
        self.guest = guest
        self.ok = 0
        self.errors = []
        self.lock = threading.Lock()
        self.path = path
        self.want = INDEX if want is None and path == "/" else want
        self.tolerate = tolerate_errors
        self.timeout = timeout
        self.stopping = threading.Event()
        counts = per_conn if isinstance(per_conn, (list, tuple)) else [per_conn] * conns
        self.threads = [threading.Thread(target=self._worker, args=(n,), daemon=True) for n in counts]

    def start(self):
        for t in self.threads:
            t.start()
        return self

    def stop(self):
        self.stopping.set()
        return self.join()

    def join(self, timeout=1800):
        deadline = time.monotonic() + timeout
        for t in self.threads:
            t.join(max(0.0, deadline - time.monotonic()))
        assert not any(t.is_alive() for t in self.threads), "load did not finish"
        return self

    def _worker(self, n):
        req = f"GET {self.path} HTTP/1.1\r\nHost: x\r\n\r\n".encode()
        done = 0
        s = None
        while (done < n) if n is not None else not self.stopping.is_set():
            try:
                if s is None:
                    s = self.guest.connect(timeout=self.timeout)
                s.sendall(req)
                (r,), rest = read_responses(s, 1)
                if r[0] != 200 or (self.want is not None and r[2] != self.want) or rest:
                    raise AssertionError(f"bad response {r[0]} {len(r[2])} bytes")
                with self.lock:
                    self.ok += 1
                done += 1
            except Exception as e:  # noqa: BLE001
                with self.lock:
                    self.errors.append(repr(e))
                if s is not None:
                    s.close()
                    s = None
                if not self.tolerate:
                    return
                done += 1
                time.sleep(0.2)
        if s is not None:
            s.close()


def run_in_ns(guest, script, *args, timeout=900):
    """Runs a Python script file from this directory inside the namespace."""
    r = guest.ns.run(PYTHON, os.path.join(HERE, script), *args, timeout=timeout)
    assert r.returncode == 0, r.stdout.decode()[-3000:] + r.stderr.decode()[-3000:]
    return r.stdout.decode()


class Legit:
    """A legitimate client measuring its success rate: sequential GETs of /
    (a new connection each, Connection: close) from `src`, until stop() or
    `limit` requests; a request fails on any error or a wrong body.

    From a src address the local port goes up by one per connection from
    `port_base`, as Linux's connect() would choose it: bind((src, 0)) picks a
    random port, and one that is still in TIME_WAIT on the server (which
    closes first) is answered with an ACK instead of a SYN-ACK by lwIP
    2.2.1, so about 1 connection in 100 would hang until the TIME_WAIT ends
    (2 min); seen with no attack at all."""

    def __init__(self, guest, src=None, limit=2000, pause=0.05, timeout=20, port_base=33000):
        self.guest, self.src, self.limit, self.pause, self.timeout = guest, src, limit, pause, timeout
        self.port = port_base
        self.ok = 0
        self.errors = []
        self.times = []  # seconds per request, successful or not
        self.stopping = threading.Event()
        self.thread = threading.Thread(target=self._run, daemon=True)

    def start(self):
        self.thread.start()
        return self

    def stop(self):
        self.stopping.set()
        self.thread.join(self.timeout * 2 + 30)
        assert not self.thread.is_alive(), "legitimate client did not stop"
        return self

    @property
    def total(self):
        return self.ok + len(self.errors)

    def rate(self):
        return self.ok / self.total if self.total else 0.0

    def summary(self):
        t = sorted(self.times)
        slow = f", slowest {t[-1]:.2f} s, median {t[len(t) // 2]:.2f} s" if t else ""
        return f"{self.ok}/{self.total} ({self.rate():.3f}){slow}"

    def _run(self):
        while not self.stopping.is_set() and self.total < self.limit:
            t0 = time.monotonic()
            try:
                src = None
                if self.src:
                    src = (self.src, self.port)
                    self.port += 1
                status, _, body = self.guest.get("/", timeout=self.timeout, src=src)
                if status != 200 or body != INDEX:
                    raise AssertionError(f"bad response {status} {len(body)} bytes")
                self.ok += 1
            except Exception as e:  # noqa: BLE001
                self.errors.append(f"{time.strftime('%H:%M:%S')} {e!r}")
            self.times.append(time.monotonic() - t0)
            time.sleep(self.pause)


def legit_after(guest, n=50, src=None, port_base=43000):
    """n legitimate requests once an attack is over: all must succeed."""
    c = Legit(guest, src=src, limit=n, pause=0, port_base=port_base)
    c._run()
    return c
