#!/usr/bin/env python3
"""mkzone.py ZONEFILE OUT.c: compiles a zone file into the C table apps/dns
serves (apps/dns/zone.h), at build time.

The input is a subset of the RFC 1035 master-file format:
  $ORIGIN name.        (absolute)         $TTL 3600 (or 1h, 30m, 2d, 1w)
  owner [ttl] [IN] TYPE rdata             (ttl and class in either order)
  a blank owner (leading space) repeats the last one; @ is the origin;
  names without a final dot are relative to $ORIGIN; ; starts a comment;
  ( ... ) continues a record over lines (SOA usually is).
Types: A, AAAA, CNAME, MX, TXT ("quoted" strings with \\" \\\\ \\DDD, or bare
words), SOA, NS. The zone's apex is its SOA's owner; every owner must be at
or below it. Anything else ($INCLUDE, other types or classes, escapes in
names, a CNAME beside other data, RRsets with mixed TTLs, a missing SOA or
apex NS, names or labels over the RFC 1035 limits) stops the build with
"FILE:LINE: what is wrong" on stderr and exit status 1.
"""
import ipaddress
import sys

TYPES = {"A": 1, "NS": 2, "CNAME": 5, "SOA": 6, "MX": 15, "TXT": 16, "AAAA": 28}
TTL_MAX = 0x7FFFFFFF	# RFC 2181 section 8


class ZoneError(Exception):
    def __init__(self, line, msg):
        super().__init__(msg)
        self.line = line
        self.msg = msg


def tokenize(text):
    """Yields (line number, starts_with_blank, [tokens]) per logical record;
    quoted strings come back as ('"', bytes)."""
    depth = 0
    open_line = 0
    toks = []
    start_line = 0
    blank_owner = False
    lines = text.split("\n")
    for num, line in enumerate(lines, 1):
        i = 0
        n = len(line)
        if depth == 0:
            toks = []
            start_line = num
            blank_owner = n > 0 and line[0] in " \t"
        while i < n:
            c = line[i]
            if c in " \t\r":
                i += 1
            elif c == ";":
                break
            elif c == "(":
                if depth:
                    raise ZoneError(num, "nested '('")
                depth = 1
                open_line = num
                i += 1
            elif c == ")":
                if not depth:
                    raise ZoneError(num, "')' without '('")
                depth = 0
                i += 1
            elif c == '"':
                i += 1
                out = bytearray()
                while True:
                    if i >= n:
                        raise ZoneError(num, "unterminated quoted string")
                    c = line[i]
                    if c == '"':
                        i += 1
                        break
                    if c == "\\":
                        if i + 4 <= n and line[i + 1:i + 4].isdigit():
                            v = int(line[i + 1:i + 4])
                            if v > 255:
                                raise ZoneError(num, "escape \\%s is over 255" % line[i + 1:i + 4])
                            out.append(v)
                            i += 4
                            continue
                        if i + 1 >= n:
                            raise ZoneError(num, "backslash at the end of a line")
                        c = line[i + 1]
                        i += 1
                    b = c.encode("utf-8")
                    out += b
                    i += 1
                toks.append(('"', bytes(out)))
            else:
                j = i
                while j < n and line[j] not in " \t\r;()\"":
                    j += 1
                toks.append(line[i:j])
                i = j
        if depth == 0 and toks:
            yield start_line, blank_owner, toks
    if depth:
        raise ZoneError(open_line, "'(' never closed")


def parse_ttl(line, s):
    units = {"s": 1, "m": 60, "h": 3600, "d": 86400, "w": 604800}
    if s.isdigit():
        v = int(s)
    else:
        v = 0
        num = ""
        for c in s.lower():
            if c.isdigit():
                num += c
            elif c in units and num:
                v += int(num) * units[c]
                num = ""
            else:
                raise ZoneError(line, "bad TTL '%s'" % s)
        if num:
            raise ZoneError(line, "bad TTL '%s'" % s)
    if v > TTL_MAX:
        raise ZoneError(line, "TTL %d is over 2^31-1" % v)
    return v


def is_ttl(s):
    if s.isdigit():
        return True
    return len(s) > 1 and s[0].isdigit() and all(c.isdigit() or c.lower() in "smhdw" for c in s) \
        and s[-1].lower() in "smhdw"


def parse_name(line, s, origin):
    """A name as a tuple of lowercase-preserving labels (absolute)."""
    if isinstance(s, tuple):
        raise ZoneError(line, "a quoted string where a name belongs")
    if "\\" in s:
        raise ZoneError(line, "escapes in names are not supported: '%s'" % s)
    if s == "@":
        if origin is None:
            raise ZoneError(line, "'@' before any $ORIGIN")
        return origin
    if s == ".":
        return ()
    absolute = s.endswith(".")
    body = s[:-1] if absolute else s
    labels = tuple(body.split("."))
    for lab in labels:
        if lab == "":
            raise ZoneError(line, "empty label in '%s'" % s)
        if len(lab.encode()) > 63:
            raise ZoneError(line, "label '%s' is over 63 bytes" % lab)
        if not all(0x21 <= ord(c) < 0x7f for c in lab):
            raise ZoneError(line, "label '%s' has a byte outside printable ASCII" % lab)
    if not absolute:
        if origin is None:
            raise ZoneError(line, "relative name '%s' before any $ORIGIN" % s)
        labels = labels + origin
    if len(wire(labels)) > 255:
        raise ZoneError(line, "name '%s' is over 255 bytes" % s)
    return labels


def wire(labels):
    out = bytearray()
    for lab in labels:
        b = lab.encode()
        out.append(len(b))
        out += b
    out.append(0)
    return bytes(out)


def key(labels):
    return wire(tuple(lab.lower() for lab in labels))


def show(labels):
    return ".".join(labels) + "." if labels else "."


def u16(v):
    return bytes([(v >> 8) & 255, v & 255])


def u32(v):
    return bytes([(v >> 24) & 255, (v >> 16) & 255, (v >> 8) & 255, v & 255])


def parse_int(line, s, what, maximum):
    if isinstance(s, tuple) or not s.isdigit() or int(s) > maximum:
        raise ZoneError(line, "bad %s '%s'" % (what, s if isinstance(s, str) else s[1].decode(errors="replace")))
    return int(s)


def parse_rdata(line, rtype, args, origin):
    """(rdata bytes, offset of a compressible name in it or None)."""
    def need(k):
        if len(args) != k:
            raise ZoneError(line, "%s takes %d field%s, got %d" % (rtype, k, "s" if k > 1 else "", len(args)))
        for a in args:
            if isinstance(a, tuple) and rtype != "TXT":
                raise ZoneError(line, "%s does not take a quoted string" % rtype)
    if rtype == "A":
        need(1)
        try:
            return ipaddress.IPv4Address(args[0]).packed, None
        except ValueError:
            raise ZoneError(line, "bad IPv4 address '%s'" % args[0])
    if rtype == "AAAA":
        need(1)
        try:
            return ipaddress.IPv6Address(args[0]).packed, None
        except ValueError:
            raise ZoneError(line, "bad IPv6 address '%s'" % args[0])
    if rtype in ("CNAME", "NS"):
        need(1)
        return wire(parse_name(line, args[0], origin)), 0
    if rtype == "MX":
        need(2)
        pref = parse_int(line, args[0], "MX preference", 65535)
        return u16(pref) + wire(parse_name(line, args[1], origin)), 2
    if rtype == "SOA":
        need(7)
        mname = wire(parse_name(line, args[0], origin))
        rname = wire(parse_name(line, args[1], origin))
        serial = parse_int(line, args[2], "SOA serial", 0xFFFFFFFF)
        nums = [parse_ttl(line, a) if is_ttl(a) else parse_int(line, a, "SOA timer", TTL_MAX) for a in args[3:]]
        return mname + rname + u32(serial) + b"".join(u32(v) for v in nums), None
    if rtype == "TXT":
        if not args:
            raise ZoneError(line, "TXT needs at least one string")
        out = bytearray()
        for a in args:
            b = a[1] if isinstance(a, tuple) else a.encode()
            if len(b) > 255:
                raise ZoneError(line, "TXT string of %d bytes is over 255" % len(b))
            out.append(len(b))
            out += b
        if len(out) > 65535:
            raise ZoneError(line, "TXT data over 65535 bytes")
        return bytes(out), None
    raise AssertionError(rtype)


def parse_zone(text):
    origin = None
    default_ttl = None
    last_owner = None
    records = []	# (line, owner labels, type name, ttl, rdata, name offset)
    for line, blank, toks in tokenize(text):
        first = toks[0]
        if isinstance(first, str) and first.startswith("$"):
            d = first.upper()
            if d == "$ORIGIN":
                if len(toks) != 2 or isinstance(toks[1], tuple) or not toks[1].endswith("."):
                    raise ZoneError(line, "$ORIGIN takes one absolute name (ending in '.')")
                origin = parse_name(line, toks[1], None)
            elif d == "$TTL":
                if len(toks) != 2 or isinstance(toks[1], tuple):
                    raise ZoneError(line, "$TTL takes one value")
                default_ttl = parse_ttl(line, toks[1])
            elif d == "$INCLUDE":
                raise ZoneError(line, "$INCLUDE is not supported (one file per zone)")
            else:
                raise ZoneError(line, "unknown directive '%s'" % first)
            continue
        i = 0
        if blank:
            if last_owner is None:
                raise ZoneError(line, "a record without an owner and no earlier one")
            owner = last_owner
        else:
            owner = parse_name(line, toks[0], origin)
            i = 1
        ttl = None
        cls_seen = False
        while i < len(toks) and isinstance(toks[i], str):
            t = toks[i]
            if is_ttl(t) and ttl is None:
                ttl = parse_ttl(line, t)
            elif t.upper() == "IN" and not cls_seen:
                cls_seen = True
            elif t.upper() in ("CH", "HS", "CS"):
                raise ZoneError(line, "class %s is not supported (IN only)" % t)
            else:
                break
            i += 1
        if i >= len(toks) or isinstance(toks[i], tuple):
            raise ZoneError(line, "record without a type")
        rtype = toks[i].upper()
        if rtype not in TYPES:
            raise ZoneError(line, "type '%s' is not supported (A, AAAA, CNAME, MX, TXT, SOA, NS)" % toks[i])
        if ttl is None:
            ttl = default_ttl
        if ttl is None:
            raise ZoneError(line, "no TTL on the record and no $TTL before it")
        rdata, off = parse_rdata(line, rtype, toks[i + 1:], origin)
        records.append((line, owner, rtype, ttl, rdata, off))
        last_owner = owner
    return records


def check_zone(records):
    soas = [r for r in records if r[2] == "SOA"]
    if not soas:
        raise ZoneError(records[-1][0] if records else 1, "the zone has no SOA record")
    if len(soas) > 1:
        raise ZoneError(soas[1][0], "a second SOA record (one zone per file)")
    apex = key(soas[0][1])
    apex_labels = soas[0][1]

    def under(k, top):
        return k == top or (k.endswith(top) and is_suffix(k, top))

    by_owner = {}
    for r in records:
        k = key(r[1])
        if not under(k, apex):
            raise ZoneError(r[0], "owner '%s' is outside the zone '%s'" % (show(r[1]), show(apex_labels)))
        by_owner.setdefault(k, []).append(r)
    if not any(r[2] == "NS" for r in by_owner[apex]):
        raise ZoneError(soas[0][0], "the apex '%s' has no NS record" % show(apex_labels))
    cuts = [k for k, rs in by_owner.items() if k != apex and any(r[2] == "NS" for r in rs)]
    seen = set()
    for k, rs in by_owner.items():
        types = {r[2] for r in rs}
        if "CNAME" in types:
            if k == apex:
                raise ZoneError([r for r in rs if r[2] == "CNAME"][0][0], "a CNAME at the zone's apex")
            if len(types) > 1 or len(rs) > 1:
                bad = [r for r in rs if r[2] != "CNAME"] or rs[1:]
                raise ZoneError(bad[0][0], "'%s' has a CNAME and other data" % show(rs[0][1]))
        for t in types:
            ttls = {r[3] for r in rs if r[2] == t}
            if len(ttls) > 1:
                r = [r for r in rs if r[2] == t][-1]
                raise ZoneError(r[0], "the %s RRset of '%s' has different TTLs" % (t, show(r[1])))
        for r in rs:
            ident = (k, r[2], r[4])
            if ident in seen:
                raise ZoneError(r[0], "duplicate %s record for '%s'" % (r[2], show(r[1])))
            seen.add(ident)
            for c in cuts:
                if under(k, c) and (k != c or r[2] != "NS") and r[2] not in ("A", "AAAA"):
                    raise ZoneError(r[0], "%s record at '%s' is below the delegation '%s' (only A/AAAA glue may be)"
                                    % (r[2], show(r[1]), show_key(c)))
    return apex


def is_suffix(k, top):
    """k (wire) ends with the whole-label name top."""
    i = 0
    while i < len(k):
        if k[i:] == top:
            return True
        i += k[i] + 1
    return False


def show_key(k):
    labels = []
    i = 0
    while k[i]:
        labels.append(k[i + 1:i + 1 + k[i]].decode())
        i += k[i] + 1
    return show(tuple(labels))


def c_bytes(b):
    return ", ".join("0x%02x" % x for x in b) if b else "0"


def emit(records, apex, src):
    rrs = sorted(records, key=lambda r: (key(r[1]), TYPES[r[2]], r[0]))
    nodes = set()
    for r in rrs:
        k = key(r[1])
        while True:	# the owner and every name between it and the apex (empty non-terminals)
            nodes.add(k)
            if k == apex:
                break
            k = k[k[0] + 1:]
    nodes = sorted(nodes)
    out = ["/* Generated by apps/dns/mkzone.py from %s; do not edit. */" % src,
           '#include "apps/dns/zone.h"', ""]
    names = {}
    for k in nodes:
        names[k] = "dz_n%d" % len(names)
        out.append("static const u8 %s[] = { %s };" % (names[k], c_bytes(k)))
    for n, r in enumerate(rrs):
        out.append("static const u8 dz_r%d[] = { %s };" % (n, c_bytes(r[4])))
    out.append("")
    out.append("static const struct dns_rr dz_rrs[] = {")
    for n, r in enumerate(rrs):
        k = key(r[1])
        off = "DNS_RR_NO_NAME" if r[5] is None else str(r[5])
        out.append("\t{ %s, %d, %d, %d, dz_r%d, %d, %s },\t/* %s %s, line %d */" %
                   (names[k], len(k), TYPES[r[2]], r[3], n, len(r[4]), off, show(r[1]), r[2], r[0]))
    out.append("};")
    out.append("static const struct dns_name dz_nodes[] = {")
    for k in nodes:
        out.append("\t{ %s, %d }," % (names[k], len(k)))
    out.append("};")
    out.append("const struct dns_zone dns_zone_table = {")
    out.append("\t.apex = { %s, %d }," % (names[apex], len(apex)))
    out.append("\t.rrs = dz_rrs,\n\t.nrrs = %d," % len(rrs))
    out.append("\t.nodes = dz_nodes,\n\t.nnodes = %d," % len(nodes))
    out.append("};")
    return "\n".join(out) + "\n"


def main(argv):
    if len(argv) != 3:
        print("usage: mkzone.py ZONEFILE OUT.c", file=sys.stderr)
        return 2
    path, dst = argv[1], argv[2]
    try:
        with open(path, encoding="utf-8") as f:
            text = f.read()
    except (OSError, UnicodeDecodeError) as e:
        print("%s: cannot read: %s" % (path, e), file=sys.stderr)
        return 1
    try:
        records = parse_zone(text)
        if not records:
            raise ZoneError(1, "the zone has no records")
        apex = check_zone(records)
    except ZoneError as e:
        print("%s:%d: %s" % (path, e.line, e.msg), file=sys.stderr)
        return 1
    if len(records) > 65535:
        print("%s: %d records, over the table's 65535" % (path, len(records)), file=sys.stderr)
        return 1
    c = emit(records, apex, path)
    with open(dst + ".tmp", "w") as f:
        f.write(c)
    import os
    os.replace(dst + ".tmp", dst)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
