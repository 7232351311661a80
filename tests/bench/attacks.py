#!/usr/bin/env python3
"""make bench-attacks: a legitimate client's success rate during each attack
of issue 13, and the time from the attack's end to full service, for vireo
and for the nginx-on-Linux peer of the shared harness under the same attack.

Each (attack, guest) pair gets a fresh boot through tests/bench/extra.py's
Boot: the harness's descriptor (uefi-app.sh with vireo.efi, or
linux-nginx-uefi.sh), run.sh's QEMU options (q35, TCG, -cpu qemu64, -smp 1,
OVMF), the same -m for both, virtio-net on a tap in a network namespace made
for that boot. Every client and attacker runs inside that namespace; nothing
reaches the host's network. Guests alternate (vireo, peer) per attack.

The attacks are the hostile suite's own generators (tests/matrix), pointed at
the guest's address and MAC as the descriptor gives them at run time:
  syn-flood    syn_tools.py flood: spoofed SYNs from 198.18.0.0/15 at 1,000/s
  ooseq        rxmem_attack.py ooseq: 48 connections from 48 addresses, each
               leaving a hole and 8 one-byte segments after it, held, then reset
  frag-trains  rxmem_attack.py frags: 3000 IPv4 + 3000 IPv6 first fragments
  slot-hog     client_attacks.hog: one source keeps 72 idle connections open
               (vireo's limit is 64); the legitimate client comes from a
               second address
  orphans      client_attacks.orphan_flood: clients whose pure ACKs are lost
               (tc on the tap), so every connection the server closes stays
               an orphan; 8 per second
  hs-flood     tests/bench/hs_flood.py (issue 29): TLS ClientHellos to 443
               from 32 addresses of one /24 (10.77.1.0/24, routed through
               the guest's gateway), each replaying one recorded hello and
               closing once the server's first flight (its ECDHE and
               signature) arrives, for 20 s; the legitimate client asks for
               plain HTTP from the tap's own address (another prefix). Its
               own table: the server's handshakes/s to the flood, the
               legitimate client's success and p50/p99 latency before and
               during, and the vireo/nginx ratios. vireo's image must be a
               TLS one (make's default).
and, only when asked for (--attacks control-link-down), a check of the
measurement itself: the NIC's link down for 15 s (QMP set_link). A request
that began in its first 8 s or so cannot get a SYN through before its 10 s
timeout and fails; later ones get in on a SYN retransmission after the link
comes back.

The legitimate client is open-loop: one request every 1/RATE s, each on a new
connection in a thread of its own (GET of the harness's small file, keep-alive,
the client closes after the response: TIME_WAIT stays on the client side), a
request fails on any error, timeout (TIMEOUT s) or a body other than the one
served before the attack. It runs BEFORE s before the attack, through it and
AFTER s after it; it is bounded by RATE x (BEFORE + attack + AFTER) requests
and RATE x TIMEOUT in flight (plus one request sent the moment the attack
ends, so that the recovery figure does not wait for the schedule).

  success %  requests started during the attack that succeeded
  p50 / p99  latency of the successful ones (ms)
  recovery   from the attack's end to the completion of the first successful
             request that started after both the attack's end and the last
             failed request: from then on every request succeeded. With no
             failure after the attack, it is the latency of the request sent
             at the attack's end: the measurement's floor. None: a request
             still failed at the end of the AFTER window.

Prints a table and writes build/bench/attacks.json. Needs root.
"""
import argparse
import json
import os
import select
import signal
import subprocess
import sys
import threading
import time
import types

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, os.path.join(ROOT, "tests", "matrix"))
sys.path.insert(0, HERE)

import extra  # noqa: E402  (tests/bench: boots a descriptor's guest as run.sh does)
import mxlib  # noqa: E402  (tests/matrix: sockets inside a namespace)
import netns as nsmod  # noqa: E402  (tests/qemu, on the path through mxlib)
from client_attacks import drop_pure_acks, hog, orphan_flood, undo_drop  # noqa: E402

MATRIX = os.path.join(ROOT, "tests", "matrix")
PYTHON = mxlib.PYTHON
SECOND_SOURCE_HOST = 3  # slot-hog: the legitimate client's address, .3 of the tap's /24

# attack parameters (those of the hostile suite, held shorter where it holds for minutes)
SYN_RATE, SYN_SECONDS = 1000, 20
OOSEQ_CONNS, OOSEQ_SEGS, OOSEQ_HOLD = 48, 8, 20
FRAG_TRAINS, FRAG_SECONDS = 3000, 30
HOG_CONNS, HOG_SECONDS = 72, 30
ORPHAN_N, ORPHAN_RATE = 240, 8
HS_ADDRS, HS_SECONDS = [f"10.77.1.{i}" for i in range(2, 34)], 20
ATTACKS = ("syn-flood", "ooseq", "frag-trains", "slot-hog", "orphans", "hs-flood")
LINK_DOWN_S = 15  # control-link-down (not in the default list)


def log(msg):
    print(f"[attacks {time.strftime('%H:%M:%S')}] {msg}", file=sys.stderr, flush=True)


def loadavg():
    with open("/proc/loadavg") as f:
        return [float(x) for x in f.read().split()[:3]]


class Legit:
    """The open-loop legitimate client (see the module's docstring)."""

    def __init__(self, client, path, want, rate, timeout, limit, src=None):
        self.c, self.path, self.want, self.rate, self.timeout = client, path, want, rate, timeout
        self.limit, self.src = limit, src
        self.recs = []  # (start, end, ok, error), monotonic seconds
        self.lock = threading.Lock()
        self.stopping = threading.Event()
        self.threads = []
        self.sched = threading.Thread(target=self._run, daemon=True)

    def start(self):
        self.sched.start()
        return self

    def stop(self):
        self.stopping.set()
        self.sched.join(10)
        for t in self.threads:
            t.join(self.timeout * 3 + 10)
        assert not any(t.is_alive() for t in self.threads), "a legitimate request did not end"
        return sorted(self.recs)

    def now(self):
        """One request at once, besides the schedule (the probe at an attack's end)."""
        t = threading.Thread(target=self._one, daemon=True)
        t.start()
        self.threads.append(t)

    def _run(self):
        t0 = time.monotonic()
        for i in range(self.limit):
            due = t0 + i / self.rate
            if self.stopping.wait(max(0.0, due - time.monotonic())):
                return
            t = threading.Thread(target=self._one, daemon=True)
            t.start()
            self.threads.append(t)

    def _one(self):
        t = time.monotonic()
        ok, err = False, None
        try:
            with self.c.connect(timeout=self.timeout, src=(self.src, 0) if self.src else None) as s:
                s.sendall(f"GET {self.path} HTTP/1.1\r\nHost: x\r\n\r\n".encode())
                (r,), _ = mxlib.read_responses(s, 1)
            ok = r[0] == 200 and r[2] == self.want
            if not ok:
                err = f"status {r[0]}, {len(r[2])} bytes"
        except Exception as e:  # noqa: BLE001
            err = repr(e)
        with self.lock:
            self.recs.append((t, time.monotonic(), ok, err))


def figures(recs, t_start, t_end, after_s):
    """Success rates before/during/after and the recovery time (module docstring)."""
    def part(lo, hi):
        sel = [r for r in recs if lo <= r[0] < hi]
        ok = [r for r in sel if r[2]]
        lat = sorted(r[1] - r[0] for r in ok)
        return {"requests": len(sel), "ok": len(ok),
                "success_pct": round(100.0 * len(ok) / len(sel), 2) if sel else None,
                "latency_p50_s": round(lat[len(lat) // 2], 3) if lat else None,
                "latency_p99_s": round(lat[min(len(lat) - 1, (99 * len(lat)) // 100)], 3) if lat else None,
                "latency_max_s": round(lat[-1], 3) if lat else None,
                "errors": sorted({r[3] for r in sel if not r[2]})[:5]}
    out = {"before": part(float("-inf"), t_start), "during": part(t_start, t_end),
           "after": part(t_end, float("inf"))}
    fails = [r[0] for r in recs if not r[2] and r[0] >= t_start]
    last_fail = max(fails) if fails else None
    good = [r[1] for r in recs if r[2] and r[0] >= t_end and (last_fail is None or r[0] > last_fail)]
    last = max(recs, key=lambda r: r[0]) if recs else None
    if good and last is not None and last[2]:
        out["recovery_s"] = round(min(good) - t_end, 3)
    else:
        out["recovery_s"] = None  # still failing at the end of the AFTER window
    out["last_failure_after_end_s"] = round(last_fail - t_end, 3) if last_fail is not None else None
    out["after_window_s"] = after_s
    return out


# vireo's /metrics counters that show an attack reached its defence (deltas)
EVIDENCE = ("syncookies", "rxmem_copied", "rxmem_ooseq_evict", "rxmem_nomem", "ip_frag", "ip6_frag",
            "orphans_aborted", "connections_evicted", "connections_refused", "timeouts_total", "device_resets",
            "handshakes_rate_limited", "handshake_step", "handshake_passes_full", "handshake_share_waits")


def evidence(m0, m1):
    if not m0 or not m1:
        return None
    return {k: m1[k] - m0.get(k, 0) for k in sorted(m1)
            if any(e in k for e in EVIDENCE) and m1[k] != m0.get(k, 0)}


def wait_start(p, timeout=120):
    """Waits for the attacker's "start" line; returns the moment it came."""
    end = time.monotonic() + timeout
    buf = b""
    while time.monotonic() < end:
        r, _, _ = select.select([p.stdout], [], [], 0.5)
        if r:
            c = os.read(p.stdout.fileno(), 1)
            if not c:
                break
            buf += c
            if buf.endswith(b"start\n"):
                return time.monotonic()
        elif p.poll() is not None:
            break
    raise RuntimeError(f"attacker did not start: {buf.decode(errors='replace')[-500:]}")


def run_script(ctx, script, args, limit, where=MATRIX):
    p = ctx.ns.popen(PYTHON, os.path.join(where, script), *map(str, args), stdout=subprocess.PIPE,
                     stderr=subprocess.PIPE)
    try:
        t0 = wait_start(p)
        out, err = p.communicate(timeout=limit)
    finally:
        if p.poll() is None:
            p.kill()
            p.communicate(timeout=30)
    t1 = time.monotonic()
    if p.returncode:
        raise RuntimeError(f"{script} {args[0]} failed ({p.returncode}): {err.decode()[-1500:]}")
    return t0, t1, {"attacker": out.decode().split("\n")}


def attack_syn(ctx):
    return run_script(ctx, "syn_tools.py", ["flood", ctx.ns.tap, ctx.ip, SYN_RATE, SYN_SECONDS, ctx.mac],
                      SYN_SECONDS * 4)


def attack_ooseq(ctx):
    return run_script(ctx, "rxmem_attack.py",
                      ["ooseq", ctx.ns.tap, ctx.ip, OOSEQ_CONNS, OOSEQ_SEGS, OOSEQ_HOLD, ctx.mac], OOSEQ_HOLD + 300)


def attack_frags(ctx):
    return run_script(ctx, "rxmem_attack.py", ["frags", ctx.ns.tap, ctx.ip, FRAG_TRAINS, FRAG_SECONDS, ctx.mac],
                      FRAG_SECONDS + 300)


def attack_hog(ctx):
    socks, stop = [], threading.Event()
    t0 = time.monotonic()
    t = threading.Thread(target=hog, args=(ctx.client, socks, stop, t0 + HOG_SECONDS + 30, HOG_CONNS), daemon=True)
    t.start()
    peak = 0
    try:
        while time.monotonic() - t0 < HOG_SECONDS:
            time.sleep(0.5)
            peak = max(peak, len(socks))
    finally:
        stop.set()
        t.join(60)
        for s in socks:
            s.close()
    return t0, time.monotonic(), {"hog_conns_peak": peak, "hog_conns_max": HOG_CONNS}


def attack_orphans(ctx):
    stats = {"done": 0, "errors": 0}
    drop_pure_acks(ctx.client)
    try:
        t0 = time.monotonic()
        took = orphan_flood(ctx.client, ORPHAN_N, ORPHAN_RATE, stats)
    finally:
        undo_drop(ctx.client)
    return t0, time.monotonic(), {"flood_conns": stats["done"], "flood_errors": stats["errors"],
                                  "flood_s": round(took, 1)}


def attack_hsflood(ctx):
    for a in HS_ADDRS:
        ctx.ns.run("ip", "addr", "add", f"{a}/32", "dev", ctx.ns.tap, check=True)
    try:
        t0, t1, info = run_script(ctx, "hs_flood.py", [ctx.ip, ",".join(HS_ADDRS), HS_SECONDS], HS_SECONDS + 120,
                                  where=HERE)
    finally:
        for a in HS_ADDRS:
            ctx.ns.run("ip", "addr", "del", f"{a}/32", "dev", ctx.ns.tap, check=False)
    for line in info["attacker"]:
        if line.startswith("hs_flood "):
            f = json.loads(line[len("hs_flood "):])
            info["hs_flood"] = f
            info["attacker"] = [f"{f['attempts']} hellos from {f['addresses']} addresses in {f['seconds']} s: "
                                f"{f['answered']} answered, {f['hrr']} retry requests, {f['refused']} refused, "
                                f"{f['other']} other"]
    if "hs_flood" not in info:
        raise RuntimeError(f"hs_flood.py printed no figures: {info['attacker']}")
    return t0, t1, info


def qmp(path, command, **arguments):
    import socket
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as s:
        s.settimeout(10)
        s.connect(path)
        f = s.makefile("rw")
        f.readline()
        for c, args in (("qmp_capabilities", {}), (command, arguments)):
            f.write(json.dumps({"execute": c, "arguments": args}) + "\n")
            f.flush()
            while True:
                msg = json.loads(f.readline() or "{}")
                if "error" in msg:
                    raise RuntimeError(f"QMP {c}: {msg['error']}")
                if "return" in msg or not msg:
                    break


def control_link_down(ctx):
    """Not an attack: the NIC's link is down for LINK_DOWN_S (QMP set_link on
    the tap's netdev): the check that the figures can show an outage."""
    t0 = time.monotonic()
    qmp(ctx.qmp_path, "set_link", name="n0", up=False)
    time.sleep(LINK_DOWN_S)
    qmp(ctx.qmp_path, "set_link", name="n0", up=True)
    return t0, time.monotonic(), {"link_down_s": LINK_DOWN_S}


RUN = {"syn-flood": attack_syn, "ooseq": attack_ooseq, "frag-trains": attack_frags, "slot-hog": attack_hog,
       "orphans": attack_orphans, "hs-flood": attack_hsflood, "control-link-down": control_link_down}


def one(a, attack, role, desc, rundir):
    """Boots one guest, measures it under one attack, stops it; a record."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("UEFI_")}
    if role == "vireo":
        env.update(UEFI_APP=a.efi, UEFI_NAME="vireo", UEFI_MARKER="vireo: ready", UEFI_DHCP="1",
                   UEFI_MEM=str(a.mem))
    os.environ.clear()
    os.environ.update(env)
    args = types.SimpleNamespace(desc=desc, role="vireo" if role == "vireo" else "peer", rundir=rundir,
                                 cmdline=a.vireo_cmdline if role == "vireo" else "",
                                 mem=a.mem, rep=1, duration=0, boot_timeout=a.boot_timeout)
    b = extra.Boot(args)
    rec = {"attack": attack, "guest": role, "ok": False, "loadavg_start": loadavg(), "rundir": rundir}
    client = legit = None
    try:
        b.setup()
        b.wait_boot(a.boot_timeout)
        g = b.g
        rec.update(name=g["GUEST_NAME"], mem_mib=int(g["GUEST_MEM"]), ip=b.ip, mac=g["GUEST_MAC"],
                   boot_http200_s=b.rec["boot"].get("http200_s"))
        ns = nsmod.Netns.attach(b.ns, "tap0", g["GUEST_HOST_IP"], b.ip)
        client = mxlib.NsClient(ns, b.ip)
        ctx = types.SimpleNamespace(ns=ns, ip=b.ip, mac=g["GUEST_MAC"], client=client, qmp_path=b.qmp_path)
        path = g["GUEST_SMALL_PATH"]
        # the body every legitimate request must get; a few requests warm up TCG
        status, _, want = client.get(path, timeout=30)
        if status != 200:
            raise RuntimeError(f"GET {path}: {status}")
        for _ in range(20):
            client.get(path, timeout=30)
        src = None
        if attack == "slot-hog":
            src = ".".join(g["GUEST_HOST_IP"].split(".")[:3] + [str(SECOND_SOURCE_HOST)])
            client.add_source(src)
        limit = int(a.rate * (a.before + 600 + a.after))
        m0 = b.metrics()  # vireo's counters (None for the peer)
        legit = Legit(client, path, want, a.rate, a.timeout, limit, src=src).start()
        time.sleep(a.before)
        log(f"{role}: {attack} starts (loadavg {loadavg()})")
        t_start, t_end, info = RUN[attack](ctx)
        legit.now()
        log(f"{role}: {attack} over after {t_end - t_start:.1f} s; {a.after} s more of legitimate requests")
        time.sleep(a.after)
        recs, legit = legit.stop(), None
        if b.qemu.poll() is not None:
            raise RuntimeError(f"QEMU exited ({b.qemu.returncode}) during the attack")
        rec.update(figures(recs, t_start, t_end, a.after))
        if m0:
            rec["vireo_counters"] = evidence(m0, b.metrics())
        rec.update(info, attack_s=round(t_end - t_start, 2), loadavg_end=loadavg(), ok=True)
        d = rec["during"]
        log(f"{role}: {attack}: during {d['ok']}/{d['requests']} ({d['success_pct']}%), "
            f"recovery {rec['recovery_s']} s, before {rec['before']['success_pct']}%, "
            f"after {rec['after']['success_pct']}%{'; errors ' + str(d['errors'][:2]) if d['errors'] else ''}")
    except (RuntimeError, OSError, ValueError, KeyError, AssertionError, subprocess.SubprocessError) as e:
        rec["error"] = f"{type(e).__name__}: {e}"
        log(f"FAIL {role} {attack}: {rec['error']}")
    finally:
        if legit is not None:
            try:
                legit.stop()
            except AssertionError:
                pass
        if client is not None:
            client.close_ns()
        b.stop()
    return rec


def cell(r, key):
    if r is None:
        return "-"
    if not r.get("ok"):
        return "failed"
    if key == "success":
        d = r["during"]
        return f"{d['success_pct']:.1f} ({d['ok']}/{d['requests']})"
    return f"{r['recovery_s']:.3f}" if r["recovery_s"] is not None else f">{r['after_window_s']}"


def table(recs, attacks):
    by = {(r["attack"], r["guest"]): r for r in recs}
    rows = [("attack", "vireo success %", "vireo recovery s", "peer success %", "peer recovery s", "loadavg (1 min)")]
    for at in attacks:
        v, p = by.get((at, "vireo")), by.get((at, "peer"))
        la = " / ".join(f"{r['loadavg_start'][0]:.1f}" for r in (v, p) if r)
        rows.append((at, cell(v, "success"), cell(v, "recovery"), cell(p, "success"), cell(p, "recovery"), la))
    return md(rows)


def md(rows):
    w = [max(len(r[i]) for r in rows) for i in range(len(rows[0]))]
    lines = ["| " + " | ".join(c.ljust(w[i]) for i, c in enumerate(r)) + " |" for r in rows]
    lines.insert(1, "|" + "|".join("-" * (x + 2) for x in w) + "|")
    return "\n".join(lines)


def latency_table(recs, attacks):
    """Legitimate latency (ms) before and during each attack, p50 / max."""
    by = {(r["attack"], r["guest"]): r for r in recs}

    def lat(r, phase):
        if not r or not r.get("ok") or r[phase]["latency_p50_s"] is None:
            return "-"
        return f"{1e3 * r[phase]['latency_p50_s']:.0f} / {1e3 * r[phase]['latency_max_s']:.0f}"
    rows = [("attack", "vireo before", "vireo during", "peer before", "peer during")]
    for at in attacks:
        v, p = by.get((at, "vireo")), by.get((at, "peer"))
        rows.append((at, lat(v, "before"), lat(v, "during"), lat(p, "before"), lat(p, "during")))
    return md(rows)


def hs_table(recs):
    """The handshake flood (issue 29): the server's handshakes/s to the
    flood and the legitimate plain-HTTP client, vireo against nginx."""
    by = {r["guest"]: r for r in recs if r["attack"] == "hs-flood" and r.get("ok")}
    v, p = by.get("vireo"), by.get("peer")

    def hs(r):
        f = r["hs_flood"]
        return f["answered"] / f["seconds"] if f["seconds"] else 0.0

    def ms(r, phase, k):
        x = r[phase][f"latency_{k}_s"]
        return None if x is None else 1e3 * x

    rows = [("handshake flood from one /24", "nginx peer", "vireo", "vireo/nginx")]

    def row(name, fn, fmt):
        a, b = (fn(p) if p else None), (fn(v) if v else None)
        ratio = f"{b / a:.2f}x" if a and b is not None else "-"
        rows.append((name, "-" if a is None else fmt.format(a), "-" if b is None else fmt.format(b), ratio))
    row("flood hellos sent/s", lambda r: r["hs_flood"]["attempts"] / r["hs_flood"]["seconds"], "{:.0f}")
    row("handshakes/s answered to the flood", hs, "{:.1f}")
    row("legit plain HTTP success % during", lambda r: r["during"]["success_pct"], "{:.1f}")
    for phase in ("before", "during"):
        for k in ("p50", "p99"):
            row(f"legit latency {k} {phase} (ms)", lambda r, ph=phase, kk=k: ms(r, ph, kk), "{:.1f}")
    return md(rows)


def evidence_lines(recs):
    """What each attacker reports, and vireo's counters: the attack reached its target."""
    out = []
    for r in recs:
        if not r.get("ok"):
            continue
        said = "; ".join(x for x in r.get("attacker", []) if x) or ", ".join(
            f"{k} {r[k]}" for k in ("hog_conns_peak", "flood_conns", "flood_errors", "link_down_s") if k in r)
        cnt = r.get("vireo_counters")
        cnt = ", ".join(f"{k.replace('vireo_', '')} +{v:.0f}" for k, v in cnt.items()) if cnt else ""
        out.append(f"  {r['attack']} / {r['guest']}: {said}" + (f"; counters: {cnt}" if cnt else ""))
    return "\n".join(out)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--harness", default=os.environ.get("BENCH_HARNESS") or os.path.join(ROOT, "..", "shared", "bench"))
    ap.add_argument("--efi", default=os.path.join(ROOT, "build", "vireo.efi"))
    ap.add_argument("--out", default=os.path.join(ROOT, "build", "bench"))
    ap.add_argument("--mem", type=int, default=256, help="-m in MiB of both guests (the nginx peer needs 160 under OVMF)")
    ap.add_argument("--rate", type=float, default=10.0, help="legitimate requests per second")
    ap.add_argument("--timeout", type=float, default=10.0, help="seconds before a legitimate request fails")
    ap.add_argument("--before", type=float, default=5.0)
    ap.add_argument("--after", type=float, default=20.0)
    ap.add_argument("--boot-timeout", type=int, default=180)
    ap.add_argument("--attacks", default=",".join(ATTACKS),
                    help=f"comma-separated, of {', '.join(RUN)} (control-link-down: a measurement check, not default)")
    ap.add_argument("--guests", default="vireo,peer")
    ap.add_argument("--json", help="where the JSON goes (default OUT/attacks.json)")
    ap.add_argument("--vireo-cmdline", default="",
                    help="vireo's command line (e.g. https.handshake_share=0: the handshake gate without its window bound)")
    a = ap.parse_args()

    def on_term(sig, _frame):
        raise SystemExit(128 + sig)  # the running boot's finally stops QEMU and deletes its namespace
    signal.signal(signal.SIGTERM, on_term)
    signal.signal(signal.SIGHUP, on_term)
    attacks = [x for x in a.attacks.split(",") if x]
    guests = [x for x in a.guests.split(",") if x]
    bad = [x for x in attacks if x not in RUN] + [x for x in guests if x not in ("vireo", "peer")]
    if bad:
        ap.error(f"unknown: {bad}")
    if os.geteuid() != 0:
        sys.exit("bench-attacks: needs root (network namespaces, tap devices)")
    harness = os.path.realpath(a.harness)
    out = os.path.realpath(a.out)
    os.makedirs(out, exist_ok=True)
    extra.BENCH_DIR = harness
    os.environ["BENCH_DIR"], os.environ["BENCH_OUT"] = harness, out
    peer_efi = os.path.join(out, "peer-linux-nginx", "linux.efi")
    if "peer" in guests and not os.path.exists(peer_efi):
        log("building the Linux and nginx peers (Debian packages; a few minutes)")
        with open(os.path.join(out, "peer-build.log"), "w") as f:
            for b in ("peer-linux", "peer-linux-nginx"):
                subprocess.run([os.path.join(harness, b, "build.sh")], stdout=f, stderr=subprocess.STDOUT, check=True,
                               timeout=1800)
    stamp = time.strftime("%Y%m%dT%H%M%SZ", time.gmtime())
    base = os.path.join(out, "attacks-" + stamp)
    descs = {"vireo": os.path.join(harness, "guests", "uefi-app.sh"),
             "peer": os.path.join(harness, "guests", "linux-nginx-uefi.sh")}
    t0 = time.time()
    la0 = loadavg()
    recs = []
    for at in attacks:
        for role in guests:
            log(f"boot {role} for {at}")
            recs.append(one(a, at, role, descs[role], os.path.join(base, f"{at}-{role}")))
    elapsed = time.time() - t0
    rev = subprocess.run(["git", "rev-parse", "--short=12", "HEAD"], cwd=ROOT, capture_output=True, text=True).stdout.strip()
    meta = {"date_utc": time.strftime("%Y-%m-%d %H:%M:%S", time.gmtime(t0)), "rev": rev, "mem_mib": a.mem,
            "vireo_cmdline": a.vireo_cmdline, "legit_rate_per_s": a.rate, "legit_timeout_s": a.timeout, "before_s": a.before, "after_s": a.after,
            "loadavg_start": la0, "loadavg_end": loadavg(), "cpus": os.cpu_count(), "elapsed_s": round(elapsed),
            "attacks": {"syn-flood": f"{SYN_RATE}/s spoofed SYNs for {SYN_SECONDS} s",
                        "ooseq": f"{OOSEQ_CONNS} connections x {OOSEQ_SEGS} out-of-order 1-byte segments, "
                                 f"held {OOSEQ_HOLD} s, then reset",
                        "frag-trains": f"{FRAG_TRAINS} IPv4 + {FRAG_TRAINS} IPv6 first fragments over {FRAG_SECONDS} s",
                        "slot-hog": f"{HOG_CONNS} idle connections from one source for {HOG_SECONDS} s",
                        "orphans": f"{ORPHAN_N} clients that never ACK the server's FIN, {ORPHAN_RATE}/s",
                        "hs-flood": f"replayed TLS ClientHellos from {len(HS_ADDRS)} addresses of 10.77.1.0/24 "
                                    f"for {HS_SECONDS} s",
                        "control-link-down": f"not an attack: the NIC's link down for {LINK_DOWN_S} s"}}
    doc = {"meta": meta, "results": recs}
    jpath = a.json or os.path.join(out, "attacks.json")
    with open(jpath, "w") as f:
        json.dump(doc, f, indent=1)
    print(f"bench-attacks {meta['date_utc']} UTC, rev {rev}; both guests -m {a.mem} under TCG on {os.cpu_count()} "
          f"host CPUs; legitimate client {a.rate:g} req/s, {a.timeout:g} s timeout, {a.before:g} s before and "
          f"{a.after:g} s after each attack")
    print(table(recs, attacks))
    print()
    print("legitimate latency, ms: p50 / max of the successful requests")
    print(latency_table(recs, attacks))
    print()
    if "hs-flood" in attacks:
        print(hs_table(recs))
        print()
    print("the attacks as their generators counted them (and vireo's /metrics deltas over the run):")
    print(evidence_lines(recs))
    print(f"host loadavg: {la0} at start, {meta['loadavg_end']} at end (column: 1-min loadavg at each boot, "
          f"vireo / peer)")
    print(f"{len([r for r in recs if r.get('ok')])}/{len(recs)} runs ok; {elapsed / 60:.0f} min; "
          f"JSON in {jpath}, logs in {base}")
    return 0 if all(r.get("ok") for r in recs) else 1


if __name__ == "__main__":
    sys.exit(main())
