#!/usr/bin/env python3
"""apps/kv's figures (`make bench-kv`): GET and PUT requests per second at
1 and 32 connections, with wrk over a tap in a namespace of its own
(tests/matrix/mxlib.py's Guest), one boot of the kv image. GET reads one
64-byte value; PUT writes 64-byte values over 1,000 keys in turn
(apps/kv/bench_put.lua), so the store's size stays fixed; GET /healthz
(the runtime's own smallest answer) on the same boot gives the scale. Figures only:
nothing is asserted about speed; non-2xx answers and socket errors are
printed next to each figure. Every run is bounded by --duration.

  kv.py --image build/apps/kv/vireo.img [--duration 5] [--mem 256]
"""
import argparse
import json
import os
import re
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, os.path.join(HERE, "..", "matrix"))
from mxlib import Guest  # noqa: E402

LUA = os.path.join(ROOT, "apps", "kv", "bench_put.lua")


def wrk(g, conns, dur, url, script=None):
    threads = 1 if conns == 1 else 2
    cmd = ["wrk", f"-t{threads}", f"-c{conns}", f"-d{dur}s", "--latency"]
    if script:
        cmd += ["-s", script]
    r = g.ns.run(*cmd, url, timeout=dur + 60)
    out = r.stdout.decode()
    if r.returncode != 0:
        raise SystemExit(f"wrk failed ({r.returncode}): {out}{r.stderr.decode()}")
    rps = float(re.search(r"Requests/sec:\s+([\d.]+)", out).group(1))
    non2xx = re.search(r"Non-2xx or 3xx responses: (\d+)", out)
    errs = re.search(r"Socket errors: (.*)", out)
    p50 = re.search(r"^\s+50%\s+(\S+)", out, re.M)
    return {"rps": rps, "non2xx": int(non2xx.group(1)) if non2xx else 0,
            "socket_errors": errs.group(1) if errs else "", "p50": p50.group(1) if p50 else ""}


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--image", required=True)
    ap.add_argument("--duration", type=int, default=5)
    ap.add_argument("--mem", type=int, default=256)
    a = ap.parse_args()
    if not os.path.exists(a.image):
        raise SystemExit(f"{a.image} missing: make APP=apps/kv image")
    if os.geteuid() != 0:
        raise SystemExit("bench-kv: needs root (network namespace, tap device)")
    res = {}
    with Guest(mem=a.mem, image=a.image) as g:
        base = f"http://{g.ip}"
        r = g.ns.run("curl", "-sS", "--max-time", "20", "-X", "PUT", "--data-binary", "v" * 64,
                     "-o", "/dev/null", "-w", "%{http_code}", f"{base}/kv/bench/get")
        if r.stdout.decode() != "201":
            raise SystemExit(f"PUT of the GET key answered {r.stdout.decode()}: {r.stderr.decode()}")
        for conns in (1, 32):
            # The runtime's own smallest answer on the same boot, for scale.
            res[f"healthz_c{conns}"] = wrk(g, conns, a.duration, f"{base}/healthz")
            res[f"get_c{conns}"] = wrk(g, conns, a.duration, f"{base}/kv/bench/get")
            res[f"put_c{conns}"] = wrk(g, conns, a.duration, base, script=LUA)
        m = g.metrics()
        res["kv_keys"] = m.get("kv_keys")
        res["kv_bytes_used"] = m.get("kv_bytes_used")
    for k in ("healthz_c1", "healthz_c32", "get_c1", "get_c32", "put_c1", "put_c32"):
        v = res[k]
        extra = "".join([f", {v['non2xx']} non-2xx" if v["non2xx"] else "",
                         f", socket errors {v['socket_errors']}" if v["socket_errors"] else ""])
        print(f"{k.replace('_', ' '):11}: {v['rps']:10,.0f} req/s  p50 {v['p50']}{extra}", flush=True)
    print(f"store after the run: {res['kv_keys']:.0f} keys, {res['kv_bytes_used']:.0f} bytes")
    print(json.dumps({"duration": a.duration, "mem": a.mem, **res}))


if __name__ == "__main__":
    main()
