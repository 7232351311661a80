#!/usr/bin/env python3
"""`make bench-acme`: issue 33's figure. From QEMU's start to the first
HTTPS answer verified against the CA's root with a certificate the
appliance got for itself: vireo (a make TLS=1 PVH ELF, the CA's API root
baked in with TLS_CA=, `acme.directory=`) against Caddy 2.6 (Debian's
package, the peer of tests/bench/peer/build.sh caddy: `acme_ca`,
`acme_ca_root`), both booted with -kernel in the same QEMU (q35, TCG, one
CPU, -m --mem, virtio-net-pci on a tap in one namespace), against the same
pebble (Debian 12's 2.4, PEBBLE_VA_NOSLEEP=1: no random wait before
validation) with pebble-challtestsrv as its DNS (every name is the guest).

Each round starts a fresh pebble (a new CA, so nothing is reused), starts
QEMU and from that moment asks https://NAME/healthz once every 0.1 s
(curl --cacert with pebble's root from its management API, --resolve to
the guest, 2 s at most a try) until one answers 200 "ok": that is the
figure. A try fails while the guest boots, while it serves a certificate
pebble did not issue, or while it has none. The console's ready line
gives the boot's share. Prints each round, then the median, minimum and
maximum per system and the ratio Caddy / vireo (above 1: vireo is faster),
and one JSON line. Figures only: nothing is asserted about speed.

  acme.py --elf build/bench-acme/build/vireo.elf [--rounds 3] [--mem 256] [--systems vireo,caddy]

The ELF must trust pebble's API certificate, which this script makes
(--make-ca DIR writes it and exits: make bench-acme builds the ELF with
TLS_CA=DIR/ca.pem)."""
import argparse
import json
import os
import pathlib
import re
import signal
import statistics
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, os.path.join(ROOT, "tests", "qemu"))
import netns as nsmod  # noqa: E402
from test_acme import Pebble, api_cert, challtestsrv  # noqa: E402

PEERS = os.environ.get("BENCH_OUT", os.path.join(ROOT, "build", "bench"))
NAMES = ("app.vireo.test", "www.vireo.test")


def boot(ns, name, a, log):
    acme = f"https://{ns.host_ip}:14000/dir"
    if name == "vireo":
        args = ["-kernel", a.elf, "-append",
                f"ip={ns.guest_ip}/24 egress.allow={ns.host_ip}/32 acme.directory={acme} "
                f"acme.names={','.join(NAMES)}"]
    else:
        d = os.path.join(PEERS, f"peer-{name}")
        args = ["-kernel", os.path.join(d, "vmlinuz"), "-initrd", a.initrd, "-append",
                f"console=ttyS0 quiet bench.ip={ns.guest_ip}/24 bench.gw={ns.host_ip} bench.acme={acme} "
                f"bench.names={','.join(NAMES)}"]
    cmd = ["qemu-system-x86_64", "-machine", "q35", "-accel", "tcg", "-m", str(a.mem), "-smp", "1", "-nodefaults",
           "-no-user-config", "-display", "none", "-serial", f"file:{log}"] + args + ns.qemu_args()
    return subprocess.Popen(ns.wrap + cmd, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                            stderr=subprocess.PIPE, start_new_session=True)


def stop(p):
    if p.poll() is None:
        os.killpg(p.pid, signal.SIGKILL)
        p.wait(timeout=10)


def peer_initrd(tmp, d):
    """The caddy peer's initramfs with the CA's API root as /peer/data/ca.pem."""
    data = os.path.join(tmp, "data")
    os.makedirs(os.path.join(data, "peer", "data"), exist_ok=True)
    with open(os.path.join(d, "ca.pem"), "rb") as f, open(os.path.join(data, "peer", "data", "ca.pem"), "wb") as o:
        o.write(f.read())
    cpio = subprocess.run("find . | sort | cpio -o -H newc --owner=0:0 --quiet | gzip -1", shell=True, cwd=data,
                          capture_output=True, check=True).stdout
    out = os.path.join(tmp, "initrd-caddy.img")
    with open(os.path.join(PEERS, "peer-caddy", "initrd.img"), "rb") as f, open(out, "wb") as o:
        o.write(f.read())
        o.write(cpio)
    return out


def round_once(ns, name, a, d, tmp, k):
    pebble = Pebble(ns, d, 0)
    log = os.path.join(tmp, f"{name}-{k}-console.log")
    try:
        root = pebble.root(pathlib.Path(tmp, f"root-{name}-{k}.pem"))
        t0 = time.monotonic()
        p = boot(ns, name, a, log)
        ready = None
        tries = 0
        try:
            while True:
                now = time.monotonic() - t0
                if now > a.timeout:
                    text = open(log, errors="replace").read() if os.path.exists(log) else ""
                    raise SystemExit(f"{name}: no verified HTTPS answer in {a.timeout} s:\n{text[-3000:]}\n"
                                     f"pebble:\n{pebble.text()[-2000:]}")
                if p.poll() is not None:
                    raise SystemExit(f"{name}: QEMU ended: {p.stderr.read().decode()[-2000:]}")
                if ready is None and os.path.exists(log):
                    if re.search(r"^vireo: ready|READY peer=", open(log, errors="replace").read(), re.M):
                        ready = now
                r = ns.run("curl", "-s", "--max-time", "2", "--cacert", str(root), "--resolve",
                           f"{NAMES[0]}:443:{ns.guest_ip}", "-w", "\n%{http_code}", f"https://{NAMES[0]}/healthz",
                           timeout=10)
                tries += 1
                out = r.stdout.decode(errors="replace")
                if r.returncode == 0 and out.endswith("\n200") and out.startswith("ok"):
                    return {"verified_s": time.monotonic() - t0, "ready_s": ready, "tries": tries}
                time.sleep(0.1)
        finally:
            stop(p)
    finally:
        pebble.stop()


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--elf")
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--mem", type=int, default=256)
    ap.add_argument("--timeout", type=int, default=180)
    ap.add_argument("--systems", default="vireo,caddy")
    ap.add_argument("--ca-dir", required=True, help="pebble's API certificate and its CA (made if missing)")
    ap.add_argument("--make-ca", action="store_true", help="only make the API certificate in --ca-dir")
    a = ap.parse_args()
    if os.geteuid() != 0 or not nsmod.available():
        raise SystemExit("bench-acme: needs root (network namespace, tap device)")
    with nsmod.Netns() as ns:
        os.makedirs(a.ca_dir, exist_ok=True)
        ip_file = os.path.join(a.ca_dir, "ip")
        if not os.path.exists(os.path.join(a.ca_dir, "api.pem")) or \
                (open(ip_file).read() if os.path.exists(ip_file) else "") != ns.host_ip:
            api_cert(a.ca_dir, ns.host_ip)
            with open(ip_file, "w") as f:
                f.write(ns.host_ip)
        if a.make_ca:
            return
        systems = a.systems.split(",")
        if "vireo" in systems and not (a.elf and os.path.exists(a.elf)):
            raise SystemExit("bench-acme: --elf (make TLS=1 TLS_CA=... elf) missing")
        if "caddy" in systems and not os.path.exists(os.path.join(PEERS, "peer-caddy", "initrd.img")):
            raise SystemExit("bench-acme: tests/bench/peer/build.sh caddy first (make bench-acme does)")
        tmp = tempfile.mkdtemp(prefix="vireo-acme-bench-")
        a.initrd = peer_initrd(tmp, a.ca_dir) if "caddy" in systems else None
        dns = challtestsrv(ns)
        res = {s: [] for s in systems}
        try:
            for k in range(a.rounds):
                for name in systems:
                    v = round_once(ns, name, a, a.ca_dir, tmp, k)
                    res[name].append(v)
                    print(f"{name:6} round {k + 1}: verified HTTPS {v['verified_s']:6.2f} s after QEMU's start "
                          f"(ready {v['ready_s'] if v['ready_s'] is None else round(v['ready_s'], 2)} s, "
                          f"{v['tries']} tries)", flush=True)
        finally:
            dns.kill()
            dns.wait(timeout=10)
    print()
    med = {s: statistics.median(v["verified_s"] for v in res[s]) for s in systems}
    for s in systems:
        xs = [v["verified_s"] for v in res[s]]
        print(f"{s:6} QEMU start -> verified HTTPS with its own certificate: median {med[s]:6.2f} s "
              f"(min {min(xs):.2f}, max {max(xs):.2f}, {len(xs)} rounds)")
    if "vireo" in med and "caddy" in med:
        print(f"caddy / vireo: {med['caddy'] / med['vireo']:.2f}x")
    print(json.dumps({"date": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()), "mem": a.mem,
                      "load": os.getloadavg()[0], "rounds": res, "median_s": med}))


if __name__ == "__main__":
    main()
