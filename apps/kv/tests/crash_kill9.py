#!/usr/bin/env python3
"""`make test-crash`: apps/kv killed with SIGKILL under load, N times over
one data disk (issue 31's separate kill -9 target; docs/storage.md "Tests").

Each trial boots apps/kv's PVH ELF (QEMU -kernel: no firmware, about 0.7 s
to serving under TCG) with the same data disk, reads every key back and
checks it against a model of what the clients were told, then runs
--clients HTTP clients (threads, one keep-alive connection each) doing
PUTs and DELETEs, and kills QEMU with SIGKILL after a random time
(--kill-min..--kill-max seconds of load). The next trial's boot is the
recovery under test.

The model. Each client owns its own keys (--keys per client), so the
operations on one key are sequential and the model is exact: per key, the
state the last acknowledged (2xx) operation left (absent, or write number
n), at most one operation in flight at the kill, and the operations answered
with an error (none expected; counted) whose effect is unknown. After the
reboot a key must hold the acknowledged state, or the in-flight or
unknown operation's: anything else is a lost acknowledged write. A value
encodes its key and write number in a header and is otherwise bytes
derived from both (length 1..4000), so a torn value, or one mixing two
writes, never equals the value its header names. Write numbers go on from
trial to trial, never reused.

The recovery line the guest prints ("store: opened ...: K keys, R records
in B batches ...", "store: recovery dropped the torn batch ...") is checked
(never read-only, K = the keys found + kv's ETag secret) and tallied, and
so are the compactions each boot ran under the load (/metrics, just before
the kill).

  crash_kill9.py --elf build/apps/kv/vireo.elf [--trials 200] [--clients 4]
                 [--keys 16] [--seed 31] [--mem 64] [--disk-mib 16]

Prints one line per trial and a tally; exits 1 at the first violation
(with the console of the boot that showed it). Every loop is bounded:
--trials boots, each client stops at the kill or after 20,000 operations.
"""
import argparse
import http.client
import os
import random
import re
import signal
import sys
import tempfile
import threading
import time

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))
sys.path.insert(0, os.path.join(ROOT, "tests", "qemu"))
from httpc import free_tcp_port  # noqa: E402
from vm import Vm  # noqa: E402

OPS_MAX = 20000	# per client per trial: the bound of each load loop
ABSENT = None


def value(key, n):
    """Write n of key: a header naming both, then 1..4000 bytes derived
    from both (a torn or mixed value never equals what its header names)."""
    r = random.Random(f"{key}/{n}")
    head = f"{key} n={n} ".encode()
    return head + r.randbytes(r.randrange(1, 4000))


def parse(key, body):
    """The write number a value read back says it is, or raises."""
    m = re.match(rb"(\S+) n=(\d+) ", body)
    if not m or m.group(1).decode() != key:
        raise ValueError(f"{key}: a value with no header of its key ({len(body)} bytes: {body[:40]!r})")
    n = int(m.group(2))
    if body != value(key, n):
        raise ValueError(f"{key}: torn or mixed value: header says write {n}, {len(body)} bytes, "
                         f"write {n} is {len(value(key, n))} bytes")
    return n


def show(state):
    return "absent" if state is ABSENT else f"write {state}"


class Model:
    def __init__(self, clients, keys):
        self.keys = {c: [f"c{c}k{k}" for k in range(keys)] for c in range(clients)}
        every = [k for ks in self.keys.values() for k in ks]
        self.acked = {k: ABSENT for k in every}	# state the last acknowledged op left
        self.inflight = {k: [] for k in every}	# states of ops sent, not yet answered
        self.unknown = {k: [] for k in every}	# answered with an error: effect unknown
        self.next = {k: 0 for k in every}	# the next write number (never reused)
        self.lock = threading.Lock()

    def allowed(self, k):
        return {self.acked[k], *self.inflight[k], *self.unknown[k]}


def client(model, cid, port, stop, rng, tally):
    """One client: PUTs (3 in 4) and DELETEs of its own keys, one at a
    time over one keep-alive connection, until the kill."""
    conn = None
    for _ in range(OPS_MAX):
        if stop.is_set():
            break
        key = rng.choice(model.keys[cid])
        with model.lock:
            if model.acked[key] is not ABSENT and rng.random() < 0.25:
                method, state, body = "DELETE", ABSENT, None
            else:
                n = model.next[key]
                model.next[key] = n + 1
                method, state, body = "PUT", n, value(key, n)
            model.inflight[key] = [state]
        try:
            if conn is None:
                conn = http.client.HTTPConnection("127.0.0.1", port, timeout=15)
            conn.request(method, f"/kv/{key}", body=body)
            r = conn.getresponse()
            r.read()
            status = r.status
        except (OSError, http.client.HTTPException):
            break	# the kill (the op stays in flight) or a dead connection
        with model.lock:
            model.inflight[key] = []
            if 200 <= status < 300 or (method == "DELETE" and status == 404):
                model.acked[key] = state
                model.unknown[key] = []
                tally["acked"] += 1
                tally[method.lower() + "s"] += 1
            else:
                model.unknown[key].append(state)
                tally["errors"] += 1
                tally.setdefault("statuses", {}).setdefault(status, 0)
                tally["statuses"][status] += 1
    if conn is not None:
        conn.close()


def boot(elf, disk, port, mem):
    return Vm(kernel=elf, mem=mem, extra=[
        "-netdev", f"user,id=n0,restrict=on,hostfwd=tcp:127.0.0.1:{port}-:80",
        "-device", "virtio-net-pci,netdev=n0,id=nic0,romfile=",
        "-drive", f"if=none,id=d0,format=raw,file={disk}",
        "-device", "virtio-blk-pci,drive=d0,serial=vireo-data"])


def store_metric(port, name):
    """One counter of /metrics (0 if it does not answer within 5 s)."""
    try:
        conn = http.client.HTTPConnection("127.0.0.1", port, timeout=5)
        conn.request("GET", "/metrics")
        text = conn.getresponse().read().decode()
        conn.close()
    except (OSError, http.client.HTTPException):
        return 0
    m = re.search(rf"^{name} (\d+)$", text, re.M)
    return int(m.group(1)) if m else 0


def fail(msg, vm_text):
    print(f"FAIL: {msg}\n---- console ----\n{vm_text[-8000:]}", flush=True)
    sys.exit(1)


def check(model, port, trial, text):
    """Reads every key back over one connection; checks it against the
    model and moves the model to what was found. Returns (present, in-flight
    ops found applied, in-flight ops found not applied)."""
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
    present = applied = dropped = 0
    for key in model.acked:
        conn.request("GET", f"/kv/{key}")
        r = conn.getresponse()
        body = r.read()
        if r.status == 404:
            got = ABSENT
        elif r.status == 200:
            try:
                got = parse(key, body)
            except ValueError as e:
                fail(f"trial {trial}: {e}", text)
            present += 1
        else:
            fail(f"trial {trial}: GET /kv/{key} answered {r.status}", text)
        allowed = model.allowed(key)
        if got not in allowed:
            fail(f"trial {trial}: {key} is {show(got)}; acknowledged {show(model.acked[key])}, in flight "
                 f"{[show(s) for s in model.inflight[key]]}, unknown {[show(s) for s in model.unknown[key]]}",
                 text)
        for s in model.inflight[key]:
            if s != model.acked[key]:
                if got == s:
                    applied += 1
                else:
                    dropped += 1
        model.acked[key] = got
        model.inflight[key] = []
        model.unknown[key] = []
    conn.close()
    return present, applied, dropped


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--elf", default=os.path.join(ROOT, "build", "apps", "kv", "vireo.elf"))
    ap.add_argument("--trials", type=int, default=200)
    ap.add_argument("--clients", type=int, default=4)
    ap.add_argument("--keys", type=int, default=16, help="keys per client")
    ap.add_argument("--seed", default="31")
    ap.add_argument("--mem", type=int, default=64)
    ap.add_argument("--disk-mib", type=int, default=16)
    ap.add_argument("--kill-min", type=float, default=0.2)
    ap.add_argument("--kill-max", type=float, default=2.5)
    a = ap.parse_args()
    if not os.path.exists(a.elf):
        raise SystemExit(f"{a.elf} missing: make APP=apps/kv elf")
    rng = random.Random(a.seed)
    model = Model(a.clients, a.keys)
    tmp = tempfile.mkdtemp(prefix="vireo-crash-")
    disk = os.path.join(tmp, "data.img")
    with open(disk, "wb") as f:
        f.truncate(a.disk_mib << 20)
    totals = {"acked": 0, "puts": 0, "deletes": 0, "errors": 0, "applied": 0, "dropped": 0, "torn": 0,
              "torn_records": 0, "torn_bytes": 0, "sb_notes": 0, "compactions": 0}
    boot_s = []
    t_all = time.monotonic()
    print(f"crash: {a.trials} trials, {a.clients} clients x {a.keys} keys, PUT 3:1 DELETE, values 1..4000 B + "
          f"header, kill after {a.kill_min}..{a.kill_max} s of load, {a.disk_mib} MiB disk {disk}, seed {a.seed}",
          flush=True)
    try:
        for trial in range(a.trials + 1):	# the last boot only checks
            port = free_tcp_port()
            t0 = time.monotonic()
            vm = boot(a.elf, disk, port, a.mem)
            try:
                m = vm.wait_for(r"^kv: (\d+) keys loaded from the data disk \((\d+) skipped\)", timeout=120)
                vm.wait_for(r"^vireo: ready ip=", timeout=60)
                boot_s.append(time.monotonic() - t0)
                text = vm.text
                op = re.search(r"^store: (opened|formatted) virtio\d+ \(serial vireo-data\): (\d+) keys, (\d+) records "
                               r"in (\d+) batches over (\d+) segments \((\d+) KiB\); \d+ KiB read in \d+ ms \(\d+ ms checking and replaying\)(.*)$", text, re.M)
                if not op or op.group(7):
                    fail(f"trial {trial}: the store did not open writable", text)
                if (op.group(1) == "formatted") != (trial == 0):
                    fail(f"trial {trial}: {op.group(1)}", text)
                torn = re.search(r"^store: recovery dropped the torn batch (\d+) \((\d+) records, (\d+) bytes\)",
                                 text, re.M)
                if torn:
                    totals["torn"] += 1
                    totals["torn_records"] += int(torn.group(2))
                    totals["torn_bytes"] += int(torn.group(3))
                if re.search(r"^store: superblock: ", text, re.M):
                    totals["sb_notes"] += 1
                if int(m.group(2)):
                    fail(f"trial {trial}: kv skipped keys", text)
                present, applied, dropped = check(model, port, trial, text)
                totals["applied"] += applied
                totals["dropped"] += dropped
                # kv's count is the keys found; the store's adds kv's ETag secret.
                if int(m.group(1)) != present or (trial and int(op.group(2)) != present + 1):
                    fail(f"trial {trial}: kv loaded {m.group(1)} keys, the store {op.group(2)}; "
                         f"{present} found", text)
                if trial == a.trials:
                    break
                tally = {"acked": 0, "puts": 0, "deletes": 0, "errors": 0}
                stop = threading.Event()
                threads = [threading.Thread(target=client, args=(model, c, port, stop,
                                                                   random.Random(f"{a.seed}/{trial}/{c}"), tally))
                           for c in range(a.clients)]
                for t in threads:
                    t.start()
                time.sleep(rng.uniform(a.kill_min, a.kill_max))
                comp = store_metric(port, "vireo_store_compactions_total")	# this boot's, under the load
                totals["compactions"] += comp
                os.killpg(vm.proc.pid, signal.SIGKILL)
                vm.proc.wait(timeout=10)
                stop.set()
                for t in threads:
                    t.join(timeout=30)
                if any(t.is_alive() for t in threads):
                    fail(f"trial {trial}: a client did not stop", vm.text)
                inflight = sum(1 for k in model.inflight if model.inflight[k])
                for k in ("acked", "puts", "deletes", "errors"):
                    totals[k] += tally[k]
                rec = f"{op.group(2)} keys, {op.group(3)} records in {op.group(4)} batches, {op.group(6)} KiB"
                print(f"trial {trial:3}: boot {boot_s[-1]:.2f} s, {rec}{', TORN ' + torn.group(0) if torn else ''}; "
                      f"{present} keys checked ({applied} in-flight applied, {dropped} not); then {tally['acked']} "
                      f"acked ({tally['puts']} PUT, {tally['deletes']} DELETE, {tally['errors']} errors), "
                      f"{inflight} in flight at the kill, {comp} compactions", flush=True)
            finally:
                vm.stop()
    finally:
        os.unlink(disk)
        os.rmdir(tmp)
    took = time.monotonic() - t_all
    print(f"crash: PASS {a.trials} kills, {a.trials + 1} boots in {took:.0f} s ({took / a.trials:.1f} s a trial; "
          f"boot to serving with the store open: mean {sum(boot_s) / len(boot_s):.2f} s, max {max(boot_s):.2f} s, "
          f"{sum(boot_s):.0f} s in all)")
    print(f"crash: {totals['acked']} operations acknowledged ({totals['puts']} PUT, {totals['deletes']} DELETE), "
          f"{totals['errors']} answered with an error; every acknowledged one found after its kill; of the "
          f"operations in flight at a kill, {totals['applied']} were found applied and {totals['dropped']} not; "
          f"{totals['compactions']} compactions ran under the load")
    print(f"crash: recovery dropped a torn batch in {totals['torn']} of {a.trials} reboots ({totals['torn_records']} "
          f"records, {totals['torn_bytes']} bytes, none acknowledged); superblock notes in {totals['sb_notes']}")


if __name__ == "__main__":
    main()
