"""apps/dns/mkzone.py: a good zone compiles; each kind of bad zone stops
with FILE:LINE and a message naming the problem (run by make test-host,
before the engine's host test, which serves the example zone)."""
import os
import subprocess
import sys

import pytest

HERE = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))  # apps/dns
TOOL = os.path.join(HERE, "mkzone.py")

HEAD = """$ORIGIN z.test.
$TTL 60
@ SOA ns hm 1 2 3 4 5
  NS ns
ns A 192.0.2.1
"""


sys.path.insert(0, HERE)
import mkzone  # noqa: E402


def run(tmp_path, text):
    src = tmp_path / "t.zone"
    src.write_text(text)
    out = tmp_path / "t.c"
    p = subprocess.run([sys.executable, TOOL, str(src), str(out), "--bin", str(tmp_path / "t.bin")],
                       capture_output=True, text=True)
    return p, out


def records(tmp_path):
    """{(owner, type code): [(ttl, rdata)]} of the last run's image."""
    out = {}
    for owner, ttl, rtype, rd in mkzone.read_image((tmp_path / "t.bin").read_bytes()):
        out.setdefault((owner, rtype), []).append((ttl, rd))
    return out


def test_example_zone_compiles(tmp_path):
    for z in ("example.zone", os.path.join("tests", "rfc.zone")):
        p = subprocess.run([sys.executable, TOOL, os.path.join(HERE, z), str(tmp_path / "z.c"), "--bin",
                            str(tmp_path / "z.bin")], capture_output=True, text=True)
        assert p.returncode == 0, p.stderr
        c = (tmp_path / "z.c").read_text()
        assert "const u8 dns_zone_builtin[]" in c
        blob = (tmp_path / "z.bin").read_bytes()
        # The C array holds the very bytes of the ESP's file.
        arr = bytes(int(x, 16) for x in c.split("{", 1)[1].split("}", 1)[0].replace(",", " ").split())
        assert arr == blob
        assert "dns_zone_builtin_len = %d;" % len(blob) in c
        assert mkzone.read_image(blob)
    dump = subprocess.run([sys.executable, TOOL, "--dump", str(tmp_path / "z.bin")], capture_output=True,
                          text=True)
    assert dump.returncode == 0 and "_ssh._tcp.host1.example. 3600 SRV" in dump.stdout
    (tmp_path / "z.bin").write_bytes(blob[:-1] + bytes([blob[-1] ^ 1]))
    dump = subprocess.run([sys.executable, TOOL, "--dump", str(tmp_path / "z.bin")], capture_output=True,
                          text=True)
    assert dump.returncode == 1 and "checksum" in dump.stderr


def test_forms(tmp_path):
    p, out = run(tmp_path, HEAD + """
a 1h IN A 192.0.2.2      ; ttl then class
b IN 2m A 192.0.2.3      ; class then ttl
c.z.test. AAAA ::1
d TXT ( "one"
        "two" )
   TXT bare
MiXeD A 192.0.2.4
""")
    assert p.returncode == 0, p.stderr
    r = records(tmp_path)
    assert r[("a.z.test.", 1)] == [(3600, bytes([192, 0, 2, 2]))]
    assert r[("b.z.test.", 1)] == [(120, bytes([192, 0, 2, 3]))]
    assert sorted(rd for _, rd in r[("d.z.test.", 16)]) == [b"\x03one\x03two", b"\x04bare"]
    assert ("mixed.z.test.", 1) in r	# names are stored lowercase


def test_types(tmp_path):
    p, _ = run(tmp_path, HEAD + r"""
s SRV 10 20 5060 sip.z.test.
p PTR ns
c CAA 0 issue "ca.example.net"
c CAA 128 iodef mailto:x@example.net
h HTTPS 1 . alpn="h2,h3" port=443 ech=AAEC no-default-alpn
h2 HTTPS 0 svc.elsewhere.
v SVCB 16 s key65000="hi" ipv6hint=::1,2001:db8::1 mandatory=port,key65000 port=53
sub NS ns.sub
sub DS 60485 5 1 2BB183AF5F22588179A53B0A98631FAD1A292118
ns.sub A 192.0.2.9
u TYPE65280 \# 3 01 0203
u TYPE65281 \# 0
a TYPE1 \# 4 c0000201
""")
    assert p.returncode == 0, p.stderr
    r = records(tmp_path)
    assert r[("s.z.test.", 33)] == [(60, b"\x00\x0a\x00\x14\x13\xc4\x03sip\x01z\x04test\x00")]
    assert r[("p.z.test.", 12)] == [(60, b"\x02ns\x01z\x04test\x00")]
    assert sorted(rd for _, rd in r[("c.z.test.", 257)]) == \
        [b"\x00\x05issueca.example.net", b"\x80\x05iodefmailto:x@example.net"]
    assert r[("h.z.test.", 65)] == [(60, b"\x00\x01\x00" + b"\x00\x01\x00\x06\x02h2\x02h3" + b"\x00\x02\x00\x00" +
                                     b"\x00\x03\x00\x02\x01\xbb" + b"\x00\x05\x00\x03\x00\x01\x02")]
    assert r[("h2.z.test.", 65)] == [(60, b"\x00\x00\x03svc\x09elsewhere\x00")]
    v = r[("v.z.test.", 64)][0][1]
    assert v.startswith(b"\x00\x10\x01s\x01z\x04test\x00" + b"\x00\x00\x00\x04\x00\x03\xfd\xe8" +
                        b"\x00\x03\x00\x02\x00\x35" + b"\x00\x06\x00\x20")
    assert v.endswith(b"\xfd\xe8\x00\x02hi")
    assert r[("sub.z.test.", 43)] == [(60, bytes.fromhex("ec4505012bb183af5f22588179a53b0a98631fad1a292118"))]
    assert r[("u.z.test.", 65280)] == [(60, b"\x01\x02\x03")]
    assert r[("u.z.test.", 65281)] == [(60, b"")]
    assert r[("a.z.test.", 1)] == [(60, bytes([192, 0, 2, 1]))]


def test_wildcards(tmp_path):
    p, _ = run(tmp_path, HEAD + "* TXT any\n*.w A 192.0.2.1\nsub.*.x TXT lit\n")
    assert p.returncode == 0, p.stderr
    r = records(tmp_path)
    assert ("*.z.test.", 16) in r and ("*.w.z.test.", 1) in r and ("sub.*.x.z.test.", 16) in r


def test_rrset_size_bound(tmp_path):
    """An RRset over 7680 bytes could not be sent whole in an 8 KiB TCP
    answer: refused; one just under the bound compiles."""
    line = 'big TXT "%s"\n'
    ok = "".join(line % ("%03d" % i + "x" * 252) for i in range(28))	# 28 x (12 + 256) = 7504
    p, _ = run(tmp_path, HEAD + ok)
    assert p.returncode == 0, p.stderr
    p, _ = run(tmp_path, HEAD + ok + line % ("028" + "y" * 252))
    assert p.returncode == 1
    assert "t.zone:34: the TXT RRset of 'big.z.test.' is 7772 bytes, over the 7680" in p.stderr, p.stderr


@pytest.mark.parametrize("body,line,msg", [
    ("x A 1.2.3", 6, "bad IPv4 address '1.2.3'"),
    ("x AAAA 1.2.3.4", 6, "bad IPv6 address"),
    ("x A 192.0.2.1 192.0.2.2", 6, "A takes 1 field, got 2"),
    ("x FOO 0 0 1 y", 6, "type 'FOO' is not supported"),
    ("x SRV 0 0 70000 y", 6, "bad SRV port '70000'"),
    ("x SRV 0 0 1", 6, "SRV takes 4 fields"),
    ("x DNAME y", 6, "DNAME is not supported"),
    ("x RRSIG A 13 2 60 1 2 3 y. AAAA", 6, "DNSSEC signatures are not served"),
    ("x NSEC y A", 6, "DNSSEC records other than DS"),
    ("x DNSKEY 257 3 13 AAAA", 6, "DNSSEC keys are not served"),
    ("x TYPE41 \\# 0", 6, "OPT is a pseudo-record"),
    ("x TYPE255 \\# 0", 6, "a meta or query type"),
    ("x TYPE70000 \\# 0", 6, "type number 70000 is over 65535"),
    ("x TYPE65280 01 02", 6, "must be written as \\# length hex"),
    ("x TYPE65280 \\# 3 0102", 6, "RFC 3597 length 3 but 2 bytes"),
    ("x TYPE65280 \\# 1 0g", 6, "bad RFC 3597 data"),
    ("x A \\# 3 010203", 6, "A data of 3 bytes"),
    ("x NS \\# 3 010203", 6, "NS must be written in its own form"),
    ("x TYPE2 \\# 3 010203", 6, "NS must be written in its own form"),
    ("x CAA 0 is-sue x", 6, "bad CAA tag 'is-sue'"),
    ("x CAA 256 issue x", 6, "bad CAA flags '256'"),
    ("x HTTPS 0 . alpn=h2", 6, "AliasMode (priority 0) takes no parameters"),
    ("x HTTPS 1 . foo=1", 6, "unknown SvcParam key 'foo'"),
    ("x HTTPS 1 . port=1 port=2", 6, "given twice"),
    ("x HTTPS 1 . mandatory=alpn port=1", 6, "mandatory key 'alpn' is not in the record"),
    ("x HTTPS 1 . alpn=h2,,h3", 6, "empty item in the alpn list"),
    ("x HTTPS 1 . ipv4hint=1.2.3", 6, "bad address '1.2.3' in ipv4hint"),
    ("x HTTPS 1 . no-default-alpn=1", 6, "no-default-alpn takes no value"),
    ("x HTTPS 1 . port", 6, "needs a value"),
    ("x DS 1 13 2 abcd", 6, "DS digest of 2 bytes for digest type 2"),
    ("x DS 1 13 2 xyz", 6, "bad DS digest"),
    ("x NS ns\nx DS 1 13 1 " + "ab" * 20 + "\nx.x DS 1 13 1 " + "ab" * 20, 8, "DS at 'x.x.z.test.', which is not a delegation"),
    ("@ DS 1 13 1 " + "ab" * 20, 6, "DS at 'z.test.', which is not a delegation"),
    ("y DS 1 13 1 " + "ab" * 20, 6, "which is not a delegation"),
    ("* NS ns", 6, "a wildcard NS"),
    ("x CLASS3 A 192.0.2.1", 6, "class CLASS3 is not supported"),
    ("x CH A 192.0.2.1", 6, "class CH is not supported"),
    ("x MX y", 6, "MX takes 2 fields"),
    ("x MX 70000 y", 6, "bad MX preference '70000'"),
    ("x TXT \"" + "a" * 256 + "\"", 6, "TXT string of 256 bytes is over 255"),
    ("x TXT \"open", 6, "unterminated quoted string"),
    ("x.example.com. A 192.0.2.1", 6, "outside the zone"),
    ("x CNAME y\nx A 192.0.2.1", 7, "has a CNAME and other data"),
    ("@ CNAME y", 6, "CNAME at the zone's apex"),
    ("x A 192.0.2.1\nx 30 A 192.0.2.2", 7, "different TTLs"),
    ("x A 192.0.2.1\nx A 192.0.2.1", 7, "duplicate A record"),
    ("$INCLUDE other.zone", 6, "$INCLUDE is not supported"),
    ("$FOO bar", 6, "unknown directive"),
    ("$ORIGIN relative", 6, "absolute name"),
    ("x" * 64 + " A 192.0.2.1", 6, "is over 63 bytes"),
    ("a..b A 192.0.2.1", 6, "empty label"),
    ("x\\.y A 192.0.2.1", 6, "escapes in names are not supported"),
    ("x A ( 192.0.2.1", 6, "'(' never closed"),
    ("x A 192.0.2.1 )", 6, "')' without '('"),
    ("@ SOA ns hm 2 2 3 4 5", 6, "a second SOA"),
    ("x 4294967296 A 192.0.2.1", 6, "TTL 4294967296 is over 2^31-1"),
    ("sub NS ns.elsewhere.\nwww.sub TXT hi", 7, "below the delegation"),
])
def test_bad_zone(tmp_path, body, line, msg):
    p, out = run(tmp_path, HEAD + body + "\n")
    assert p.returncode == 1
    assert f"t.zone:{line}: " in p.stderr, p.stderr
    assert msg in p.stderr, p.stderr
    assert not out.exists()


@pytest.mark.parametrize("text,msg", [
    ("", "no records"),
    ("$ORIGIN z.test.\n$TTL 60\nns A 192.0.2.1\n", "no SOA"),
    ("$ORIGIN z.test.\n$TTL 60\n@ SOA ns hm 1 2 3 4 5\n", "has no NS record"),
    ("$ORIGIN z.test.\n@ SOA ns hm 1 2 3 4 5\n", "no TTL"),
    ("x A 192.0.2.1\n", "relative name 'x' before any $ORIGIN"),
    ("\tA 192.0.2.1\n", "without an owner"),
])
def test_bad_whole_zone(tmp_path, text, msg):
    p, _ = run(tmp_path, text)
    assert p.returncode == 1
    assert msg in p.stderr, p.stderr


def test_glue_below_a_cut_is_fine(tmp_path):
    p, _ = run(tmp_path, HEAD + "sub NS ns.sub\nns.sub A 192.0.2.9\n")
    assert p.returncode == 0, p.stderr
