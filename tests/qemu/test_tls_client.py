"""TLS client connections (include/vireo/net.h's .tls clients, issue 32):
one boot of apps/template in a make TLS=1 image (built into build/tls-image/
as tests/qemu/test_tls.py builds its own), on a tap in a namespace of its
own, with a CA bundle on the ESP (EFI/vireo/tls/ca.pem) and four
`openssl s_server`s in the namespace, each accepting one connection:

- a good certificate for good.vireo.test: verified, data both ways, the
  ALPN list seen by the server and its choice read back;
- a certificate for another name (the server also logs the SNI it got);
- an expired one, issued by the trusted CA;
- one for the right name from a CA the bundle does not hold.

Each refusal comes back with its reason (GET /tls answers "failed
cert_name" ...) and is counted on /metrics. The certificates and keys are
made here, in the test's temporary directory. The guest's clock is the
firmware's (OVMF's GetTime, the host's time: the provisional clock); the
no-clock refusal is a host test (tests/host/net/tls/test_tls_time.c)."""
import datetime
import os
import re
import shutil
import subprocess

import pytest

from httpc import parse_prometheus
from test_tls import BUILD, ESP, make
from vm import Vm

READY = r"^vireo: ready ip=(\S+) http=(\d+)( https=(\d+))?$"
NAME = "good.vireo.test"
PORTS = {"good": 9441, "wrongname": 9442, "expired": 9443, "unknownca": 9444}


def certs(d):
    """CA, a second CA, and four leaves as PEM files in d: {case: (cert, key)} and the CA path."""
    from cryptography import x509
    from cryptography.hazmat.primitives import hashes, serialization
    from cryptography.hazmat.primitives.asymmetric import ec
    from cryptography.x509.oid import NameOID

    now = datetime.datetime.now(datetime.timezone.utc)
    day = datetime.timedelta(days=1)

    def key():
        return ec.generate_private_key(ec.SECP256R1())

    def write(name, cert, k):
        with open(f"{d}/{name}.pem", "wb") as f:
            f.write(cert.public_bytes(serialization.Encoding.PEM))
        with open(f"{d}/{name}-key.pem", "wb") as f:
            f.write(k.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
                                    serialization.NoEncryption()))
        return f"{d}/{name}.pem", f"{d}/{name}-key.pem"

    def cert(subject, k, issuer, issuer_key, start, end, ca=False, san=None):
        b = (x509.CertificateBuilder()
             .subject_name(x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, subject)]))
             .issuer_name(x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, issuer)]))
             .public_key(k.public_key()).serial_number(x509.random_serial_number())
             .not_valid_before(start).not_valid_after(end)
             .add_extension(x509.BasicConstraints(ca=ca, path_length=None), critical=True))
        if san:
            b = b.add_extension(x509.SubjectAlternativeName([x509.DNSName(san)]), critical=False)
        return b.sign(issuer_key, hashes.SHA256())

    ca_k, other_k = key(), key()
    ca = cert("vireo test CA", ca_k, "vireo test CA", ca_k, now - day, now + 2 * day, ca=True)
    write("ca", ca, ca_k)
    out = {}
    for case, san, issuer, ikey, start, end in (
            ("good", NAME, "vireo test CA", ca_k, now - day, now + day),
            ("wrongname", "other.vireo.test", "vireo test CA", ca_k, now - day, now + day),
            ("expired", NAME, "vireo test CA", ca_k, now - 30 * day, now - 2 * day),
            ("unknownca", NAME, "another CA", other_k, now - day, now + day)):
        k = key()
        out[case] = write(case, cert(san, k, issuer, ikey, start, end, san=san), k)
    return out, f"{d}/ca.pem"


def test_tls_client_verifies(netns, tmp_path):
    ns = netns
    make("APP=apps/template")
    leaves, ca = certs(tmp_path)
    img = tmp_path / "vireo-tls-client.img"
    shutil.copyfile(os.path.join(BUILD, "apps", "template", "vireo.img"), img)
    env = dict(os.environ, MTOOLS_SKIP_CHECK="1")
    for d in ("::/EFI/vireo", "::/EFI/vireo/tls"):
        subprocess.run(["mmd", "-i", f"{img}{ESP}", d], env=env, capture_output=True)  # may exist
    subprocess.run(["mcopy", "-o", "-i", f"{img}{ESP}", ca, "::/EFI/vireo/tls/ca.pem"], check=True, env=env)

    servers = {}
    for case, (cert, key) in leaves.items():
        args = ["openssl", "s_server", "-naccept", "1", "-accept", f"{ns.host_ip}:{PORTS[case]}",
                "-cert", cert, "-key", key, "-www"]
        if case == "good":
            args += ["-alpn", "http/1.1"]
        if case == "wrongname":	# -servername's callback logs the SNI received
            args += ["-cert2", cert, "-key2", key, "-servername", NAME]
        servers[case] = ns.popen("timeout", "60", *args, stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
    net = ns.host_ip.rsplit(".", 1)[0] + ".0/24"
    vm = None
    try:
        vm = Vm(image=str(img), cmdline=f"ip={ns.guest_ip}/24 egress.allow={net}", wrap=ns.wrap,
                extra=ns.qemu_args())
        vm.wait_for(READY, timeout=120)
        vm.wait_for(r"^tls: TLS clients trust 1 CA certificate from the ESP \(EFI/vireo/tls/ca\.pem\) "
                    r"\((\d+) bytes of the TLS heap\)", timeout=5)

        def get(path):
            r = ns.run("curl", "-sS", "--max-time", "20", "-w", "\n%{http_code}", f"http://{ns.guest_ip}{path}")
            body, _, code = r.stdout.decode(errors="replace").rpartition("\n")
            return int(code), body

        idle = parse_prometheus(get("/metrics")[1])["vireo_tls_heap_in_use_bytes"]
        results = {}
        for case in PORTS:
            results[case] = get(f"/tls?name={NAME}&port={PORTS[case]}&addr={ns.host_ip}")
        m = parse_prometheus(get("/metrics")[1])
    finally:
        if vm:
            vm.stop()
        logs = {}
        for case, p in servers.items():
            p.kill()
            logs[case] = p.communicate(timeout=10)[0].decode(errors="replace")

    code, body = results["good"]
    assert code == 200, (body, logs["good"])
    assert body.split("\n")[:2] == [f"connected {ns.host_ip} alpn=http/1.1", "HTTP/1.0 200 ok"], body
    assert "ALPN protocols advertised by the client: vireo-test, http/1.1" in logs["good"], logs["good"]
    assert f'Hostname in TLS extension: "{NAME}"' in logs["wrongname"], logs["wrongname"]
    for case, why in (("wrongname", "cert_name"), ("expired", "cert_expired"), ("unknownca", "cert_untrusted")):
        assert results[case] == (502, f"failed {why}\n"), (case, results[case], logs[case])
        assert m[f'vireo_app_tcp_out_failures_total{{client="template_tls",reason="{why}"}}'] == 1
    assert m['vireo_app_tcp_out_connections_total{client="template_tls"}'] == 1
    assert m['vireo_app_tcp_out_failures_total{client="template_tls",reason="tls"}'] == 0
    # One TLS client connection's heap, at its peak: within the bound the
    # TLS heap keeps for each (net/tls/tls.h's TLS_CLIENT_CONN_BYTES).
    peak = m["vireo_tls_heap_peak_bytes"] - idle
    print(f"TLS client connection: peak {peak} bytes of TLS heap over idle ({idle}); bound 40960")
    assert 0 < peak <= 40960
    assert m["vireo_tls_heap_in_use_bytes"] == idle
