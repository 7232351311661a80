#!/usr/bin/env python3
"""Quick HTTP and HTTPS figures for one image (docs/https.md): boots it in a
network namespace on a tap (TCG, -m 256), then runs wrk (612 B page,
keep-alive, c1, c8 and c32) over HTTP and, when the image serves HTTPS, over
HTTPS, and counts new TLS handshakes per second (openssl s_time -new, 1 and
4 in parallel). Prints one line per
figure. Needs root (namespace and tap). Every load is bounded by --duration.

    tests/bench/tls_quick.py [--image build/tls-image/vireo.img] [--duration 5]
"""
import argparse
import os
import re
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "qemu"))
from netns import Netns  # noqa: E402
from vm import ROOT, Vm  # noqa: E402


def wrk(ns, url, conns, duration):
    r = ns.run("wrk", "-t1" if conns == 1 else "-t2", f"-c{conns}", f"-d{duration}s", url,
               timeout=duration + 60)
    out = r.stdout.decode()
    m = re.search(r"Requests/sec:\s+([\d.]+)", out)
    errs = re.search(r"Non-2xx or 3xx responses: (\d+)|Socket errors: (.*)", out)
    return (float(m.group(1)) if m else 0.0), (errs.group(0) if errs else "")


def handshakes(ns, host, port, duration, parallel=4):
    """New full TLS handshakes per second: openssl s_time -new (one handshake
    per connection, no request), several in parallel, summed."""
    procs = [ns.popen("openssl", "s_time", "-connect", f"{host}:{port}", "-new", "-time", str(duration),
                      stdout=subprocess.PIPE, stderr=subprocess.DEVNULL) for _ in range(parallel)]
    total = 0.0
    for p in procs:
        out = p.communicate(timeout=duration + 60)[0].decode()
        m = re.search(r"(\d+) connections in (\d+) real seconds", out)
        if m and int(m.group(2)):
            total += int(m.group(1)) / int(m.group(2))
    return total


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--image", default=os.path.join(ROOT, "build", "tls-image", "vireo.img"))
    ap.add_argument("--duration", type=int, default=5)
    ap.add_argument("--mem", type=int, default=256)
    ap.add_argument("--cmdline", default="")
    a = ap.parse_args()
    with Netns() as ns:
        vm = Vm(cmdline=f"ip={ns.guest_ip}/24 gw={ns.host_ip} {a.cmdline}".strip(), mem=a.mem,
                image=a.image, wrap=ns.wrap, extra=ns.qemu_args())
        try:
            m = vm.wait_for(r"^vireo: ready ip=\S+ http=\d+( https=(\d+))?$", timeout=180)
            https = m.group(2) if m else None
            base = f"http://{ns.guest_ip}/index.html"
            wrk(ns, base, 4, 2)  # warm-up
            print(f"image {os.path.relpath(a.image, ROOT)}, {time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}, "
                  f"wrk {a.duration}s, -m {a.mem}, TCG, tap")
            for c in (1, 8, 32):
                rps, err = wrk(ns, base, c, a.duration)
                print(f"http  612 B c{c}: {rps:,.0f} req/s {err}")
            if https:
                surl = f"https://{ns.guest_ip}:{https}/index.html"
                wrk(ns, surl, 4, 2)
                for c in (1, 8, 32):
                    rps, err = wrk(ns, surl, c, a.duration)
                    print(f"https 612 B c{c}: {rps:,.0f} req/s {err}")
                for par in (1, 4):
                    print(f"https new handshakes (openssl s_time -new, {par} in parallel): "
                          f"{handshakes(ns, ns.guest_ip, https, a.duration, par):,.1f}/s")
        finally:
            vm.stop()


if __name__ == "__main__":
    main()
