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


def run(tmp_path, text):
    src = tmp_path / "t.zone"
    src.write_text(text)
    out = tmp_path / "t.c"
    p = subprocess.run([sys.executable, TOOL, str(src), str(out)], capture_output=True, text=True)
    return p, out


def test_example_zone_compiles(tmp_path):
    p = subprocess.run([sys.executable, TOOL, os.path.join(HERE, "example.zone"), str(tmp_path / "z.c")],
                       capture_output=True, text=True)
    assert p.returncode == 0, p.stderr
    c = (tmp_path / "z.c").read_text()
    assert "const struct dns_zone dns_zone_table" in c


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
    c = out.read_text()
    assert "3600, dz_r" in c and "120, dz_r" in c
    # names are stored lowercase
    assert "0x05, 0x6d, 0x69, 0x78, 0x65, 0x64" in c


@pytest.mark.parametrize("body,line,msg", [
    ("x A 1.2.3", 6, "bad IPv4 address '1.2.3'"),
    ("x AAAA 1.2.3.4", 6, "bad IPv6 address"),
    ("x A 192.0.2.1 192.0.2.2", 6, "A takes 1 field, got 2"),
    ("x SRV 0 0 1 y", 6, "type 'SRV' is not supported"),
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
