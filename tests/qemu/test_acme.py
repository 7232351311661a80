"""ACME (RFC 8555, issue 33) end to end against pebble (Debian 12's
package, 2.4: /usr/bin/pebble and pebble-challtestsrv; tools/deps.sh
installs it for make test-qemu), in a namespace of the test's own on the
appliance's tap. Two boots of a make TLS=1 image (build/tls-image, as
tests/qemu/test_tls.py builds it), HTTP-01 then TLS-ALPN-01; the first:

- pebble-challtestsrv is pebble's DNS (-dnsserver), answering every name
  with the appliance's address; pebble's VA then fetches HTTP-01 from the
  appliance's port 80 (httpPort 80), which http.redirect=on sends
  everywhere else to HTTPS;
- pebble's API certificate is made here with openssl (a test CA and a leaf
  with the namespace address as its IP SAN: the appliance's directory URL
  is an address literal, which mbedTLS verifies against IP SANs); that CA
  is the appliance's ESP CA bundle (EFI/vireo/tls/ca.pem);
- the appliance orders for two names, answers both authorizations, and
  serves the chain; curl verifying against pebble's issuing root
  (management API /roots/0) with the appliance's name succeeds, and `cert`
  and /metrics say source acme;
- then pebble restarts with PEBBLE_WFE_NONCEREJECT=30 (30 % of nonces
  refused with badNonce), a new CA and 24-second certificates
  (certificateValidityPeriod), `cert renew` orders again, and the new
  certificate verifies against the new root: the nonce rejections were
  survived (and counted);
- then the appliance renews by itself, half the lifetime before the end
  (about 12 s later), while a client requests over HTTPS without pause
  (curl, verifying against the new root and the certificate's dates):
  no request fails, the served serial changes, no command was sent.

The second boot has acme.challenge=tls-alpn-01, one name, the CA named
by host name (ca.vireo.test: dns= is challtestsrv, which has an A record
for it; pebble's API certificate has it as a DNS SAN), and no CA at
first: the first order fails and backs off while the generated
certificate serves; with pebble up, `cert renew` orders, pebble's VA checks
the acmeIdentifier certificate on port 443, and the issued certificate
then verifies. PEBBLE_VA_NOSLEEP=1 throughout (no random waits
before validation). About 55 s for both once the image is built.

A third boot, test_acme_eab_ari_pebble, runs Debian forky's pebble 2.10
(tools/fetch-pebble.sh): External Account Binding against a pebble that
requires it, a 6-day certificate by profile (acme.profile=shortlived),
then RFC 9773 renewal information: pebble's window, a window the CA moves
honoured with "replaces", a failed poll backing off (about 30 s)."""
import calendar
import json
import os
import re
import shutil
import subprocess
import time

import pytest

from httpc import parse_prometheus
from test_tls import BUILD, ESP, make
from vm import Vm

NAMES = ("app.vireo.test", "www.vireo.test")
READY = r"^vireo: ready ip=(\S+) http=(\d+) https=(\d+)$"
ISSUED = r"^acme: certificate issued for 2 names by (\S+); serving it$"
CA_NAME = "ca.vireo.test"	# the second boot's directory: resolved through challtestsrv
SHORT = 24	# seconds: the second CA's certificates (pebble's certificateValidityPeriod)

pytestmark = pytest.mark.skipif(not shutil.which("pebble"), reason="pebble missing: tools/deps.sh test")


def openssl(*args, cwd):
    subprocess.run(["openssl", *args], check=True, capture_output=True, cwd=cwd)


def api_cert(d, ip):
    """A test CA and pebble's API certificate (IP SAN ip) in d."""
    openssl("req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256", "-nodes", "-keyout",
            "ca.key", "-out", "ca.pem", "-days", "2", "-subj", "/CN=vireo pebble API test CA", "-addext",
            "basicConstraints=critical,CA:TRUE", "-addext", "keyUsage=critical,keyCertSign", cwd=d)
    openssl("req", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256", "-nodes", "-keyout", "api.key",
            "-out", "api.csr", "-subj", "/CN=pebble", cwd=d)
    with open(f"{d}/api.ext", "w") as f:
        f.write(f"subjectAltName=IP:{ip},DNS:{CA_NAME}\nbasicConstraints=critical,CA:FALSE\nextendedKeyUsage=serverAuth\n")
    openssl("x509", "-req", "-in", "api.csr", "-CA", "ca.pem", "-CAkey", "ca.key", "-CAcreateserial", "-out",
            "api.pem", "-days", "2", "-extfile", "api.ext", cwd=d)


class Pebble:
    """pebble in the namespace, on host_ip: API 14000, management 15000."""

    def __init__(self, ns, d, nonce_reject, validity=0, eab=None, binary="pebble", profiles=""):
        cfg = f"{d}/pebble.json"
        with open(cfg, "w") as f:	# eab: {kid: base64url MAC key}, and then required
            f.write('{"pebble": {"listenAddress": "%s:14000", "managementListenAddress": "%s:15000", '
                    '"certificate": "%s/api.pem", "privateKey": "%s/api.key", "httpPort": 80, "tlsPort": 443, '
                    '"ocspResponderURL": "", "externalAccountBindingRequired": %s%s%s}}'
                    % (ns.host_ip, ns.host_ip, d, d, "true" if eab else "false",
                       ', "externalAccountMACKeys": {%s}' % ", ".join(f'"{k}": "{v}"' for k, v in eab.items())
                       if eab else "",
                       (', "certificateValidityPeriod": %d' % validity if validity else "") + profiles))
        env = dict(os.environ, PEBBLE_VA_NOSLEEP="1", PEBBLE_WFE_NONCEREJECT=str(nonce_reject))
        self.ns, self.log = ns, open(f"{d}/pebble-{nonce_reject}.log", "w+")
        self.p = ns.popen(binary, "-config", cfg, "-dnsserver", f"{ns.host_ip}:53", env=env,
                          stdout=self.log, stderr=subprocess.STDOUT)
        for _ in range(100):	# listening within 10 s
            if ns.run("curl", "-sk", "-o", "/dev/null", f"https://{ns.host_ip}:15000/roots/0").returncode == 0:
                return
            time.sleep(0.1)
        raise AssertionError("pebble did not start: " + self.text())

    def root(self, path):
        r = self.ns.run("curl", "-sSk", f"https://{self.ns.host_ip}:15000/roots/0", check=True)
        path.write_bytes(r.stdout)
        return path

    def text(self):
        self.log.flush()
        self.log.seek(0)
        return self.log.read()

    def stop(self):
        self.p.kill()
        self.p.wait(timeout=10)


def image_with_ca(src, img, d):
    """A copy of the image src at img with d's ca.pem (pebble's API CA) as
    the ESP's CA bundle; returns img."""
    shutil.copyfile(src, img)
    env = dict(os.environ, MTOOLS_SKIP_CHECK="1")
    for sub in ("::/EFI/vireo", "::/EFI/vireo/tls"):
        subprocess.run(["mmd", "-i", f"{img}{ESP}", sub], env=env, capture_output=True)  # may exist
    subprocess.run(["mcopy", "-o", "-i", f"{img}{ESP}", f"{d}/ca.pem", "::/EFI/vireo/tls/ca.pem"], check=True,
                   env=env)
    return img


class AcmeRun:
    """What an ACME test starts in its namespace: pebble-challtestsrv,
    pebble and the appliance's VM (one pebble and one VM at a time: starting
    one stops the last). The acme_run fixture (conftest.py) stops them all
    after the test, whatever it did: test_acme.py's and test_acme_store.py's
    one teardown."""

    def __init__(self, ns, tmp_path):
        self.ns, self.tmp, self.d = ns, tmp_path, str(tmp_path)
        self.vm = self.pebble = self.dns = None

    def dns_start(self):
        self.dns = challtestsrv(self.ns)

    def pebble_start(self, *args, **kw):
        """Pebble(ns, d, *args, **kw), the last one stopped first."""
        self.pebble_stop()
        self.pebble = Pebble(self.ns, self.d, *args, **kw)
        return self.pebble

    def pebble_stop(self):
        if self.pebble:
            self.pebble.stop()
        self.pebble = None

    def boot(self, img, cmdline, extra=None):
        """The appliance on img (extra: QEMU's arguments, the namespace's
        tap's by default), the last VM stopped first."""
        if self.vm:
            self.vm.stop()
        self.vm = Vm(image=str(img), cmdline=cmdline, wrap=self.ns.wrap,
                     extra=self.ns.qemu_args() if extra is None else extra)
        return self.vm

    def close(self):
        if self.vm:
            self.vm.stop()
        self.pebble_stop()
        if self.dns:
            self.dns.kill()
            self.dns.wait(timeout=10)


def prepare(run):
    """The TLS=1 image with the API CA on its ESP (its path), and
    challtestsrv running."""
    make()
    api_cert(run.d, run.ns.host_ip)
    img = image_with_ca(os.path.join(BUILD, "vireo.img"), run.tmp / "vireo-acme.img", run.d)
    run.dns_start()
    return img


def challtestsrv(ns):
    """pebble-challtestsrv as the namespace's DNS on host_ip:53: every name
    is the appliance's address, CA_NAME the host side's."""
    dns = ns.popen("pebble-challtestsrv", "-defaultIPv4", ns.guest_ip, "-defaultIPv6", "", "-dns01",
                   f"{ns.host_ip}:53", "-http01", "", "-https01", "", "-tlsalpn01", "", "-management",
                   f"{ns.host_ip}:8055", stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    for _ in range(100):	# within 10 s
        if ns.run("curl", "-sf", "-d", '{"host": "%s", "addresses": ["%s"]}' % (CA_NAME, ns.host_ip),
                  f"http://{ns.host_ip}:8055/add-a").returncode == 0:
            return dns
        time.sleep(0.1)
    dns.kill()
    raise AssertionError("pebble-challtestsrv's management API did not start")


def curl_verify(ns, root, name, path="/healthz"):
    return ns.run("curl", "-sS", "--max-time", "20", "--cacert", str(root), "--resolve",
                  f"{name}:443:{ns.guest_ip}", "-w", "\n%{http_code}", f"https://{name}{path}")


def assert_testssl_clean(ns, root, tmp_path):
    """testssl.sh (Debian's package) against the appliance's issued
    certificate: no HIGH or CRITICAL finding. Run in the namespace with the
    CA's root added; -p (protocols) and -S (server defaults: chain, names,
    key, validity, revocation pointers)."""
    if not shutil.which("testssl"):
        pytest.skip("testssl.sh not installed (tools/deps.sh test installs it)")
    out = tmp_path / "testssl-acme.json"
    r = ns.run("testssl", "--quiet", "--color", "0", "--warnings", "batch", "--add-ca", str(root),
               "--ip", ns.guest_ip, "--jsonfile", str(out), "-p", "-S", f"{NAMES[0]}:443", timeout=600)
    findings = json.loads(out.read_text())
    # Pebble 2.4 writes neither a CRL distribution point nor an OCSP URI
    # into what it issues (testssl: HIGH): the CA's choice, not the
    # appliance's, so that one finding is set aside by name.
    bad = [(f["severity"], f["id"], f["finding"]) for f in findings if f["severity"] in ("HIGH", "CRITICAL")
           and f["id"] != "cert_revocation"]
    assert findings and not bad, (bad, r.stdout[-3000:])
    sev = {f["id"]: f["finding"] for f in findings}
    assert sev["TLS1_3"].startswith("offered") and sev["TLS1_1"].startswith("not offered"), sev
    assert any(k.startswith("cert_trust") and "Ok" in v for k, v in sev.items()), sev


def test_acme_http01_pebble(acme_run, tmp_path):
    ns = acme_run.ns
    t0 = time.monotonic()
    img = prepare(acme_run)
    t_build = time.monotonic() - t0
    pebble = acme_run.pebble_start(0)
    net = ns.host_ip.rsplit(".", 1)[0] + ".0/24"
    cmdline = (f"ip={ns.guest_ip}/24 egress.allow={net} acme.directory=https://{ns.host_ip}:14000/dir "
               f"acme.names={','.join(NAMES)} acme.contact=mailto:ops@vireo.test http.redirect=on")
    t1 = time.monotonic()
    vm = acme_run.boot(img, cmdline)
    vm.wait_for(READY, timeout=120)
    t_ready = time.monotonic()
    vm.wait_for(ISSUED, timeout=60)
    t_issued = time.monotonic()
    renew = vm.wait_for(r"^acme: renewal in (\d+) s \(lifetime (\d+) s\)$", timeout=10)
    issued_at = time.time()

    def verify(root, name=NAMES[0], path="/healthz"):
        return curl_verify(ns, root, name, path)

    def serial():
        return ns.run("sh", "-c", f"openssl s_client -connect {ns.guest_ip}:443 -servername {NAMES[0]} "
                      "</dev/null 2>/dev/null | openssl x509 -noout -serial").stdout

    def metrics(root):	# plain HTTP is redirected (http.redirect=on)
        r = verify(root, path="/metrics")
        assert r.returncode == 0, r.stderr
        return parse_prometheus(r.stdout.decode().rpartition("\n")[0])

    root1 = pebble.root(tmp_path / "root1.pem")
    for name in NAMES:
        r = verify(root1, name)
        assert r.returncode == 0 and r.stdout.decode().endswith("ok\n\n200"), (r.stdout, r.stderr)
    # the challenge route answers on plain HTTP despite the redirect;
    # an unknown token is 404, the rest of plain HTTP is redirected
    r = ns.run("curl", "-sS", "-o", "/dev/null", "-w", "%{http_code}",
               f"http://{ns.guest_ip}/.well-known/acme-challenge/nosuchtoken")
    assert r.stdout == b"404", r.stdout
    r = ns.run("curl", "-sS", "-o", "/dev/null", "-w", "%{http_code}", f"http://{ns.guest_ip}/")
    assert r.stdout == b"301", r.stdout
    vm.send("cert\r")
    vm.wait_for(r"^acme:\s+valid ", timeout=30)
    out = vm.text[vm.text.rindex("source:"):]
    assert re.search(r"^source:\s+acme", out, re.M), out
    assert re.search(r"^issuer:\s+a CA", out, re.M), out
    m = metrics(root1)
    assert m['vireo_acme_state{state="valid"}'] == 1
    assert m["vireo_acme_certificates_issued_total"] == 1
    assert m["vireo_acme_orders_total"] == 1
    assert m["vireo_acme_failures_total"] == 0
    assert m["vireo_acme_http01_served_total"] >= 2	# one per name; pebble's VA may fetch twice
    assert any(k.startswith('vireo_tls_cert_info{source="acme"') for k in m), sorted(m)
    # the served chain is pebble's, for both names
    r = ns.run("sh", "-c", f"openssl s_client -connect {ns.guest_ip}:443 -servername {NAMES[0]} </dev/null "
               "2>/dev/null | openssl x509 -noout -ext subjectAltName")
    assert all(f"DNS:{n}" in r.stdout.decode() for n in NAMES), r.stdout
    # testssl.sh on the issued certificate and the chain served with it
    # (protocols, server defaults: the certificate's checks), pebble's
    # root trusted
    assert_testssl_clean(ns, root1, tmp_path)
    # renewal scheduled with a third of the lifetime left, earlier by at
    # most a 16th of it (acme_renew.h), from the served certificate's dates
    dates = ns.run("sh", "-c", f"openssl s_client -connect {ns.guest_ip}:443 -servername {NAMES[0]} "
                   "</dev/null 2>/dev/null | openssl x509 -noout -dates").stdout.decode()
    nb, na = (calendar.timegm(time.strptime(v.split("=", 1)[1].strip(), "%b %d %H:%M:%S %Y %Z"))
              for v in dates.splitlines())
    life = na - nb
    assert int(renew.group(2)) == life, (renew.group(0), dates)
    due = nb + life - life // 3 - issued_at
    assert due - life // 16 - 120 <= int(renew.group(1)) <= due + 120, (renew.group(0), dates, due)
    assert 0 < m["vireo_acme_renewal_seconds"] <= int(renew.group(1))

    # Second CA, with 30 % of nonces refused and certificates of SHORT
    # seconds: `cert renew` orders from it, then the appliance renews
    # by itself (half the lifetime left, acme_renew.h) while a client
    # keeps requesting: no request fails across the switch.
    pebble = acme_run.pebble_start(30, validity=SHORT)
    mark = len(vm.text)
    vm.send("cert renew\r")
    vm.wait_for(ISSUED, timeout=90, start=mark)
    t_renewed = time.monotonic()
    root2 = pebble.root(tmp_path / "root2.pem")
    assert root2.read_bytes() != root1.read_bytes()
    r = verify(root2)
    assert r.returncode == 0 and r.stdout.decode().endswith("\n200"), (r.stdout, r.stderr)
    m = metrics(root2)
    assert m["vireo_acme_certificates_issued_total"] == 2
    renew = vm.wait_for(r"^acme: renewal in (\d+) s \(lifetime (\d+) s\)$", timeout=10, start=mark)
    assert SHORT - 2 <= int(renew.group(2)) <= SHORT, renew.group(0)
    assert int(renew.group(1)) <= SHORT // 2 + 1, renew.group(0)
    first = serial()
    mark = len(vm.text)
    done, asked, failed = None, 0, []
    deadline = time.monotonic() + SHORT + 30
    while time.monotonic() < deadline:
        r = verify(root2)
        asked += 1
        if r.returncode != 0 or not r.stdout.decode().endswith("\n200"):
            failed.append((r.stdout, r.stderr))
        if done is None and re.search(ISSUED, vm.text[mark:], re.M):
            done = asked
        if done is not None and asked >= done + 5:	# a few more on the new certificate
            break
    assert done is not None, "no renewal by itself:\n" + vm.text[mark:]
    assert not failed, (asked, failed[:3])
    assert "cert renew" not in vm.text[mark:]
    assert serial() != first
    m = metrics(root2)
    assert m["vireo_acme_certificates_issued_total"] == 3
    t_self = time.monotonic()
    print(f"acme: build {t_build:.1f} s, boot to ready {t_ready - t1:.1f} s, ready to issued "
          f"{t_issued - t_ready:.1f} s, renewal with nonce rejections {t_renewed - t_issued:.1f} s, "
          f"then by itself ({SHORT} s certificates) with {asked} requests and none failed "
          f"{t_self - t_renewed:.1f} s; badNonce retries {m['vireo_acme_bad_nonces_total']:.0f}")
    assert m["vireo_acme_bad_nonces_total"] >= 1


def test_acme_tls_alpn01_pebble(acme_run, tmp_path):
    """acme.challenge=tls-alpn-01, and the CA down at first: the first
    order fails (the generated certificate keeps serving, the client backs
    off and says why); once pebble is up, `cert renew` orders at once:
    pebble's VA connects to port 443 offering acme-tls/1 with the name as
    SNI and checks the acmeIdentifier certificate; the issued one then
    serves that name."""
    ns = acme_run.ns
    img = prepare(acme_run)
    name = NAMES[0]
    cmdline = (f"ip={ns.guest_ip}/24 egress.allow={ns.host_ip}/32 dns={ns.host_ip} "
               f"acme.directory=https://{CA_NAME}:14000/dir acme.names={name} acme.challenge=tls-alpn-01")
    vm = acme_run.boot(img, cmdline)
    vm.wait_for(READY, timeout=120)
    back = vm.wait_for(r"^acme: order failed: directory: no response from the CA; the certificate served "
                       r"stays; next attempt in (\d+) s$", timeout=30)
    assert 30 <= int(back.group(1)) <= 60, back.group(0)	# the first failure: 60 s, its upper half
    r = ns.run("curl", "-sSk", f"https://{ns.guest_ip}/metrics")
    m = parse_prometheus(r.stdout.decode())
    assert m['vireo_acme_state{state="backoff"}'] == 1
    assert m["vireo_acme_failures_total"] == 1
    assert any(k.startswith('vireo_tls_cert_info{source="generated"') for k in m), sorted(m)
    assert 'vireo_acme_last_error_info{error="directory: no response from the CA"}' in m
    pebble = acme_run.pebble_start(0)
    mark = len(vm.text)
    vm.send("cert renew\r")
    t = time.monotonic()
    vm.wait_for(r"^acme: authorization 1 of 1 \(app\.vireo\.test\) pending: answering tls-alpn-01 ",
                timeout=30, start=mark)
    vm.wait_for(r"^acme: certificate issued for 1 name by ", timeout=60, start=mark)
    print(f"acme tls-alpn-01: renew to issued {time.monotonic() - t:.1f} s")
    root = pebble.root(tmp_path / "root.pem")
    r = curl_verify(ns, root, name)
    assert r.returncode == 0 and r.stdout.decode().endswith("ok\n\n200"), (r.stdout, r.stderr)
    # HTTP-01's route had nothing to serve
    r = curl_verify(ns, root, name, "/metrics")
    m = parse_prometheus(r.stdout.decode().rpartition("\n")[0])
    assert m["vireo_acme_http01_served_total"] == 0
    assert m["vireo_acme_certificates_issued_total"] == 1
    assert m["vireo_acme_orders_total"] == 2
    assert not any(k.startswith("vireo_acme_last_error_info") for k in m)
    assert m["vireo_https_alpn01_handshakes_total"] >= 1, sorted(k for k in m if "alpn" in k)


EAB_KID = "kid-vireo"
EAB_KEY = "zWNDZM6eQGHWpSRTPal5eIUYFTu7EajVIoguysqZ9wG44nMEtx3MUAsUDkMTQ12W"	# 48 bytes
EAB_OTHER = "V2hhdCBwZWJibGUga25vd3MgYW5kIHZpcmVvIGRvZXMgbm90LCA0OCBieXRlcyEh"


FORKY = os.path.join(os.path.dirname(BUILD), "pebble-forky")	# tools/fetch-pebble.sh
FORKY_PEBBLE = os.path.join(FORKY, "usr", "bin", "pebble")
SIX_DAYS = 6 * 86400
WINDOW = r"^acme: renewal window (-?\d+)\.\.(-?\d+) s from now; renewal in (\d+) s; next poll in (\d+) s$"


@pytest.mark.skipif(not os.path.exists(FORKY_PEBBLE), reason="forky's pebble missing: tools/fetch-pebble.sh")
def test_acme_eab_ari_pebble(acme_run, tmp_path):
    """Debian forky's pebble 2.10 (tools/fetch-pebble.sh; make test-qemu
    fetches it), with its example's profiles (default 90 days,
    "shortlived" 6 days), one boot with acme.profile=shortlived:

    - External Account Binding (RFC 8555 section 7.3.4) against a pebble
      that requires it: first with another MAC key for the appliance's kid
      (newAccount refused, the generated certificate keeps serving), then,
      pebble restarted with the appliance's key, `cert renew` gets an
      account and a 6-day certificate. The MAC key never reaches the
      console.

    Then renewal information (RFC 9773):

    - issued, the appliance renews by the lifetime rule (half of 6 days
      left) until it asks pebble's renewalInfo, at once: the renewal moves
      into pebble's window, the next poll is pebble's Retry-After (6 h,
      within the client's bounds); /metrics and `cert` show the window;
    - the CA moves the window (pebble's management API, set-renewal-info,
      a window a few seconds ahead) and `cert ari` asks again: the
      appliance renews inside it, its newOrder "replaces" the old
      certificate (pebble logs the replacement), and asks again for the
      new one;
    - pebble stopped, `cert ari` fails: backoff (the first: 30-60 s), the
      window kept, the certificate still served and valid."""
    ns = acme_run.ns
    img = prepare(acme_run)
    ver = open(os.path.join(FORKY, "stamp")).read().split()[0]
    profiles = (', "profiles": {"default": {"description": "90 days", "validityPeriod": 7776000}, '
                '"shortlived": {"description": "6 days", "validityPeriod": %d}}' % SIX_DAYS)
    pebble = acme_run.pebble_start(0, eab={EAB_KID: EAB_OTHER}, binary=FORKY_PEBBLE, profiles=profiles)
    name = NAMES[0]
    cmdline = (f"ip={ns.guest_ip}/24 egress.allow={ns.host_ip}/32 acme.directory=https://{ns.host_ip}:14000/dir "
               f"acme.names={name} acme.eab_kid={EAB_KID} acme.eab_hmac={EAB_KEY} acme.profile=shortlived")
    t0 = time.monotonic()
    vm = acme_run.boot(img, cmdline)
    vm.wait_for(READY, timeout=120)
    vm.wait_for(r"^acme: account key made .*, External Account Binding as " + EAB_KID + "$", timeout=10)
    fail = vm.wait_for(r"^acme: order failed: account: (.*); the certificate served stays", timeout=60)
    assert "no response" not in fail.group(1), fail.group(0)	# the CA's refusal, not the transport
    pebble = acme_run.pebble_start(0, eab={EAB_KID: EAB_KEY}, binary=FORKY_PEBBLE, profiles=profiles)
    mark = len(vm.text)
    vm.send("cert renew\r")
    vm.wait_for(r"^acme: certificate issued for 1 name by ", timeout=60, start=mark)
    life = vm.wait_for(r"^acme: renewal in (\d+) s \(lifetime (\d+) s\); asking the CA$", timeout=10,
                       start=mark)
    assert SIX_DAYS - 1 <= int(life.group(2)) <= SIX_DAYS, life.group(0)	# NotAfter is inclusive
    assert int(life.group(1)) <= SIX_DAYS // 2, life.group(0)	# 10 days or less: half left
    w = vm.wait_for(WINDOW, timeout=20, start=mark)
    a, b, r, nxt = (int(v) for v in w.groups())
    assert 0 < a < b and a <= r <= b, w.group(0)
    assert nxt == 6 * 3600, w.group(0)	# pebble's Retry-After, within [60 s, 24 h]
    root = pebble.root(tmp_path / "root.pem")
    res = curl_verify(ns, root, name, "/metrics")
    assert res.returncode == 0, res.stderr
    m = parse_prometheus(res.stdout.decode().rpartition("\n")[0])
    assert m['vireo_acme_ari_polls_total{result="ok"}'] == 1
    assert abs(m["vireo_acme_ari_window_start_seconds"] - (time.time() + a)) < 30, m
    assert 0 < m["vireo_acme_renewal_seconds"] <= r
    mark = len(vm.text)
    vm.send("cert\r")
    vm.wait_for(r"^acme ari:   window \d+\.\.\d+ s from now \(0\.\.0: none\), next poll in \d+ s$",
                timeout=20, start=mark)

    # The CA moves the window to a few seconds from now.
    leaf = ns.run("sh", "-c", f"openssl s_client -connect {ns.guest_ip}:443 -servername {name} "
                  "</dev/null 2>/dev/null | openssl x509", check=True).stdout.decode()
    now = time.time()
    ari = json.dumps({"suggestedWindow": {
        "start": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(now + 1)),
        "end": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(now + 4))}})
    body = tmp_path / "ari.json"
    body.write_text(json.dumps({"Certificate": leaf, "ARIResponse": ari}))
    res = ns.run("curl", "-sSk", "-w", "%{http_code}", "--data-binary", f"@{body}",
                 f"https://{ns.host_ip}:15000/set-renewal-info/")
    assert res.stdout.decode().endswith("200"), (res.stdout, res.stderr)
    mark = len(vm.text)
    vm.send("cert ari\r")
    w = vm.wait_for(WINDOW, timeout=20, start=mark)
    a, b, r, nxt = (int(v) for v in w.groups())
    assert -2 <= a <= 3 and b <= 6 and r <= b, w.group(0)	# 2 s for the clocks
    vm.wait_for(r"^acme: renewing the certificate", timeout=20, start=mark)
    iss = vm.wait_for(r"^acme: certificate issued for 1 name by ", timeout=60, start=mark)
    assert re.search(r"is a replacement of", pebble.text()), pebble.text()[-3000:]
    # the new certificate's own window: pebble's default again
    w = vm.wait_for(WINDOW, timeout=20, start=iss.end())
    a, b, r, nxt = (int(v) for v in w.groups())
    assert 0 < a < b and a <= r <= b, w.group(0)
    res = curl_verify(ns, root, name)
    assert res.returncode == 0 and res.stdout.decode().endswith("\n200"), (res.stdout, res.stderr)

    # The CA unreachable: the poll fails and backs off; the window and
    # the certificate stay.
    acme_run.pebble_stop()
    mark = len(vm.text)
    vm.send("cert ari\r")
    f = vm.wait_for(r"^acme: renewal information failed \((.*)\); next poll in (\d+) s$", timeout=40,
                    start=mark)
    assert 30 <= int(f.group(2)) <= 60, f.group(0)
    res = curl_verify(ns, root, name, "/metrics")
    assert res.returncode == 0, res.stderr
    m = parse_prometheus(res.stdout.decode().rpartition("\n")[0])
    assert m['vireo_acme_ari_polls_total{result="failed"}'] == 1
    assert m['vireo_acme_ari_polls_total{result="ok"}'] == 3
    assert m['vireo_acme_state{state="valid"}'] == 1
    assert m["vireo_acme_certificates_issued_total"] == 2
    assert m["vireo_acme_orders_total"] == 3
    assert 0 < m["vireo_acme_renewal_seconds"] <= r
    assert EAB_KEY not in vm.text and EAB_KEY[:16] not in vm.text
    print(f"acme eab and ari: pebble {ver} (Debian forky, tools/fetch-pebble.sh), EAB refused then accepted, 6-day "
          f"certificates (profile shortlived), window moved "
          f"and honoured with replaces, poll failure backed off; {time.monotonic() - t0:.1f} s")