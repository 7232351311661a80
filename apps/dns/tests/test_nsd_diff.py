"""apps/dns against NSD, question by question (make test-apps): the same
zone (apps/dns/tests/rfc.zone) served by vireo, booted with it on its ESP as
EFI/vireo/app/zone.bin (compiled by mkzone.py --bin, so the zone-replacement
path is what is tested), and by Debian's NSD in the test's own network
namespace; apps/dns/tests/dnsdiff.py asks both every name x type over UDP
(no EDNS; EDNS 1232 with DO; EDNS 700) and TCP, about 7,800 questions in
15-30 s, and compares them RRset by RRset. Zero differences are allowed
beyond the documented ones (apps/dns/README.md, "Compared with NSD"), and
each kind of those is checked to occur.

Also here, on the same boot: a damaged zone.bin keeps the built-in zone
(a second, short boot)."""
import json
import os
import re
import shutil
import subprocess
import sys
import time

import pytest

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "..", "..", "tests", "qemu"))
import netns as nsmod  # noqa: E402
import rootskip  # noqa: E402
from vm import ROOT, Vm  # noqa: E402

DNS_IMAGE = os.environ.get("VIREO_DNS_IMAGE", os.path.join(ROOT, "build", "apps", "dns", "vireo.img"))
ZONE = os.path.join(HERE, "rfc.zone")
MKZONE = os.path.join(HERE, "..", "mkzone.py")
DIFF = os.path.join(HERE, "dnsdiff.py")
ESP = "@@1M"
PY = "/usr/bin/python3"	# Debian's, with python3-dnspython (tools/deps.sh test)
READY = r"^vireo: ready ip=(\S+) http=(\d+)$"
NSD_CONF = """server:
  ip-address: {ip}
  port: 53
  username: ""
  zonesdir: "{dir}"
  database: ""
  pidfile: "{dir}/nsd.pid"
  xfrdfile: "{dir}/xfrd.state"
  zonelistfile: "{dir}/zone.list"
  logfile: "{dir}/nsd.log"
  server-count: 1
  minimal-responses: yes
  rrl-ratelimit: 0
  refuse-any: no
  hide-version: yes
  hide-identity: yes
  verbosity: 1
remote-control:
  control-enable: no
zone:
  name: example.
  zonefile: rfc.zone
"""


def image_with_zone(tmp_path, blob):
    img = tmp_path / "vireo.img"
    shutil.copyfile(DNS_IMAGE, img)
    env = dict(os.environ, MTOOLS_SKIP_CHECK="1")
    zb = tmp_path / "zone.bin"
    zb.write_bytes(blob)
    for d in ("::/EFI/vireo", "::/EFI/vireo/app"):
        subprocess.run(["mmd", "-i", f"{img}{ESP}", d], capture_output=True, env=env)
    subprocess.run(["mcopy", "-o", "-i", f"{img}{ESP}", str(zb), "::/EFI/vireo/app/zone.bin"], check=True, env=env)
    return str(img)


def compiled_zone(tmp_path):
    out = tmp_path / "rfc.bin"
    subprocess.run([PY, MKZONE, ZONE, "--bin", str(out)], check=True)
    return out.read_bytes()


@pytest.fixture(scope="module")
def setup(tmp_path_factory):
    if not os.path.exists(DNS_IMAGE):
        pytest.fail(f"{DNS_IMAGE} missing: run `make APP=apps/dns image` (make test does)")
    if not nsmod.available():
        rootskip.skip_root_only()
    if not shutil.which("nsd"):
        pytest.fail("nsd missing: tools/deps.sh test installs it")
    tmp = tmp_path_factory.mktemp("nsddiff")
    img = image_with_zone(tmp, compiled_zone(tmp))
    nsd_dir = tmp / "nsd"
    nsd_dir.mkdir()
    shutil.copyfile(ZONE, nsd_dir / "rfc.zone")
    with nsmod.Netns() as ns:
        (nsd_dir / "nsd.conf").write_text(NSD_CONF.format(ip=ns.host_ip, dir=nsd_dir))
        nsd = ns.popen("nsd", "-d", "-c", str(nsd_dir / "nsd.conf"), stdout=subprocess.PIPE,
                       stderr=subprocess.STDOUT)
        vm = Vm(cmdline=f"ip={ns.guest_ip}/24 gw={ns.host_ip} dns.rrl=false", image=img, wrap=ns.wrap,
                extra=ns.qemu_args())
        try:
            vm.wait_for(READY, timeout=120)
            vm.wait_for(r"^dns: zone example\. \(\d+ records\) on udp/tcp 53, rrl off$", timeout=30)
            for _ in range(50):	# NSD answers once its zone is read
                r = ns.run("dig", f"@{ns.host_ip}", "+time=1", "+tries=1", "+short", "example", "SOA")
                if r.stdout.strip():
                    break
                time.sleep(0.2)
            yield ns, vm
        finally:
            vm.stop()
            nsd.terminate()
            try:
                nsd.wait(timeout=10)
            except subprocess.TimeoutExpired:
                nsd.kill()
                nsd.wait()
    assert "vireo: panic" not in vm.text


def test_zone_from_the_esp(setup):
    _, vm = setup
    assert re.search(r"^dns: zone from the ESP \(EFI/vireo/app/zone\.bin, \d+ bytes\), serial 2026120601$",
                     vm.text, re.M), vm.text


def test_same_answers_as_nsd(setup):
    ns, _ = setup
    t0 = time.monotonic()
    p = ns.run(PY, DIFF, ZONE, ns.guest_ip, ns.host_ip, timeout=600)
    assert p.returncode == 0, p.stderr.decode()
    r = json.loads(p.stdout)
    if os.environ.get("VIREO_DNS_DIFF_OUT"):
        with open(os.environ["VIREO_DNS_DIFF_OUT"], "w") as f:
            f.write(p.stdout.decode())
    took = time.monotonic() - t0
    print(f"dnsdiff: {r['questions']} questions ({r['names']} names x {r['types']} types x {r['modes']}) "
          f"in {took:.1f} s; documented: " + ", ".join(f"{k} {v['count']}" for k, v in r["documented"].items()))
    assert r["failure_count"] == 0 and r["unanswered"] == 0, json.dumps(r["failures"], indent=1)
    # Every name x type x mode was asked, and each documented kind met (the
    # zone is made to reach them: if one stops occurring, say why).
    assert r["questions"] == r["names"] * r["types"] * len(r["modes"])
    assert set(r["documented"]) == {"glue-tc", "additional", "any", "cname-hops", "truncated"}, r["documented"]


def test_damaged_zone_keeps_the_built_in_one(tmp_path):
    """A zone.bin with one byte changed: the checksum catches it, one
    warning, and the built-in (example) zone is served."""
    if not nsmod.available():
        rootskip.skip_root_only()
    blob = bytearray(compiled_zone(tmp_path))
    blob[len(blob) // 2] ^= 0x40
    img = image_with_zone(tmp_path, bytes(blob))
    vm = Vm(cmdline="", image=img, extra=["-netdev", "user,id=n0,restrict=on", "-device",
                                         "virtio-net-pci,netdev=n0,romfile="])
    try:
        vm.wait_for(r"^dns: zone vireo\.test\. ", timeout=120)
        assert re.search(r"^warning: dns: EFI/vireo/app/zone\.bin: zone image: checksum mismatch \(damaged or "
                         r"edited\); serving the built-in zone \(serial \d+\)$", vm.text, re.M), vm.text
    finally:
        vm.stop()
