#!/usr/bin/env python3
"""The differential comparer of apps/dns/tests/test_nsd_diff.py: asks two
authoritative servers serving the same zone the same questions, every name
(each owner, each empty non-terminal, names that wildcards cover or do not,
names below delegations, names outside the zone, a name in mixed case) times
every type the zone has and a few it has not, and ANY, over UDP without EDNS
(512 bytes), UDP with EDNS 1232 (DO set) and 700, and TCP; and
compares the answers RRset by RRset (dnspython, Debian's python3-dnspython).

  dnsdiff.py ZONEFILE TEST_IP[:PORT] REF_IP[:PORT] [--port N] [--show N]

TEST_IP is the server under test (vireo), REF_IP the reference (NSD). Prints
one JSON object: the number of questions, the documented policy differences
met (by kind, with an example each) and every other difference (a failure).
The documented differences are apps/dns/README.md's list:

  glue-tc      a referral (alone or after a CNAME) whose in-domain glue does
               not all fit: vireo sets TC (RFC 9471), NSD 4.6 leaves some out
               without TC. Checked: the reference's answer over TCP has glue
               its UDP answer lacks.
  additional   outside referrals, vireo adds the zone's A/AAAA of NS, MX and
               SRV targets in additional (NSD with minimal-responses: yes
               adds only the NS ones). Checked: every extra record is an
               address of a target named in the answer, and nothing NSD
               adds is missing.
  any          ANY: vireo gives one RRset over UDP (RFC 8482) and every one
               over TCP; NSD 4.6 gives one, its own pick, over both. Checked:
               each RRset vireo gives is NSD's answer for that name and type
               (asked over TCP on its own), over UDP exactly one, over TCP
               all of those NSD has for the name.
  cname-hops   a chain of more than 8 CNAMEs: vireo writes the first 8 and
               stops (NOERROR); NSD follows further. Checked: vireo's answer
               is the start of NSD's.
  truncated    both set TC: only the header is compared (the records of a
               truncated answer are not used, RFC 2181 9).

Every loop is bounded: one question at a time, a 3 s timeout, one retry.
"""
import argparse
import json
import socket
import struct
import sys

import dns.edns
import dns.flags
import dns.message
import dns.name
import dns.query
import dns.rcode
import dns.rdataclass
import dns.rdatatype

sys.path.insert(0, __file__.rsplit("/", 2)[0])	# apps/dns: mkzone.py
import mkzone  # noqa: E402

EXTRA_TYPES = [48, 47, 65282, 99]	# DNSKEY, NSEC, an unknown type, SPF: nowhere in the zone
MODES = {
    "udp": dict(tcp=False, edns=None, do=False),
    "udp-1232-do": dict(tcp=False, edns=1232, do=True),
    "udp-700": dict(tcp=False, edns=700, do=False),
    "tcp": dict(tcp=True, edns=None, do=False),
}
TCP_PER_CONN = 50


def zone_names(path):
    """The zone's names and types: (apex, [owner and empty non-terminal
    names], {type codes}), from mkzone.py's own parser."""
    with open(path, encoding="utf-8") as f:
        records = mkzone.parse_zone(f.read())
    apex_key = mkzone.check_zone(records)
    apex = mkzone.show_key(apex_key)
    names, types = set(), set()
    for r in records:
        k = mkzone.key(r[1])
        types.add(r[3])
        while True:
            names.add(mkzone.show_key(k))
            if k == apex_key:
                break
            k = mkzone.parent(k)
    return apex, sorted(names), sorted(types)


def question_names(apex, names):
    """Every name of the zone, and names that exist only through a wildcard,
    that do not exist, below delegations, outside the zone, in mixed case."""
    out = list(names)
    extra = ["host3", "foo.bar", "_telnet._tcp.host1", "ghost.*", "host.subdel", "a.w1", "b.c.w1", "q.wc",
             "q.wx", "q.w3", "r.q.w3", "z.ww", "zz.ent", "x.sec", "www.big", "a.b.c.ns.big", "nope",
             "no.such.host1", "HoSt1", "WWW.Big", "x.l5"]
    out += [e + "." + apex for e in extra]
    out += ["example.org.", "test.", "."]
    return out


def make_query(name, rdtype, mode, qid):
    m = MODES[mode]
    q = dns.message.make_query(name, rdtype, use_edns=0 if m["edns"] else None, payload=m["edns"] or 512,
                               want_dnssec=m["do"], id=qid, flags=0)
    return q


def ask(server, port, q, tcp, sock_cache):
    """The response's wire form, or None after a timeout and a retry."""
    wire = q.to_wire()
    for _ in range(2):
        try:
            if tcp:
                s = sock_cache.get(server)
                if s is None:
                    s = socket.create_connection((server, port), timeout=3)
                    sock_cache[server] = [s, 0]
                else:
                    s = s[0]
                s.sendall(struct.pack(">H", len(wire)) + wire)
                hdr = recv_exact(s, 2)
                resp = recv_exact(s, struct.unpack(">H", hdr)[0])
                sock_cache[server][1] += 1
                if sock_cache[server][1] >= TCP_PER_CONN:	# under vireo's 100 a connection
                    s.close()
                    del sock_cache[server]
                return resp
            s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
            s.settimeout(3)
            try:
                s.sendto(wire, (server, port))
                while True:
                    resp, _ = s.recvfrom(65535)
                    if resp[:2] == wire[:2]:
                        return resp
            finally:
                s.close()
        except (OSError, EOFError):
            if tcp and server in sock_cache:
                sock_cache[server][0].close()
                del sock_cache[server]
    return None


def recv_exact(s, n):
    b = b""
    while len(b) < n:
        c = s.recv(n - len(b))
        if not c:
            raise EOFError("closed")
        b += c
    return b


def rrsets(section):
    """{(owner, class, type): (ttl, frozenset of canonical rdata)}."""
    out = {}
    for rrset in section:
        key = (rrset.name.to_text().lower(), rrset.rdclass, rrset.rdtype)
        data = frozenset(r.to_digestable() for r in rrset)
        if key in out:	# one RRset written in two pieces
            data = data | out[key][1]
        out[key] = (rrset.ttl, data)
    return out


def parse(wire):
    return dns.message.from_wire(wire, raise_on_truncation=False)


def header(m):
    return {"rcode": dns.rcode.to_text(m.rcode()), "aa": bool(m.flags & dns.flags.AA),
            "tc": bool(m.flags & dns.flags.TC), "ra": bool(m.flags & dns.flags.RA),
            "edns": m.edns, "do": bool(m.ednsflags & dns.flags.DO) if m.edns >= 0 else None}


def show(m):
    return {"header": header(m), "answer": [r.to_text() for r in m.answer],
            "authority": [r.to_text() for r in m.authority], "additional": [r.to_text() for r in m.additional]}


def is_referral(m):
    return not m.answer and any(r.rdtype == dns.rdatatype.NS for r in m.authority)


def has_delegation(m):
    """A referral, or a CNAME chain's referral (NS in authority)."""
    return any(r.rdtype == dns.rdatatype.NS for r in m.authority)


def targets(m):
    out = set()
    for rrset in m.answer:
        for r in rrset:
            if rrset.rdtype in (dns.rdatatype.NS, dns.rdatatype.MX, dns.rdatatype.SRV):
                t = r.target if rrset.rdtype != dns.rdatatype.MX else r.exchange
                out.add(t.to_text().lower())
    return out


def in_domain_glue(m):
    cuts = [r.name for r in m.authority if r.rdtype == dns.rdatatype.NS]
    return {k for k in rrsets(m.additional)
            if k[2] in (dns.rdatatype.A, dns.rdatatype.AAAA) and any(dns.name.from_text(k[0]).is_subdomain(c)
                                                                     for c in cuts)}


def compare_any(t, r, mode, per_type):
    """ANY with an answer from both: see "any" above."""
    at = rrsets(t.answer)
    name = t.question[0].name.to_text().lower()
    for k, v in at.items():
        if k[0] != name or per_type.get(k[2], {}).get(k) != v:
            return "failure: ANY gave %s %s, not what that type's own question gets" % (k[0], k[2])
    if MODES[mode]["tcp"]:
        want = {k: v for typ, d in per_type.items() for k, v in d.items() if k[0] == name and k[2] == typ}
        if want != at:
            return "failure: ANY over TCP gave %s, the name has %s" % (sorted(at), sorted(want))
    elif len(at) != 1:
        return "failure: ANY over UDP gave %d RRsets" % len(at)
    if rrsets(t.authority) or rrsets(r.authority):
        return "failure: ANY with authority records"
    return extra_additional(t, r) or "any"


def extra_additional(t, r):
    """None when the additional sections agree, "additional" when vireo's
    has only the documented extra addresses, else a failure."""
    xt = {k: v for k, v in rrsets(t.additional).items() if k[2] != dns.rdatatype.OPT}
    xr = {k: v for k, v in rrsets(r.additional).items() if k[2] != dns.rdatatype.OPT}
    if xt == xr:
        return None
    if has_delegation(r):
        return "failure: referral glue differs"
    if any(xt.get(k) != v for k, v in xr.items()):
        return "failure: additional data of the reference's missing"
    tg = targets(t)
    extra = [k for k in xt if k not in xr]
    if all(k[2] in (dns.rdatatype.A, dns.rdatatype.AAAA) and k[0] in tg for k in extra):
        return "additional"
    return "failure: additional section differs"


def compare(t, r, qtype, mode, ref_tcp, per_type):
    """None when the answers agree, the kind of a documented difference, or
    a string saying what differs (a failure)."""
    ht, hr = header(t), header(r)
    if ht["rcode"] != hr["rcode"]:
        return "failure: rcode %s, reference %s" % (ht["rcode"], hr["rcode"])
    if (ht["edns"] >= 0) != (hr["edns"] >= 0) or ht["do"] != hr["do"]:
        return "failure: EDNS %s DO %s, reference EDNS %s DO %s" % (ht["edns"], ht["do"], hr["edns"], hr["do"])
    if ht["ra"]:
        return "failure: RA set"
    if ht["tc"] and hr["tc"]:
        return "truncated" if ht["aa"] == hr["aa"] else "failure: AA differs in truncated answers"
    if ht["tc"] != hr["tc"]:
        if ht["tc"] and has_delegation(r) and ref_tcp is not None and in_domain_glue(ref_tcp) - in_domain_glue(r):
            return "glue-tc"
        return "failure: TC %s, reference TC %s" % (ht["tc"], hr["tc"])
    if ht["aa"] != hr["aa"]:
        return "failure: AA %s, reference AA %s" % (ht["aa"], hr["aa"])
    at, ar = rrsets(t.answer), rrsets(r.answer)
    if qtype == dns.rdatatype.ANY and at and ar:
        return compare_any(t, r, mode, per_type)
    if at != ar:
        cn = [rr for rr in t.answer if rr.rdtype == dns.rdatatype.CNAME]
        if len(cn) == 8 and all(ar.get(k) == v for k, v in at.items()) and len(ar) > len(at):
            return "cname-hops"
        return "failure: answer section differs"
    if rrsets(t.authority) != rrsets(r.authority):
        return "failure: authority section differs"
    return extra_additional(t, r)


def main(argv):
    ap = argparse.ArgumentParser()
    ap.add_argument("zone")
    ap.add_argument("test_ip")
    ap.add_argument("ref_ip")
    ap.add_argument("--port", type=int, default=53)
    ap.add_argument("--show", type=int, default=20, help="failures shown in full")
    ap.add_argument("--tcp-per-conn", type=int, default=50, help="questions per TCP connection")
    a = ap.parse_args(argv[1:])
    global TCP_PER_CONN
    TCP_PER_CONN = a.tcp_per_conn
    # IP:PORT overrides --port for that server (a host-side run on 127.0.0.1)
    a.test, a.ref = [(ip.split(":")[0], int(ip.split(":")[1]) if ":" in ip else a.port)
                     for ip in (a.test_ip, a.ref_ip)]
    apex, names, types = zone_names(a.zone)
    qtypes = types + [t for t in EXTRA_TYPES if t not in types] + [dns.rdatatype.ANY]
    modes = list(MODES)
    caches = {}
    res = {"questions": 0, "names": 0, "types": len(qtypes), "modes": modes, "documented": {}, "failures": [],
           "failure_count": 0, "unanswered": 0}
    qnames = question_names(apex, names)
    res["names"] = len(qnames)
    qid = 1
    for name in qnames:
        per_type = {}	# the reference's TCP answer to each type, for ANY
        for qtype in qtypes:
            ref_tcp = None
            for mode in (["tcp"] + [m for m in modes if m != "tcp"]) if "tcp" in modes else modes:
                qid = qid % 65535 + 1
                q = make_query(name, qtype, mode, qid)
                tw = ask(a.test[0], a.test[1], q, MODES[mode]["tcp"], caches.setdefault("t", {}))
                rw = ask(a.ref[0], a.ref[1], q, MODES[mode]["tcp"], caches.setdefault("r", {}))
                res["questions"] += 1
                if tw is None or rw is None:
                    res["unanswered"] += 1
                    res["failures"].append({"q": [name, dns.rdatatype.to_text(qtype), mode],
                                            "why": "no answer from %s" % ("vireo" if tw is None else "reference")})
                    continue
                t, r = parse(tw), parse(rw)
                if mode == "tcp":
                    ref_tcp = r
                    if r.rcode() == dns.rcode.NOERROR and not has_delegation(r):
                        per_type[qtype] = rrsets(r.answer)
                why = compare(t, r, qtype, mode, ref_tcp, per_type)
                if why is None:
                    continue
                if not why.startswith("failure"):
                    d = res["documented"].setdefault(why, {"count": 0, "example": None})
                    d["count"] += 1
                    if d["example"] is None:
                        d["example"] = [name, dns.rdatatype.to_text(qtype), mode]
                    continue
                res["failure_count"] += 1
                if len(res["failures"]) < a.show:
                    res["failures"].append({"q": [name, dns.rdatatype.to_text(qtype), mode], "why": why,
                                            "vireo": show(t), "reference": show(r)})
    for c in caches.values():
        for s in c.values():
            s[0].close()
    print(json.dumps(res, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
