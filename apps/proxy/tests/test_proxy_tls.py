"""HTTPS upstreams (proxy.upstream=https://...): apps/proxy in a make TLS=1
image (built into build/tls-image/ as tests/qemu/test_tls_client.py builds
apps/template), one boot on a tap in a namespace of its own, with a test CA
on the ESP (EFI/vireo/tls/ca.pem), a DNS responder for good.vireo.test in
the namespace, and one nginx with four ssl servers, all for that name:

- a good certificate: proxied, the upstream connection kept alive (nginx's
  $connection_requests), the SNI and ALPN nginx saw ($ssl_server_name,
  $ssl_alpn_protocol) logged;
- a certificate for another name, an expired one, one from a CA the
  bundle does not hold: each refused, a 502 that says why
  ("upstream TLS refused: cert_name") and a console line with mbedTLS's
  verify flags, counted on /metrics;
- a second boot without a wall clock (the RTC set to 2000): the good
  certificate refused too (noclock), verification fails closed;
- a third boot with two more servers of the good certificate: one that
  speaks TLS 1.2 only is proxied (nginx logs TLSv1.2), one that speaks
  TLS 1.1 only (openssl s_client gets a TLS 1.1 session from it) is
  refused, a 502 "upstream TLS refused: tls".

POSTs (never retried on another upstream) go round-robin, so four in a
row meet each upstream once. The certificates are made here (the same
helper as test_tls_client.py). The guest's clock is the firmware's; the
no-clock refusal is also a host test (tests/host/net/tls/test_tls_time.c).
Wall time: about 25 s after the image is built."""
import os
import shutil
import subprocess
import sys
import time

import pytest

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "..", "..", "tests", "qemu"))
from conftest import READY  # noqa: E402
from httpc import parse_prometheus  # noqa: E402
from test_tls import BUILD, ESP, make  # noqa: E402
from test_tls_client import NAME, certs  # noqa: E402
from vm import Vm  # noqa: E402
import netns as nsmod  # noqa: E402
import rootskip  # noqa: E402

PY = "/usr/bin/python3"
CASES = {"good": 9451, "wrongname": 9452, "expired": 9453, "unknownca": 9454}
# The good certificate behind one protocol version each (a third boot):
# TLS 1.2 only (SECLEVEL=0 lets OpenSSL 3 speak 1.1 at all).
VERSIONS = {"tls12": (9455, "TLSv1.2", ""), "tls11": (9456, "TLSv1.1", " ssl_ciphers DEFAULT:@SECLEVEL=0;")}

NGINX_CONF = """
worker_processes 1; master_process off; daemon off;
error_log {d}/error.log; pid {d}/nginx.pid;
events {{ worker_connections 64; }}
http {{
    log_format t '$server_port $request_method $request_uri sni=$ssl_server_name alpn=$ssl_alpn_protocol proto=$ssl_protocol creq=$connection_requests';
    access_log {d}/access.log t;
    client_body_temp_path {d}; proxy_temp_path {d}; fastcgi_temp_path {d}; uwsgi_temp_path {d}; scgi_temp_path {d};
{servers}
}}
"""
SERVER = """    server {{
        listen {ip}:{port} ssl;
        ssl_certificate {cert}; ssl_certificate_key {key}; ssl_protocols {protos};{extra}
        location / {{ return 200 "tls {case}\\n"; }}
    }}
"""

# good.vireo.test's A record: the namespace's address; nothing else.
DNS = r'''
import socket, struct
s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
s.bind(("{host}", 53))
s.settimeout(90)
while True:
    try:
        q, peer = s.recvfrom(512)
    except socket.timeout:
        break
    i = 12
    while q[i]:
        i += 1 + q[i]
    question, qtype = q[12:i + 5], struct.unpack("!H", q[i + 1:i + 3])[0]
    ans = b""
    if qtype == 1:
        ans = b"\xc0\x0c" + struct.pack("!HHIH", 1, 1, 60, 4) + socket.inet_aton("{host}")
    s.sendto(struct.pack("!HHHHHH", struct.unpack("!H", q[:2])[0], 0x8180, 1, 1 if ans else 0, 0, 0)
             + question + ans, peer)
'''


def test_https_upstreams(tmp_path):
    if not nsmod.available():
        rootskip.skip_root_only()
    make("APP=apps/proxy")
    leaves, ca = certs(tmp_path)
    img = tmp_path / "vireo-proxy-tls.img"
    shutil.copyfile(os.path.join(BUILD, "apps", "proxy", "vireo.img"), img)
    env = dict(os.environ, MTOOLS_SKIP_CHECK="1")
    for d in ("::/EFI/vireo", "::/EFI/vireo/tls"):
        subprocess.run(["mmd", "-i", f"{img}{ESP}", d], env=env, capture_output=True)  # may exist
    subprocess.run(["mcopy", "-o", "-i", f"{img}{ESP}", ca, "::/EFI/vireo/tls/ca.pem"], check=True, env=env)

    with nsmod.Netns() as ns:
        d = tmp_path / "nginx"
        d.mkdir()
        servers = "".join(SERVER.format(ip=ns.host_ip, port=port, cert=leaves[case][0], key=leaves[case][1],
                                        case=case, protos="TLSv1.2 TLSv1.3", extra="")
                          for case, port in CASES.items())
        servers += "".join(SERVER.format(ip=ns.host_ip, port=port, cert=leaves["good"][0], key=leaves["good"][1],
                                         case=case, protos=protos, extra=extra)
                           for case, (port, protos, extra) in VERSIONS.items())
        (d / "nginx.conf").write_text(NGINX_CONF.format(d=d, servers=servers))
        nginx = ns.popen("nginx", "-c", str(d / "nginx.conf"), "-p", str(d), stdout=subprocess.DEVNULL,
                         stderr=subprocess.DEVNULL)
        dns = ns.popen(PY, "-c", DNS.format(host=ns.host_ip), stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        ups = ",".join(f"https://{NAME}:{port}" for port in CASES.values())
        vm = None
        try:
            vm = Vm(image=str(img), cmdline=f"ip={ns.guest_ip}/24 dns={ns.host_ip} egress.allow=10.77.0.0/24 "
                    f"proxy.upstream={ups} proxy.fails=100", wrap=ns.wrap, extra=ns.qemu_args())
            vm.wait_for(READY, timeout=120)

            def curl(path, *args):
                r = ns.run("curl", "-sS", "--max-time", "20", "-w", "\n%{http_code}", *args,
                           f"http://{ns.guest_ip}{path}", timeout=40)
                body, _, code = r.stdout.decode(errors="replace").rpartition("\n")
                return int(code or 0), body.strip()

            # four POSTs in a row: each upstream once (round-robin, no retry)
            got = sorted(curl(f"/p{i}", "-d", "x") for i in range(4))
            # four more: the good one again, on the kept-alive connection
            again = [curl(f"/g{i}", "-d", "x") for i in range(4)]
            for why in ("cert_name", "cert_expired", "cert_untrusted"):
                vm.wait_for(rf"^tls client proxy\d: {NAME}: {why} \(mbedTLS -0x[0-9a-f]+, verify flags 0x[0-9a-f]+\)",
                            timeout=5)
            m = parse_prometheus(curl("/metrics")[1] + "\n")
            vm.stop()
            # no wall clock (the RTC in 2000, before any the appliance
            # takes: "clock: none until SNTP"): even the good certificate
            # is refused, fail closed
            vm = Vm(image=str(img), cmdline=f"ip={ns.guest_ip}/24 dns={ns.host_ip} egress.allow=10.77.0.0/24 "
                    f"proxy.upstream=https://{NAME}:{CASES['good']}", wrap=ns.wrap,
                    extra=ns.qemu_args() + ["-rtc", "base=2000-01-01T00:00:00"])
            vm.wait_for(READY, timeout=120)
            vm.wait_for(r"^clock: none until SNTP", timeout=5)
            noclock = curl("/nc")
            vm.wait_for(rf"^tls client proxy0: {NAME}: noclock ", timeout=5)
            vm.stop()
            # TLS 1.2 only: connected (nginx logs the version); TLS 1.1
            # only (it does speak it: openssl s_client gets a 1.1 session
            # from it): refused, a handshake failure. Round-robin POSTs.
            s = ns.run("sh", "-c", f"echo | openssl s_client -connect {ns.host_ip}:{VERSIONS['tls11'][0]} "
                       "-tls1_1 -cipher DEFAULT:@SECLEVEL=0 2>&1", timeout=20)
            s11 = s.stdout.decode(errors="replace")
            vm = Vm(image=str(img), cmdline=f"ip={ns.guest_ip}/24 dns={ns.host_ip} egress.allow=10.77.0.0/24 "
                    f"proxy.upstream=https://{NAME}:{VERSIONS['tls12'][0]},https://{NAME}:{VERSIONS['tls11'][0]} "
                    "proxy.fails=100", wrap=ns.wrap, extra=ns.qemu_args())
            vm.wait_for(READY, timeout=120)
            versions = sorted(curl(f"/v{i}", "-d", "x") for i in range(2))
            vm.wait_for(rf"^tls client proxy1: {NAME}: tls \(mbedTLS -0x[0-9a-f]+", timeout=5)
        finally:
            if vm:
                vm.stop()
            for p in (nginx, dns):
                p.kill()
                p.wait(timeout=10)
        log = (d / "access.log").read_text()

    assert got == [(200, "tls good"), (502, "502 upstream TLS refused: cert_expired"),
                   (502, "502 upstream TLS refused: cert_name"),
                   (502, "502 upstream TLS refused: cert_untrusted")], (got, log)
    assert [c for c, _ in again].count(200) == 1, again
    lines = [ln for ln in log.splitlines() if ln.startswith(f"{CASES['good']} POST")]
    assert len(lines) == 2, log
    for ln in lines:
        assert f"sni={NAME} alpn=http/1.1 proto=TLSv1.3" in ln, ln
    # the connection kept alive: one handshake, both requests on it
    assert [ln.rsplit("creq=", 1)[1] for ln in lines] == ["1", "2"], log
    # of the first boot's upstreams only the good one ever got a request
    assert all(ln.startswith(str(CASES["good"])) for ln in log.splitlines()
               if int(ln.split()[0]) in CASES.values()), log
    for i, why in enumerate(("cert_name", "cert_expired", "cert_untrusted")):
        assert sum(v for k, v in m.items() if k.startswith("vireo_app_tcp_out_failures_total{")
                   and f'reason="{why}"' in k) == 2, (why, {k: v for k, v in m.items() if "failures" in k})
    assert m[f'proxy_upstream_requests_total{{upstream="https://{NAME}:{CASES["good"]}"}}'] == 2
    assert noclock == (502, "502 upstream TLS refused: noclock"), noclock
    assert "/nc" not in log, log
    assert "Protocol  : TLSv1.1" in s11, s11
    assert versions == [(200, "tls tls12"), (502, "502 upstream TLS refused: tls")], (versions, log)
    v12 = [ln for ln in log.splitlines() if ln.startswith(f"{VERSIONS['tls12'][0]} POST")]
    assert len(v12) == 1 and f"sni={NAME} alpn=http/1.1 proto=TLSv1.2 " in v12[0], log
    assert not [ln for ln in log.splitlines() if ln.startswith(f"{VERSIONS['tls11'][0]} POST")], log
