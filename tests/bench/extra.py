#!/usr/bin/env python3
"""One benchmark boot for the figures the shared harness (run.sh) does not
make: `Connection: close` load, host CPU per request, idle host CPU, and for
vireo the /metrics counters around each load (interrupts, polls, frames),
the boot timeline, UDP echo ping-pong and a bounded UDP flood.

The guest is booted exactly as run.sh boots it: the descriptor is read by
tests/bench/guest.sh (run.sh's defaults, guest_prepare), and the common part
of the QEMU command is run.sh's (q35, TCG, -cpu qemu64, -smp 1, serial to a
file, QMP, virtio-net-pci on a tap device in a network namespace of this
script's own, udhcpd in it for DHCP guests). QEMU, wrk, curl and the UDP
clients all run inside that namespace; nothing reaches the host's network.
Every wait and every load is bounded; only processes started here are
stopped, by PID. Appends one JSON line to --results.

  extra.py --desc DESCRIPTOR --role peer|vireo|vireo-off --rundir DIR
           --results FILE [--duration S] [--cmdline STR] [--rep N]
"""
import argparse
import json
import os
import re
import signal
import socket
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
UDPSTREAM = os.environ.get("UDPSTREAM", os.path.join(HERE, "..", "..", "build", "bench", "udpstream"))
BENCH_DIR = os.environ.get("BENCH_DIR", "/work/shared/bench")
WRK_LUA = os.path.join(BENCH_DIR, "lib", "wrk-json.lua")
TICK = os.sysconf("SC_CLK_TCK")


def log(msg):
    print(f"[extra {time.strftime('%H:%M:%S')}] {msg}", file=sys.stderr, flush=True)


def sh(*cmd, check=True, timeout=30):
    return subprocess.run(cmd, capture_output=True, text=True, check=check, timeout=timeout)


def cpu_seconds(pid):
    """utime + stime of the QEMU process (all its threads)."""
    with open(f"/proc/{pid}/stat") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / TICK


def proc_kib(pid, key):
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith(key + ":"):
                return int(line.split()[1])
    return None


def parse_metrics(text):
    out = {}
    for line in text.splitlines():
        if not line or line.startswith("#"):
            continue
        k, _, v = line.rpartition(" ")
        try:
            out[k] = float(v)
        except ValueError:
            pass
    return out


class Boot:
    def __init__(self, a):
        self.a = a
        self.rundir = os.path.abspath(a.rundir)
        os.makedirs(self.rundir, exist_ok=True)
        self.ns = None
        self.qemu = None
        self.udhcpd = None
        self.g = None
        self.rec = {"role": a.role, "rep": a.rep, "cmdline": a.cmdline, "rundir": self.rundir,
                    "duration_s": a.duration, "ok": False}

    # ---- namespace, guest, QEMU
    def nsrun(self, *cmd, timeout=60):
        return subprocess.run(["ip", "netns", "exec", self.ns, *cmd], capture_output=True, text=True,
                              timeout=timeout)

    def setup(self):
        env = dict(os.environ, BENCH_DIR=BENCH_DIR)
        out = subprocess.run([os.path.join(HERE, "guest.sh"), self.a.desc, self.rundir], capture_output=True,
                             text=True, env=env, timeout=120)
        if out.returncode:
            raise RuntimeError(f"guest.sh failed: {out.stderr.strip()}")
        g = self.g = json.loads(out.stdout)
        self.rec["guest"] = g["GUEST_NAME"]
        if self.a.mem:
            g["GUEST_MEM"] = str(self.a.mem)  # as run.sh --mem: the same -m for every guest
        self.rec["mem_mib"] = int(g["GUEST_MEM"])
        self.ip, self.port = g["GUEST_IP"], int(g["GUEST_PORT"])
        self.base = f"http://{self.ip}:{self.port}"
        self.ns = f"vbench-{os.getpid()}"
        sh("ip", "netns", "add", self.ns)
        sh("ip", "-n", self.ns, "link", "set", "lo", "up")
        sh("ip", "-n", self.ns, "tuntap", "add", "dev", "tap0", "mode", "tap")
        sh("ip", "-n", self.ns, "addr", "add", f"{g['GUEST_HOST_IP']}/{g['GUEST_PREFIX']}", "dev", "tap0")
        sh("ip", "-n", self.ns, "link", "set", "tap0", "up")
        sh("ip", "-n", self.ns, "neigh", "replace", self.ip, "lladdr", g["GUEST_MAC"], "dev", "tap0", "nud",
           "permanent", check=False)
        if g["GUEST_DHCP"] == "1":
            mask = socket.inet_ntoa((0xffffffff << (32 - int(g["GUEST_PREFIX"])) & 0xffffffff).to_bytes(4, "big"))
            conf = os.path.join(self.rundir, "udhcpd.conf")
            with open(conf, "w") as f:
                f.write(f"start {self.ip}\nend {self.ip}\ninterface tap0\nmax_leases 1\n"
                        f"lease_file {self.rundir}/udhcpd.leases\noption subnet {mask}\n"
                        f"option router {g['GUEST_HOST_IP']}\noption lease 3600\n")
            open(os.path.join(self.rundir, "udhcpd.leases"), "w").close()
            self.udhcpd = subprocess.Popen(["ip", "netns", "exec", self.ns, "busybox", "udhcpd", "-f", conf],
                                           stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        nic = f"virtio-net-pci,netdev=n0,mac={g['GUEST_MAC']}" + (f",{g['GUEST_NIC_OPTS']}" if g["GUEST_NIC_OPTS"] else "")
        self.serial = os.path.join(self.rundir, "serial.log")
        self.qmp_path = os.path.join(self.rundir, "qmp.sock")
        cmd = ["qemu-system-x86_64", "-name", f"bench-{g['GUEST_NAME']}", "-machine", "q35", "-accel", "tcg",
               "-cpu", os.environ.get("BENCH_CPU", "qemu64"), "-smp", "1", "-m", g["GUEST_MEM"],
               "-nodefaults", "-no-user-config", "-display", "none", "-no-reboot",
               "-serial", f"file:{self.serial}", "-qmp", f"unix:{self.qmp_path},server=on,wait=off",
               "-pidfile", os.path.join(self.rundir, "qemu.pid"),
               "-netdev", "tap,id=n0,ifname=tap0,script=no,downscript=no", "-device", nic, *g["GUEST_ARGS"]]
        if self.a.cmdline:
            cmd += ["-fw_cfg", "name=opt/vireo/cmdline,string=" + self.a.cmdline.replace(",", ",,")]  # QEMU splits at commas
        self.rec["qemu_cmdline"] = " ".join(cmd)
        with open(os.path.join(self.rundir, "qemu-cmdline.txt"), "w") as f:
            f.write(" ".join(cmd) + "\n")
        log(f"boot {g['GUEST_NAME']} ({self.a.role}{', ' + self.a.cmdline if self.a.cmdline else ''}) -> {self.rundir}")
        self.t0 = time.time()
        self.qemu = subprocess.Popen(["ip", "netns", "exec", self.ns, *cmd], stdin=subprocess.DEVNULL,
                                     stdout=open(os.path.join(self.rundir, "qemu.stdout"), "w"),
                                     stderr=open(os.path.join(self.rundir, "qemu.stderr"), "w"))
        self.pid = self.qemu.pid	# `ip netns exec` execs QEMU: same PID

    def wait_boot(self, timeout):
        """Polls the serial log every 5 ms: first byte, vireo's banner, the
        ready marker (seconds since just before QEMU was started)."""
        marker = self.g["GUEST_READY_MARKER"].encode()
        first = banner = ready = None
        deadline = self.t0 + timeout
        data = b""
        while time.time() < deadline:
            try:
                with open(self.serial, "rb") as f:
                    data = f.read()
            except OSError:
                data = b""
            now = time.time() - self.t0
            if data and first is None:
                first = now
            if banner is None and re.search(rb"(^|\n)vireo \d", data):
                banner = now
            if marker in data:
                ready = now
                break
            if self.qemu.poll() is not None:
                raise RuntimeError(f"QEMU exited ({self.qemu.returncode}) before the ready marker")
            time.sleep(0.005)
        if ready is None:
            raise RuntimeError(f"no ready marker within {timeout}s")
        self.rec["boot"] = {"first_serial_byte_s": round(first, 3), "banner_s": round(banner, 3) if banner else None,
                            "ready_s": round(ready, 3)}
        self.rec["qemu_rss_ready_mib"] = round(proc_kib(self.pid, "VmRSS") / 1024, 1)
        # the first HTTP 200, bounded
        end = time.time() + 60
        while time.time() < end:
            r = self.nsrun("curl", "-s", "-o", "/dev/null", "-w", "%{http_code}", "--max-time", "1",
                           self.base + self.g["GUEST_SMALL_PATH"], timeout=10)
            if r.stdout == "200":
                self.rec["boot"]["http200_s"] = round(time.time() - self.t0, 3)
                return
            time.sleep(0.1)
        raise RuntimeError("no HTTP 200 within 60 s of the ready marker")

    def timeline(self):
        with open(self.serial, "rb") as f:
            text = f.read().decode("utf-8", "replace")
        lines = re.findall(r"^boot: timeline \(ms since efi_main\): (.*?)\r?$", text, re.M)
        if lines:
            self.rec["timeline_ms"] = {k: float(v) for k, v in (kv.split("=") for kv in lines[-1].split())}

    def metrics(self):
        if self.a.role == "peer":
            return None
        # right after a load the connection limit can still be taken by
        # lingering connections (the server resets new ones): retry, bounded
        for _ in range(6):
            r = self.nsrun("curl", "-sf", "--max-time", "10", self.base + "/metrics", timeout=20)
            if r.returncode == 0 and "vireo_vnet_frames_total" in r.stdout:
                return parse_metrics(r.stdout)
            time.sleep(1)
        log("GET /metrics failed 6 times")
        return None

    # ---- measurements
    def idle(self, secs=10):
        time.sleep(1)
        m0 = self.metrics()
        c0, t0 = cpu_seconds(self.pid), time.monotonic()
        time.sleep(secs)
        c1, t1 = cpu_seconds(self.pid), time.monotonic()
        m1 = self.metrics()
        out = {"seconds": round(t1 - t0, 2), "cpu_pct": round(100 * (c1 - c0) / (t1 - t0), 2)}
        if m0 and m1:
            out.update(self.deltas(m0, m1, None))
        self.rec["idle"] = out

    @staticmethod
    def deltas(m0, m1, requests):
        d = lambda k: m1.get(k, 0) - m0.get(k, 0)  # noqa: E731
        irq = {q: d(f'vireo_vnet_interrupts_total{{queue="{q}"}}') for q in ("rx", "tx")}
        polls = {q: d(f'vireo_vnet_polls_total{{queue="{q}"}}') for q in ("rx", "tx")}
        frames = {q: d(f'vireo_vnet_frames_total{{queue="{q}"}}') for q in ("rx", "tx")}
        out = {"rx_interrupts": irq["rx"], "tx_interrupts": irq["tx"], "rx_polls": polls["rx"],
               "tx_polls": polls["tx"], "rx_frames": frames["rx"], "tx_frames": frames["tx"],
               "coalesce_timer_wakeups": d("vireo_vnet_coalesce_timer_wakeups_total"),
               "coalesce_changes": d("vireo_vnet_coalesce_changes_total"),
               "rx_irq_per_frame": round(irq["rx"] / frames["rx"], 4) if frames["rx"] else None}
        # every time the CPU was woken for receive: interrupts and the
        # coalescing timer's polls (driver-side coalescing trades the one
        # for the other)
        wake = irq["rx"] + out["coalesce_timer_wakeups"]
        out["rx_wakeups_per_frame"] = round(wake / frames["rx"], 4) if frames["rx"] else None
        if requests:
            out["interrupts_per_req"] = round((irq["rx"] + irq["tx"]) / requests, 4)
            out["polls_per_req"] = round((polls["rx"] + polls["tx"]) / requests, 4)
            out["rx_frames_per_req"] = round(frames["rx"] / requests, 3)
        return out

    def wrk(self, name, path, conns, close):
        dur = self.a.duration
        jpath = os.path.join(self.rundir, f"wrk-{name}.json")
        cmd = ["wrk", "-t1", f"-c{conns}", f"-d{dur}s", "--timeout", "5s", "-s", WRK_LUA]
        if close:
            cmd += ["-H", "Connection: close"]
        cmd.append(self.base + path)
        if self.qemu.poll() is not None:
            raise RuntimeError("QEMU died during load tests")
        log(f"wrk {name} -c{conns} -d{dur}s{' (Connection: close)' if close else ''}")
        m0 = self.metrics()
        c0 = cpu_seconds(self.pid)
        r = subprocess.run(["timeout", str(dur + 30), "ip", "netns", "exec", self.ns, "env", f"WRK_JSON={jpath}",
                            *cmd], capture_output=True, text=True, timeout=dur + 60)
        c1 = cpu_seconds(self.pid)
        m1 = self.metrics()
        with open(os.path.join(self.rundir, f"wrk-{name}.txt"), "w") as f:
            f.write(r.stdout + r.stderr)
        with open(jpath) as f:
            w = json.load(f)
        secs = w["duration_us"] / 1e6
        errs = sum(int(w[k]) for k in w if k.startswith("err_"))
        out = {"path": path, "conns": conns, "close": close, "requests": int(w["requests"]),
               "rps": round(w["requests"] / secs, 1), "MBps": round(w["bytes"] / secs / 1e6, 3),
               "errors": errs, "lat_p50_ms": w["lat_p50_us"] / 1e3, "lat_p90_ms": w["lat_p90_us"] / 1e3,
               "lat_p99_ms": w["lat_p99_us"] / 1e3, "cpu_s": round(c1 - c0, 2),
               "cpu_ms_per_req": round(1e3 * (c1 - c0) / w["requests"], 4) if w["requests"] else None}
        if m0 and m1 and w["requests"]:
            out.update(self.deltas(m0, m1, w["requests"]))
        self.rec.setdefault("load", {})[name] = out
        time.sleep(1)

    def udp(self):
        log("udp ping-pong (2000 round trips), paced streams (20k and 40k/s, 3 s) and flood")
        out = {}
        udp_py = ["/usr/bin/python3", os.path.join(HERE, "udp.py")]
        for name, cmd, limit in (("pingpong", udp_py + ["pingpong", self.ip, "2000"], 200),
                                 ("stream20k", [UDPSTREAM, self.ip, "20000", "3"], 30),
                                 ("stream40k", [UDPSTREAM, self.ip, "40000", "3"], 30),
                                 ("flood", udp_py + ["flood", self.ip, "100000", "5"], 30)):
            if not os.access(cmd[0], os.X_OK):
                out[name] = {"error": f"{cmd[0]} not built"}
                continue
            m0 = self.metrics()
            c0 = cpu_seconds(self.pid)
            r = self.nsrun("timeout", str(limit), *cmd, timeout=limit + 10)
            c1 = cpu_seconds(self.pid)
            m1 = self.metrics()
            try:
                res = json.loads(r.stdout)
            except ValueError:
                res = {"error": (r.stdout + r.stderr)[-300:]}
            res["cpu_s"] = round(c1 - c0, 2)
            if m0 and m1:
                res.update(self.deltas(m0, m1, None))
            out[name] = res
            time.sleep(1)
        self.rec["udp"] = out

    def run(self):
        self.setup()
        self.wait_boot(self.a.boot_timeout)
        self.idle()
        # unrecorded warm-up, as run.sh does (fills the TCG translation cache)
        for p in (self.g["GUEST_SMALL_PATH"], self.g["GUEST_LARGE_PATH"]):
            self.nsrun("timeout", "17", "wrk", "-t1", "-c4", "-d2s", "--timeout", "5s", self.base + p, timeout=30)
        sizes = (("small", self.g["GUEST_SMALL_PATH"]), ("large", self.g["GUEST_LARGE_PATH"]))
        if self.a.role == "vireo-off":
            tests = [("small-c1", sizes[0][1], 1, False), ("small-c32", sizes[0][1], 32, False)]
        else:
            tests = [(f"{s}{'-close' if close else ''}-c{c}", p, c, close)
                     for close in (False, True) for s, p in sizes for c in (1, 32)]
        for name, path, conns, close in tests:
            self.wrk(name, path, conns, close)
        if self.a.role != "peer":
            self.udp()
            self.rec["metrics_end"] = {k: v for k, v in (self.metrics() or {}).items()
                                       if k.startswith(("vireo_mem_", "vireo_lwip_mem_", "vireo_lwip_heap",
                                                        "vireo_vnet_coalesce", "vireo_uptime"))}
        self.rec["qemu_peak_rss_mib"] = round(proc_kib(self.pid, "VmHWM") / 1024, 1)
        self.rec["qemu_rss_end_mib"] = round(proc_kib(self.pid, "VmRSS") / 1024, 1)
        self.timeline()
        self.rec["ok"] = True

    # ---- stop and clean up
    def qmp(self, command):
        try:
            s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
            s.settimeout(5)
            s.connect(self.qmp_path)
            f = s.makefile("rw")
            f.readline()
            for c in ("qmp_capabilities", command):
                f.write(json.dumps({"execute": c}) + "\n")
                f.flush()
                while True:
                    msg = json.loads(f.readline() or "{}")
                    if "return" in msg or "error" in msg or not msg:
                        break
            s.close()
        except (OSError, ValueError):
            pass

    def wait_exit(self, secs):
        try:
            self.qemu.wait(timeout=secs)
            return True
        except subprocess.TimeoutExpired:
            return False

    def stop(self):
        if self.qemu and self.qemu.poll() is None:
            done = False
            if self.g and self.g.get("GUEST_STOP") == "acpi":
                self.qmp("system_powerdown")
                done = self.wait_exit(int(self.g.get("GUEST_STOP_TIMEOUT", "15")))
            if not done:
                self.qmp("quit")
                done = self.wait_exit(10)
            if not done:
                self.qemu.terminate()
                if not self.wait_exit(5):
                    self.qemu.kill()
                    self.wait_exit(5)
        if self.udhcpd and self.udhcpd.poll() is None:
            self.udhcpd.terminate()
            try:
                self.udhcpd.wait(timeout=5)
            except subprocess.TimeoutExpired:
                self.udhcpd.kill()
        if self.ns:
            subprocess.run(["ip", "netns", "del", self.ns], capture_output=True)
        for f in (self.g or {}).get("GUEST_CLEANUP_FILES", "").split():
            if f.startswith(self.rundir + "/"):
                try:
                    os.unlink(f)
                except OSError:
                    pass


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--desc", required=True)
    ap.add_argument("--role", choices=("peer", "vireo", "vireo-off"), required=True)
    ap.add_argument("--rundir", required=True)
    ap.add_argument("--results", required=True)
    ap.add_argument("--duration", type=int, default=10)
    ap.add_argument("--cmdline", default="")
    ap.add_argument("--rep", type=int, default=1)
    ap.add_argument("--mem", type=int, default=0, help="guest -m in MiB, overriding the descriptor's")
    ap.add_argument("--boot-timeout", type=int, default=180)
    a = ap.parse_args()

    def on_term(sig, _frame):
        raise SystemExit(128 + sig)
    signal.signal(signal.SIGTERM, on_term)
    signal.signal(signal.SIGHUP, on_term)
    b = Boot(a)
    rc = 0
    try:
        b.run()
    except (RuntimeError, OSError, ValueError, KeyError, subprocess.SubprocessError) as e:
        b.rec["error"] = f"{type(e).__name__}: {e}"
        log(f"FAIL {a.role}: {b.rec['error']}")
        rc = 1
    finally:
        b.stop()
        with open(a.results, "a") as f:
            f.write(json.dumps(b.rec) + "\n")
    return rc


if __name__ == "__main__":
    sys.exit(main())
