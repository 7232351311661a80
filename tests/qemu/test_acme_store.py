"""TLS and ACME state kept on the store across restarts (issue 33;
runtime/acme_state.c, docs/https.md "Kept on the store"): the site image
with the store (make TLS=1 STORAGE=1, linked into build/tls-image/store/
from build/tls-image's objects but two: the Makefile's ACME_KEEP_OBJS), a
data disk (serial vireo-data, as apps/kv's tests give it), and pebble in
the namespace (test_acme.py's set-up, the acme_run fixture's teardown).

test_acme_restart_keeps_certificate, two boots on the same disk, pebble
(Debian 12's 2.4) running throughout:

- the first boot generates its self-signed certificate (kept on the store:
  its not-after date is the boot's own), makes its account key, orders by
  HTTP-01 and serves the issued certificate; once the store says the chain
  is kept, the VM is killed (SIGKILL: no orderly power-off);
- the second boot reads the store before HTTPS listens: the same generated
  certificate (same not-after, from an earlier boot), the same account key,
  and the issued certificate served again: the same serial over TLS, no
  new order in pebble's log,
  `vireo_acme_orders_total` 0, nothing asked of the CA but its
  directory (read for renewal information: the certificate has no
  acme.ari, pebble 2.4's directory names none); then `cert renew` orders with the kept
  account: pebble counts no new account.

About 30 s once the image is built. test_acme_restart_resumes_order_and_ari
(forky's pebble 2.10, four boots, 75-100 s at load 13-17) below: an order cut short twice
(the crash loop backs off),
renewal information kept."""
import base64
import os
import re
import shutil
import signal
import time

import pytest

from test_acme import FORKY_PEBBLE, READY, WINDOW, api_cert, curl_verify, image_with_ca
from test_tls import BUILD, make
from httpc import parse_prometheus
from vm import ROOT

STORE_OUT = os.path.join(BUILD, "store")
NAME = "app.vireo.test"
GEN = r"^tls: EC P-256 key and self-signed certificate (generated at boot in \d+ ms|kept on the store from an " \
      r"earlier boot) \(names ([^;]*); not after (\S+); browsers will warn\)$"

pytestmark = pytest.mark.skipif(not shutil.which("pebble"), reason="pebble missing: tools/deps.sh test")


def store_image(tmp_path, d):
    """The TLS=1 STORAGE=1 site image, pebble's API CA on its ESP."""
    make("STORAGE=1", f"OUT={os.path.relpath(STORE_OUT, ROOT)}")
    return image_with_ca(os.path.join(STORE_OUT, "vireo.img"), tmp_path / "vireo-acme-store.img", d)


def store_setup(acme_run, tmp_path, **pebble_kw):
    """The store's image, a blank 16 MiB data disk, DNS and pebble started:
    (image, pebble, command line, QEMU arguments with the disk)."""
    ns, d = acme_run.ns, acme_run.d
    api_cert(d, ns.host_ip)
    img = store_image(tmp_path, d)
    disk = tmp_path / "data.img"
    with open(disk, "wb") as f:
        f.truncate(16 << 20)
    acme_run.dns_start()
    pebble = acme_run.pebble_start(0, **pebble_kw)
    cmdline = (f"ip={ns.guest_ip}/24 egress.allow={ns.host_ip}/32 acme.directory=https://{ns.host_ip}:14000/dir "
               f"acme.names={NAME} tls.names={NAME}")
    extra = list(ns.qemu_args()) + ["-drive", f"if=none,id=d0,format=raw,file={disk}",
                                    "-device", "virtio-blk-pci,drive=d0,serial=vireo-data"]
    return img, pebble, cmdline, extra


def count(pebble, rx):
    return len(re.findall(rx, pebble.text(), re.M))


ORDER = r"POST /order-plz "	# a newOrder (pebble 2.4's log)
NEW_ACCOUNT = r"There are now \d+ accounts in memory$"	# said for a new account only


def test_acme_restart_keeps_certificate(acme_run, tmp_path):
    ns = acme_run.ns
    img, pebble, cmdline, extra = store_setup(acme_run, tmp_path)

    def serial():
        return ns.run("sh", "-c", f"openssl s_client -connect {ns.guest_ip}:443 -servername {NAME} "
                      "</dev/null 2>/dev/null | openssl x509 -noout -serial").stdout.decode().strip()

    t0 = time.monotonic()
    vm = acme_run.boot(img, cmdline, extra)
    gen1 = vm.wait_for(GEN, timeout=120)
    assert gen1.group(1).startswith("generated"), gen1.group(0)
    vm.wait_for(r"^keep: tls\.gen kept on the store$", timeout=30)
    vm.wait_for(r"^acme: account key made \(P-256, kept on the store\)", timeout=30)
    vm.wait_for(READY, timeout=60)
    vm.wait_for(r"^acme: certificate issued for 1 name by ", timeout=60)
    vm.wait_for(r"^keep: acme\.cert kept on the store$", timeout=10)
    vm.wait_for(r"^keep: acme\.account kept on the store$", timeout=10)
    first = serial()
    assert first.startswith("serial="), first
    root = pebble.root(tmp_path / "root.pem")
    r = curl_verify(ns, root, NAME)
    assert r.returncode == 0 and r.stdout.decode().endswith("\n200"), (r.stdout, r.stderr)
    log1 = pebble.text()
    assert count(pebble, ORDER) == 1 and count(pebble, NEW_ACCOUNT) == 1, log1
    # a crash, not a power-off: what the store acknowledged is there
    os.killpg(vm.proc.pid, signal.SIGKILL)
    vm.proc.wait(timeout=10)
    t1 = time.monotonic()

    vm = acme_run.boot(img, cmdline, extra)
    gen2 = vm.wait_for(GEN, timeout=120)
    assert gen2.group(1).startswith("kept on the store"), gen2.group(0)
    assert gen2.group(2, 3) == gen1.group(2, 3), (gen1.group(0), gen2.group(0))
    vm.wait_for(r"^acme: account key kept on the store \(P-256\)", timeout=30)
    vm.wait_for(r"^acme: certificate for 1 name kept on the store \(not after \d+\); serving it, no new "
                r"order$", timeout=30)
    vm.wait_for(READY, timeout=60)
    assert serial() == first
    r = curl_verify(ns, root, NAME, "/metrics")
    assert r.returncode == 0, r.stderr
    m = parse_prometheus(r.stdout.decode().rpartition("\n")[0])
    assert m['vireo_acme_state{state="valid"}'] == 1
    assert m["vireo_acme_orders_total"] == 0
    assert any(k.startswith('vireo_tls_cert_info{source="acme"') for k in m), sorted(m)
    vm.wait_for(r"^acme: the directory names no renewal information \(\S+\.\S+\): renewal by the lifetime only$",
                timeout=30)
    time.sleep(2)	# an order would have started 0.5 s after HTTPS
    # the CA was asked only its directory: the certificate has no acme.ari
    # (pebble 2.4 has no renewal information), so the directory is read
    # for a renewalInfo URL (none) with no order
    new = pebble.text()[len(log1):]
    assert re.findall(r"(\S+ /\S*) -> calling handler", new) == ["GET /dir"], new
    assert "ordering a certificate" not in vm.text
    assert "refused" not in vm.text, vm.text
    # an order now uses the kept account: newAccount answers the
    # existing one (no new account in pebble's memory)
    t2 = time.monotonic()
    mark = len(vm.text)
    vm.send("cert renew\r")
    vm.wait_for(r"^acme: certificate issued for 1 name by ", timeout=60, start=mark)
    assert count(pebble, ORDER) == 2 and count(pebble, NEW_ACCOUNT) == 1, pebble.text()[len(log1):]
    assert serial() != first
    t3 = time.monotonic()
    print("\n".join(line for line in vm.text.splitlines() if "kept on the store" in line or "renewal in" in line))
    print(f"acme store: first boot to issued and kept {t1 - t0:.1f} s, second boot to the same certificate "
          f"{t2 - t1:.1f} s, an order on the kept account {t3 - t2:.1f} s")
FORKY_ORDER = r"POST /order-plz"	# a newOrder (pebble 2.10's log too)
ARI_GET = r"GET /\S*renewalInfo/"	# a renewalInfo request
ARI_KEPT = (r"^acme: renewal information for (\S+) kept on the store: window (-?\d+)\.\.(-?\d+) s from now "
            r"\(0\.\.0: none\), renewal in (-?\d+) s, next poll in (\d+) s$")


def ari_id(ns, name):
    """RFC 9773's identifier of the certificate the appliance serves,
    computed here from openssl's text of its AKI and serial."""
    out = ns.run("sh", "-c", f"openssl s_client -connect {ns.guest_ip}:443 -servername {name} </dev/null "
                 "2>/dev/null | openssl x509 -noout -serial -ext authorityKeyIdentifier").stdout.decode()
    serial = re.search(r"serial=([0-9A-F]+)", out).group(1)
    aki = re.search(r"([0-9A-F]{2}(?::[0-9A-F]{2})+)", out.split("\n", 1)[1]).group(1).replace(":", "")
    sb = bytes.fromhex(serial if len(serial) % 2 == 0 else "0" + serial)
    if sb[0] & 0x80:
        sb = b"\0" + sb	# the DER INTEGER's content
    b64 = lambda v: base64.urlsafe_b64encode(v).rstrip(b"=").decode()	# noqa: E731
    return b64(bytes.fromhex(aki)) + "." + b64(sb)


@pytest.mark.skipif(not os.path.exists(FORKY_PEBBLE), reason="forky's pebble missing: tools/fetch-pebble.sh")
def test_acme_restart_resumes_order_and_ari(acme_run, tmp_path):
    """Debian forky's pebble 2.10 (renewal information), four boots on
    one disk, pebble running throughout:

    - the first is killed (SIGKILL) once the store says the order pebble
      created is kept and pebble's VA has its authorization valid, before
      the appliance's next poll: between newOrder and finalize (the
      order ready);
    - the second starts taking that order up and is killed as soon as
      pebble hears from it: two attempts cut short in a row;
    - the third backs off (a crash loop never asks the CA at each
      reboot): it says so, with the wait the cut attempt kept (60-120 s
      from its start), and pebble hears nothing from it for 3 s after
      HTTPS is up (a take-up at once asks it at 0.5 s); `cert renew` then
      takes the order up (POST-as-GET: pebble's log holds one newOrder for
      the three boots), finishes it and serves the certificate, then asks
      pebble's renewalInfo (the window and the next poll kept on the
      store), and is killed;
    - the fourth serves the kept certificate with no order and polls on
      from where the third left: the kept window, the next poll about
      6 h (pebble's Retry-After) away, not at once; its identifier,
      computed from the stored certificate, is the one computed here
      from the served one; `cert ari` asks pebble (a second renewalInfo
      request in its log) with no new order; then pebble is replaced by a
      new one (a new CA that knows no certificate: its renewalInfo
      answers 4xx) and `cert ari` finds the kept URL stale: the
      directory is read again at once, the URL it names polled and
      failing again: the backoff (60-240 s), not the URL polled again."""
    ns = acme_run.ns
    img, pebble, cmdline, extra = store_setup(acme_run, tmp_path, binary=FORKY_PEBBLE)

    def crash(vm):
        os.killpg(vm.proc.pid, signal.SIGKILL)
        vm.proc.wait(timeout=10)

    t0 = time.monotonic()
    vm = acme_run.boot(img, cmdline, extra)
    vm.wait_for(r"^keep: acme\.order kept on the store$", timeout=120)
    # killed once pebble's VA has the authorization valid, before the
    # appliance's next poll (1 s after its answer) finds it so: the
    # order is ready, not finalized
    deadline = time.monotonic() + 30
    while not re.search(r"authz \S+ set VALID", pebble.text()) and time.monotonic() < deadline:
        time.sleep(0.02)
    crash(vm)
    log1 = pebble.text()
    assert re.search(r"authz \S+ set VALID", log1), log1
    assert count(pebble, FORKY_ORDER) == 1, log1
    assert "finalize" not in log1.lower(), log1	# cut between newOrder and finalize
    assert "order cut short" not in vm.text
    assert "certificate issued" not in vm.text

    t1 = time.monotonic()
    vm = acme_run.boot(img, cmdline, extra)
    vm.wait_for(r"^acme: an order cut short by a restart is kept on the store: taking it up \(no new order\)$",
                timeout=120)
    vm.wait_for(r"^acme: taking up the kept order for " + re.escape(NAME), timeout=30)
    # the take-up cut short too, once the CA heard from it (acme.state,
    # written before, says 2 attempts in a row)
    deadline = time.monotonic() + 30
    while pebble.text() == log1 and time.monotonic() < deadline:
        time.sleep(0.02)
    time.sleep(0.3)
    crash(vm)
    log1b = pebble.text()
    assert log1b != log1, "the take-up asked nothing of the CA"
    assert count(pebble, FORKY_ORDER) == 1, log1b[len(log1):]

    t1b = time.monotonic()
    vm = acme_run.boot(img, cmdline, extra)
    vm.wait_for(r"^acme: an order cut short by a restart is kept on the store: taking it up \(no new order\)$",
                timeout=120)
    b = vm.wait_for(r"^acme: an earlier boot's attempt failed or was cut short \(2 in a row\): next attempt in "
                    r"(\d+) s \(the kept order taken up then\)$", timeout=10)
    assert int(b.group(1)) >= 10, b.group(0)	# 60-120 s after the cut attempt's start, less the boot
    vm.wait_for(READY, timeout=60)
    time.sleep(3)	# a take-up at once would have asked the CA 0.5 s after HTTPS
    assert pebble.text() == log1b, pebble.text()[len(log1b):]	# the crash loop backs off
    assert "taking up the kept order" not in vm.text
    mark = len(vm.text)
    vm.send("cert renew\r")	# the operator: now (the kept order still)
    vm.wait_for(r"^acme: taking up the kept order for " + re.escape(NAME), timeout=30, start=mark)
    iss = vm.wait_for(r"^acme: certificate issued for 1 name by ", timeout=60)
    w = vm.wait_for(WINDOW, timeout=30, start=iss.end())
    vm.wait_for(r"^keep: acme\.order kept on the store$", timeout=10, start=iss.end())	# emptied
    assert count(pebble, FORKY_ORDER) == 1, pebble.text()[len(log1):]	# the same order, taken up
    assert "refused" not in vm.text, vm.text
    ident = ari_id(ns, NAME)
    assert count(pebble, ARI_GET) == 1, pebble.text()[-3000:]	# its renewalInfo asked
    time.sleep(1.5)	# acme.ari's put (not said on the console)
    crash(vm)
    log2 = pebble.text()

    t2 = time.monotonic()
    vm = acme_run.boot(img, cmdline, extra)
    vm.wait_for(r"^acme: certificate for 1 name kept on the store \(not after \d+\); serving it, no new "
                r"order$", timeout=120)
    k = vm.wait_for(ARI_KEPT, timeout=10)
    assert k.group(1) == ident, (k.group(0), ident)
    a, b = int(w.group(1)), int(w.group(2))
    assert abs(int(k.group(2)) - a) < 120 and abs(int(k.group(3)) - b) < 120, (w.group(0), k.group(0))
    assert 6 * 3600 - 300 < int(k.group(5)) <= 6 * 3600, k.group(0)	# pebble's Retry-After, kept
    vm.wait_for(READY, timeout=60)
    time.sleep(2)	# an order or a poll would have started by now
    assert pebble.text() == log2, pebble.text()[len(log2):]
    mark = len(vm.text)
    vm.send("cert ari\r")
    vm.wait_for(WINDOW, timeout=30, start=mark)
    assert count(pebble, ARI_GET) == 2, pebble.text()[len(log2):]	# (pebble logs the path, not the id)
    assert count(pebble, FORKY_ORDER) == 1
    root = pebble.root(tmp_path / "root.pem")
    r = curl_verify(ns, root, NAME, "/metrics")
    assert r.returncode == 0, r.stderr
    m = parse_prometheus(r.stdout.decode().rpartition("\n")[0])
    assert m["vireo_acme_orders_total"] == 0 and m['vireo_acme_state{state="valid"}'] == 1
    assert m['vireo_acme_ari_polls_total{result="ok"}'] == 1
    # a renewalInfo URL gone stale: a new pebble (a new CA: it knows no
    # certificate, renewalInfo answers 404) and `cert ari`: the kept URL
    # is dropped and the directory read at once, the URL it names polled,
    # failing again: then the backoff (never the stale URL polled forever)
    t3 = time.monotonic()
    pebble = acme_run.pebble_start(0, binary=FORKY_PEBBLE)
    mark = len(vm.text)
    stale = r"^acme: renewal information failed \(not a window, HTTP 4\d\d\); the directory read again for its URL in " \
            r"(\d+) s$"
    for _ in range(3):	# (the first may meet the old pebble's closed connection: no answer)
        vm.send("cert ari\r")
        vm.wait_for(r"^acme: renewal information failed ", timeout=30, start=mark)
        if re.search(stale, vm.text[mark:], re.M):
            break
        mark = len(vm.text)
    s1 = vm.wait_for(stale, timeout=5, start=mark)
    assert s1.group(1) == "0", s1.group(0)
    vm.wait_for(r"^acme: the directory names renewal information: asking it for " + re.escape(ident) + "$",
                timeout=30, start=s1.end())
    s2 = vm.wait_for(stale, timeout=30, start=s1.end())
    assert 30 <= int(s2.group(1)) <= 240, s2.group(0)	# 2 or 3 failures in a row: 60-120 or 120-240 s
    log3 = pebble.text()
    assert count(pebble, ARI_GET) == 2 and count(pebble, r"GET /dir ") == 1, log3
    print("\n".join(line for line in vm.text.splitlines() if "kept on the store" in line or "in a row" in line or
                    "renewal information" in line))
    print(f"acme store (pebble 2.10): boot to order kept and killed {t1 - t0:.1f} s, its take-up killed "
          f"{t1b - t1:.1f} s, the backed-off boot's take-up to issued and ARI {t2 - t1b:.1f} s, the fourth boot "
          f"with ARI kept {t3 - t2:.1f} s, a stale renewalInfo URL re-read {time.monotonic() - t3:.1f} s")