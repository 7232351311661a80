#!/usr/bin/env python3
"""mkzone.py ZONEFILE [OUT.c] [--bin OUT.bin]: compiles a zone file into the
image apps/dns serves (apps/dns/zone.h describes its layout), at build time:
OUT.c carries it as the built-in zone; OUT.bin is the same bytes for the ESP
(EFI/vireo/app/zone.bin replaces the built-in zone at boot, no rebuild).
mkzone.py --dump ZONE.bin lists an image's records (RFC 3597 form).

The input is a subset of the RFC 1035 master-file format:
  $ORIGIN name.        (absolute)         $TTL 3600 (or 1h, 30m, 2d, 1w)
  owner [ttl] [IN] TYPE rdata             (ttl and class in either order)
  a blank owner (leading space) repeats the last one; @ is the origin;
  names without a final dot are relative to $ORIGIN; ; starts a comment;
  ( ... ) continues a record over lines (SOA usually is).
Types: A, AAAA, NS, CNAME, SOA, PTR, MX, TXT, SRV, DS, CAA, SVCB, HTTPS, and
any other type as TYPEnnn in RFC 3597's form (\\# length hex). A '*' as the
first label is a wildcard (RFC 4592). The zone's apex is its SOA's owner;
every owner must be at or below it. What the server cannot serve stops the
build with "FILE:LINE: what is wrong" on stderr and exit status 1:
$INCLUDE, classes other than IN, escapes in names, a CNAME beside other data,
RRsets with mixed TTLs, a missing SOA or apex NS, names or labels over the
RFC 1035 limits, DNSSEC records other than DS, DNAME, meta types, data below
a delegation other than glue, DS anywhere but at a delegation, a wildcard
NS, an RRset too big for one TCP answer.
"""
import base64
import ipaddress
import os
import struct
import sys

TYPES = {"A": 1, "NS": 2, "CNAME": 5, "SOA": 6, "PTR": 12, "MX": 15, "TXT": 16, "AAAA": 28, "SRV": 33,
         "DS": 43, "SVCB": 64, "HTTPS": 65, "CAA": 257}
NAMES = {v: k for k, v in TYPES.items()}
# Types that stop the build, with the reason.
REFUSED = {
    39: "DNAME is not supported",
    41: "OPT is a pseudo-record, not zone data",
    46: "DNSSEC signatures are not served (no signing, no DNSSEC processing)",
    47: "DNSSEC records other than DS are not served (no signing, no DNSSEC processing)",
    48: "DNSSEC keys are not served (no signing, no DNSSEC processing)",
    50: "DNSSEC records other than DS are not served (no signing, no DNSSEC processing)",
    51: "DNSSEC records other than DS are not served (no signing, no DNSSEC processing)",
    0: "type 0 is reserved",
}
KNOWN_NAMES = {"DNAME": 39, "OPT": 41, "RRSIG": 46, "NSEC": 47, "DNSKEY": 48, "NSEC3": 50, "NSEC3PARAM": 51,
               "TSIG": 250, "TKEY": 249, "IXFR": 251, "AXFR": 252, "MAILB": 253, "MAILA": 254, "ANY": 255}
# Types whose rdata holds a name the server compresses or follows: only in
# their own presentation form, never as \\# data.
NAMED_RDATA = {2, 5, 6, 12, 15, 33}
TTL_MAX = 0x7FFFFFFF	# RFC 2181 section 8
# An RRset's records as written in one answer (each: a 2-byte owner pointer,
# 10 bytes of type, class, TTL and length, then its data) must fit the TCP
# answer buffer (8,192 bytes) with room to spare for the header, a question
# of up to 259 bytes, a CNAME or two and the OPT record with its options.
RRSET_MAX = 7680
TCP_ANSWER_MAX = 8192

# The compiled zone (zone.h): a 64-byte header, nodes, records, data.
MAGIC = b"VIREODNS"
FORMAT = 1
CHECK_KEY = b"vireo dns zone 1"
HDR_LEN = 64
NODE_LEN = 16
RR_LEN = 16
NODE_DELEG = 1
NODE_WILD = 2
NO_OFF = 0xFFFF


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
    """A name as a tuple of case-preserving labels (absolute)."""
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
    return struct.pack(">H", v)


def u32(v):
    return struct.pack(">I", v)


def text_of(a):
    return a if isinstance(a, str) else a[1].decode(errors="replace")


def parse_int(line, s, what, maximum):
    if isinstance(s, tuple) or not s.isdigit() or int(s) > maximum:
        raise ZoneError(line, "bad %s '%s'" % (what, text_of(s)))
    return int(s)


def parse_hex(line, toks, what):
    h = "".join(text_of(t) for t in toks)
    if len(h) % 2 or not all(c in "0123456789abcdefABCDEF" for c in h):
        raise ZoneError(line, "bad %s (hex digits in pairs): '%s'" % (what, h))
    return bytes.fromhex(h)


def need(line, rtype, args, k):
    if len(args) != k:
        raise ZoneError(line, "%s takes %d field%s, got %d" % (rtype, k, "s" if k > 1 else "", len(args)))


def no_quotes(line, rtype, args):
    for a in args:
        if isinstance(a, tuple):
            raise ZoneError(line, "%s does not take a quoted string" % rtype)


def svc_list(line, value, what):
    """A comma-separated SvcParam value list (RFC 9460 A.1): '\\,' keeps a comma."""
    items, cur, i = [], bytearray(), 0
    while i < len(value):
        c = value[i]
        if c == 0x5C and i + 1 < len(value):
            cur.append(value[i + 1])
            i += 2
            continue
        if c == 0x2C:
            items.append(bytes(cur))
            cur = bytearray()
        else:
            cur.append(c)
        i += 1
    items.append(bytes(cur))
    if any(not it for it in items):
        raise ZoneError(line, "empty item in the %s list" % what)
    return items


SVC_KEYS = {"mandatory": 0, "alpn": 1, "no-default-alpn": 2, "port": 3, "ipv4hint": 4, "ech": 5,
            "ipv6hint": 6, "dohpath": 7}


def svc_key(line, name):
    if name in SVC_KEYS:
        return SVC_KEYS[name]
    if name.startswith("key") and name[3:].isdigit() and int(name[3:]) <= 65535:
        return int(name[3:])
    raise ZoneError(line, "unknown SvcParam key '%s'" % name)


def parse_svcb(line, rtype, args, origin):
    if len(args) < 2:
        raise ZoneError(line, "%s takes a priority, a target and parameters" % rtype)
    no_quotes(line, rtype, args[:2])
    prio = parse_int(line, args[0], "%s priority" % rtype, 65535)
    target = wire(parse_name(line, args[1], origin))
    params = {}
    i = 2
    while i < len(args):
        a = args[i]
        if isinstance(a, tuple):
            raise ZoneError(line, "a quoted string where a SvcParam belongs")
        if "=" in a:
            name, val = a.split("=", 1)
            if val == "" and i + 1 < len(args) and isinstance(args[i + 1], tuple):
                value = args[i + 1][1]	# key="quoted value"
                i += 1
            else:
                value = val.encode()
        else:
            name, value = a, None
        i += 1
        k = svc_key(line, name.lower())
        if k in params:
            raise ZoneError(line, "SvcParam '%s' given twice" % name)
        params[k] = (name, value)
    if prio == 0 and params:
        raise ZoneError(line, "%s in AliasMode (priority 0) takes no parameters" % rtype)
    out = bytearray(u16(prio) + target)
    for k in sorted(params):
        name, value = params[k]
        if k == 2:
            if value is not None:
                raise ZoneError(line, "no-default-alpn takes no value")
            data = b""
        else:
            if value is None or value == b"":
                raise ZoneError(line, "SvcParam '%s' needs a value" % name)
            if k == 0:
                keys = sorted(svc_key(line, x.decode().lower()) for x in svc_list(line, value, "mandatory"))
                if len(set(keys)) != len(keys) or 0 in keys:
                    raise ZoneError(line, "bad mandatory list '%s'" % value.decode())
                data = b"".join(u16(x) for x in keys)
            elif k == 1:
                items = svc_list(line, value, "alpn")
                if any(len(x) > 255 for x in items):
                    raise ZoneError(line, "an alpn id over 255 bytes")
                data = b"".join(bytes([len(x)]) + x for x in items)
            elif k == 3:
                data = u16(parse_int(line, value.decode(), "port", 65535))
            elif k in (4, 6):
                data = b""
                for x in svc_list(line, value, name):
                    try:
                        ip = (ipaddress.IPv4Address if k == 4 else ipaddress.IPv6Address)(x.decode())
                    except ValueError:
                        raise ZoneError(line, "bad address '%s' in %s" % (x.decode(errors="replace"), name))
                    data += ip.packed
            elif k == 5:
                try:
                    data = base64.b64decode(value, validate=True)
                except ValueError:
                    raise ZoneError(line, "bad base64 in ech")
            else:
                data = value
        if len(data) > 65535:
            raise ZoneError(line, "SvcParam '%s' is over 65535 bytes" % name)
        out += u16(k) + u16(len(data)) + data
    if 0 in params:
        for x in svc_list(line, params[0][1], "mandatory"):
            if svc_key(line, x.decode().lower()) not in params:
                raise ZoneError(line, "mandatory key '%s' is not in the record" % x.decode())
    return bytes(out)


def parse_rdata(line, rtype, args, origin):
    """(rdata bytes, offset of a name written compressed or None, offset of a
    name whose addresses go in additional data or None)."""
    if rtype.startswith("TYPE"):
        return parse_unknown(line, rtype, args), None, None
    if args and args[0] == "\\#":
        t = TYPES[rtype]
        if t in NAMED_RDATA:
            raise ZoneError(line, "%s must be written in its own form, not as \\# data" % rtype)
        data = parse_unknown(line, rtype, args)
        if (t == 1 and len(data) != 4) or (t == 28 and len(data) != 16):
            raise ZoneError(line, "%s data of %d bytes" % (rtype, len(data)))
        return data, None, None
    if rtype not in ("TXT", "CAA", "SVCB", "HTTPS"):
        no_quotes(line, rtype, args)
    if rtype == "A":
        need(line, rtype, args, 1)
        try:
            return ipaddress.IPv4Address(args[0]).packed, None, None
        except ValueError:
            raise ZoneError(line, "bad IPv4 address '%s'" % args[0])
    if rtype == "AAAA":
        need(line, rtype, args, 1)
        try:
            return ipaddress.IPv6Address(args[0]).packed, None, None
        except ValueError:
            raise ZoneError(line, "bad IPv6 address '%s'" % args[0])
    if rtype in ("NS", "CNAME", "PTR"):
        need(line, rtype, args, 1)
        return wire(parse_name(line, args[0], origin)), 0, 0 if rtype == "NS" else None
    if rtype == "MX":
        need(line, rtype, args, 2)
        pref = parse_int(line, args[0], "MX preference", 65535)
        return u16(pref) + wire(parse_name(line, args[1], origin)), 2, 2
    if rtype == "SRV":
        need(line, rtype, args, 4)
        nums = [parse_int(line, a, "SRV " + w, 65535) for a, w in zip(args, ("priority", "weight", "port"))]
        return b"".join(u16(v) for v in nums) + wire(parse_name(line, args[3], origin)), None, 6
    if rtype == "SOA":
        need(line, rtype, args, 7)
        mname = wire(parse_name(line, args[0], origin))
        rname = wire(parse_name(line, args[1], origin))
        serial = parse_int(line, args[2], "SOA serial", 0xFFFFFFFF)
        nums = [parse_ttl(line, a) if is_ttl(a) else parse_int(line, a, "SOA timer", TTL_MAX) for a in args[3:]]
        return mname + rname + u32(serial) + b"".join(u32(v) for v in nums), None, None
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
        return bytes(out), None, None
    if rtype == "DS":
        if len(args) < 4:
            raise ZoneError(line, "DS takes a key tag, an algorithm, a digest type and a digest")
        tag = parse_int(line, args[0], "DS key tag", 65535)
        alg = parse_int(line, args[1], "DS algorithm", 255)
        dt = parse_int(line, args[2], "DS digest type", 255)
        digest = parse_hex(line, args[3:], "DS digest")
        sizes = {1: 20, 2: 32, 4: 48}
        if not digest or (dt in sizes and len(digest) != sizes[dt]):
            raise ZoneError(line, "DS digest of %d bytes for digest type %d" % (len(digest), dt))
        return u16(tag) + bytes([alg, dt]) + digest, None, None
    if rtype == "CAA":
        need(line, rtype, args, 3)
        no_quotes(line, rtype, args[:2])
        flags = parse_int(line, args[0], "CAA flags", 255)
        tag = args[1]
        if not (1 <= len(tag) <= 15 and tag.isalnum() and tag.isascii()):
            raise ZoneError(line, "bad CAA tag '%s' (1 to 15 letters and digits)" % tag)
        value = args[2][1] if isinstance(args[2], tuple) else args[2].encode()
        return bytes([flags, len(tag)]) + tag.encode() + value, None, None
    if rtype in ("SVCB", "HTTPS"):
        return parse_svcb(line, rtype, args, origin), None, None
    raise AssertionError(rtype)


def parse_unknown(line, rtype, args):
    """RFC 3597: \\# LENGTH HEX..."""
    if len(args) < 2 or args[0] != "\\#":
        raise ZoneError(line, "%s data must be written as \\# length hex (RFC 3597)" % rtype)
    n = parse_int(line, args[1], "RFC 3597 length", 65535)
    data = parse_hex(line, args[2:], "RFC 3597 data")
    if len(data) != n:
        raise ZoneError(line, "RFC 3597 length %d but %d bytes of data" % (n, len(data)))
    return data


def type_code(line, tok):
    t = tok.upper()
    if t in TYPES:
        return t, TYPES[t]
    if t.startswith("TYPE") and t[4:].isdigit():
        v = int(t[4:])
        if v > 65535:
            raise ZoneError(line, "type number %d is over 65535" % v)
        if v in NAMES:
            return NAMES[v], v	# TYPE1 is A
        if v in REFUSED:
            raise ZoneError(line, "type %s: %s" % (tok, REFUSED[v]))
        if 128 <= v <= 255:
            raise ZoneError(line, "type %s is a meta or query type, not zone data" % tok)
        return "TYPE%d" % v, v
    if t in KNOWN_NAMES:
        v = KNOWN_NAMES[t]
        raise ZoneError(line, "type %s: %s" % (tok, REFUSED.get(v, "a meta or query type, not zone data")))
    raise ZoneError(line, "type '%s' is not supported (A, AAAA, NS, CNAME, SOA, PTR, MX, TXT, SRV, DS, CAA, "
                    "SVCB, HTTPS, or TYPEnnn \\# for any other)" % tok)


def parse_zone(text):
    origin = None
    default_ttl = None
    last_owner = None
    records = []	# (line, owner labels, type name, type code, ttl, rdata, compressed off, additional off)
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
            elif t.upper() in ("IN", "CLASS1") and not cls_seen:
                cls_seen = True
            elif t.upper() in ("CH", "HS", "CS", "NONE", "ANY") or t.upper().startswith("CLASS"):
                raise ZoneError(line, "class %s is not supported (IN only)" % t)
            else:
                break
            i += 1
        if i >= len(toks) or isinstance(toks[i], tuple):
            raise ZoneError(line, "record without a type")
        rtype, code = type_code(line, toks[i])
        if ttl is None:
            ttl = default_ttl
        if ttl is None:
            raise ZoneError(line, "no TTL on the record and no $TTL before it")
        rdata, off, add = parse_rdata(line, rtype, toks[i + 1:], origin)
        if len(rdata) > 65535:
            raise ZoneError(line, "%s data of %d bytes is over 65535" % (rtype, len(rdata)))
        records.append((line, owner, rtype, code, ttl, rdata, off, add))
        last_owner = owner
    return records


def is_suffix(k, top):
    """k (wire) ends with the whole-label name top."""
    i = 0
    while i < len(k):
        if k[i:] == top:
            return True
        i += k[i] + 1
    return False


def parent(k):
    return k[k[0] + 1:]


def show_key(k):
    labels = []
    i = 0
    while k[i]:
        labels.append(k[i + 1:i + 1 + k[i]].decode())
        i += k[i] + 1
    return show(tuple(labels))


def check_zone(records):
    soas = [r for r in records if r[2] == "SOA"]
    if not soas:
        raise ZoneError(records[-1][0] if records else 1, "the zone has no SOA record")
    if len(soas) > 1:
        raise ZoneError(soas[1][0], "a second SOA record (one zone per file)")
    apex = key(soas[0][1])
    apex_labels = soas[0][1]

    by_owner = {}
    for r in records:
        k = key(r[1])
        if not is_suffix(k, apex):
            raise ZoneError(r[0], "owner '%s' is outside the zone '%s'" % (show(r[1]), show(apex_labels)))
        by_owner.setdefault(k, []).append(r)
    if not any(r[2] == "NS" for r in by_owner[apex]):
        raise ZoneError(soas[0][0], "the apex '%s' has no NS record" % show(apex_labels))
    cuts = [k for k, rs in by_owner.items() if k != apex and any(r[2] == "NS" for r in rs)]
    seen = set()
    for k, rs in by_owner.items():
        types = {r[2] for r in rs}
        wild = k[:2] == b"\x01*"
        if "CNAME" in types:
            if k == apex:
                raise ZoneError([r for r in rs if r[2] == "CNAME"][0][0], "a CNAME at the zone's apex")
            if len(types) > 1 or len(rs) > 1:
                bad = [r for r in rs if r[2] != "CNAME"] or rs[1:]
                raise ZoneError(bad[0][0], "'%s' has a CNAME and other data" % show(rs[0][1]))
        if wild and "NS" in types:
            raise ZoneError([r for r in rs if r[2] == "NS"][0][0],
                            "a wildcard NS '%s' (RFC 4592 4.2: a delegation needs a name of its own)"
                            % show(rs[0][1]))
        if "DS" in types and (k == apex or "NS" not in types):
            raise ZoneError([r for r in rs if r[2] == "DS"][0][0],
                            "DS at '%s', which is not a delegation (DS belongs at the parent side of a cut)"
                            % show(rs[0][1]))
        for t in types:
            same = [r for r in rs if r[2] == t]
            if len({r[4] for r in same}) > 1:
                raise ZoneError(same[-1][0], "the %s RRset of '%s' has different TTLs" % (t, show(same[-1][1])))
            size = sum(12 + len(r[5]) for r in same)
            if size > RRSET_MAX:
                raise ZoneError(same[-1][0], "the %s RRset of '%s' is %d bytes, over the %d one answer can hold "
                                "(a TCP answer is at most %d bytes)" % (t, show(same[-1][1]), size, RRSET_MAX,
                                                                        TCP_ANSWER_MAX))
        for r in rs:
            ident = (k, r[3], r[5])
            if ident in seen:
                raise ZoneError(r[0], "duplicate %s record for '%s'" % (r[2], show(r[1])))
            seen.add(ident)
            for c in cuts:
                if not is_suffix(k, c) or r[2] in ("A", "AAAA"):
                    continue
                if k == c and r[2] in ("NS", "DS"):
                    continue
                raise ZoneError(r[0], "%s record at '%s' is below the delegation '%s' (only A/AAAA glue may be)"
                                % (r[2], show(r[1]), show_key(c)))
    return apex


# ---- the compiled form ----

def _rotl(x, b):
    return ((x << b) | (x >> (64 - b))) & 0xFFFFFFFFFFFFFFFF


def siphash24(k, data):
    """SipHash-2-4 as kernel/siphash.c computes it (k: 16 bytes)."""
    m64 = 0xFFFFFFFFFFFFFFFF
    k0, k1 = struct.unpack("<QQ", k)
    v = [k0 ^ 0x736F6D6570736575, k1 ^ 0x646F72616E646F6D, k0 ^ 0x6C7967656E657261, k1 ^ 0x7465646279746573]

    def rnd():
        v[0] = (v[0] + v[1]) & m64
        v[1] = _rotl(v[1], 13) ^ v[0]
        v[0] = _rotl(v[0], 32)
        v[2] = (v[2] + v[3]) & m64
        v[3] = _rotl(v[3], 16) ^ v[2]
        v[0] = (v[0] + v[3]) & m64
        v[3] = _rotl(v[3], 21) ^ v[0]
        v[2] = (v[2] + v[1]) & m64
        v[1] = _rotl(v[1], 17) ^ v[2]
        v[2] = _rotl(v[2], 32)

    full = len(data) & ~7
    for i in range(0, full, 8):
        m = struct.unpack_from("<Q", data, i)[0]
        v[3] ^= m
        rnd()
        rnd()
        v[0] ^= m
    last = (len(data) & 0xFF) << 56
    for i, b in enumerate(data[full:]):
        last |= b << (8 * i)
    v[3] ^= last
    rnd()
    rnd()
    v[0] ^= last
    v[2] ^= 0xFF
    for _ in range(4):
        rnd()
    return v[0] ^ v[1] ^ v[2] ^ v[3]


def compile_zone(records, apex):
    """The zone image (bytes) of zone.h's layout."""
    owners = {}
    for r in records:
        owners.setdefault(key(r[1]), []).append(r)
    nodes = set()
    for k in owners:
        while True:	# the owner and every name between it and the apex (empty non-terminals)
            nodes.add(k)
            if k == apex:
                break
            k = parent(k)
    node_set = nodes
    nodes = sorted(nodes)
    data = bytearray()
    name_off = {}
    for k in nodes:
        name_off[k] = len(data)
        data += k
    node_tab = bytearray()
    rr_tab = bytearray()
    nrr = 0
    serial = 0
    for k in nodes:
        rs = sorted(owners.get(k, []), key=lambda r: (r[3], r[0]))
        flags = 0
        if k != apex and any(r[2] == "NS" for r in rs):
            flags |= NODE_DELEG
        if b"\x01*" + k in node_set:
            flags |= NODE_WILD
        node_tab += struct.pack("<IHHII", name_off[k], len(k), flags, nrr, len(rs))
        for r in rs:
            if r[2] == "SOA":
                serial = struct.unpack_from(">I", r[5], len(r[5]) - 20)[0]
            while len(data) % 2:
                data.append(0)
            rr_tab += struct.pack("<HHIIHH", r[3], len(r[5]), r[4], len(data),
                                  NO_OFF if r[6] is None else r[6], NO_OFF if r[7] is None else r[7])
            data += r[5]
            nrr += 1
    while len(data) % 8:
        data.append(0)
    nodes_off = HDR_LEN
    rrs_off = nodes_off + len(node_tab)
    data_off = rrs_off + len(rr_tab)
    total = data_off + len(data)
    body = struct.pack("<IIIIIIIII", serial, nodes.index(apex), len(nodes), nrr, nodes_off, rrs_off, data_off,
                       len(data), 0) + bytes(HDR_LEN - 24 - 36) + node_tab + rr_tab + data
    check = siphash24(CHECK_KEY, body)
    return MAGIC + struct.pack("<IIQ", FORMAT, total, check) + body


def emit_c(blob, src):
    out = ["/* Generated by apps/dns/mkzone.py from %s; do not edit. The compiled" % src,
           " * zone (apps/dns/zone.h), checked by dns_zone_open() at boot like one from the ESP. */",
           '#include "zone.h"', "",
           "const u8 dns_zone_builtin[] __attribute__((aligned(8))) = {"]
    for i in range(0, len(blob), 16):
        out.append("\t" + ", ".join("0x%02x" % b for b in blob[i:i + 16]) + ",")
    out.append("};")
    out.append("const u32 dns_zone_builtin_len = %d;" % len(blob))
    return "\n".join(out) + "\n"


def read_image(blob):
    """The records of a compiled zone: [(owner text, ttl, type code, rdata)],
    after checking its header and checksum (ValueError otherwise)."""
    if len(blob) < HDR_LEN or blob[:8] != MAGIC:
        raise ValueError("not a zone image")
    fmt, total, check = struct.unpack_from("<IIQ", blob, 8)
    if fmt != FORMAT or total != len(blob) or siphash24(CHECK_KEY, blob[24:]) != check:
        raise ValueError("bad format, length or checksum")
    serial, apex, nnodes, nrrs, nodes_off, rrs_off, data_off, data_len, _ = struct.unpack_from("<9I", blob, 24)
    data = blob[data_off:data_off + data_len]
    out = []
    for i in range(nnodes):
        name, name_len, flags, first, count = struct.unpack_from("<IHHII", blob, nodes_off + 16 * i)
        owner = show_key(data[name:name + name_len])
        for k in range(first, first + count):
            rtype, rdlen, ttl, rd, _, _ = struct.unpack_from("<HHIIHH", blob, rrs_off + 16 * k)
            out.append((owner, ttl, rtype, bytes(data[rd:rd + rdlen])))
    return out


def write(dst, data, mode):
    with open(dst + ".tmp", mode) as f:
        f.write(data)
    os.replace(dst + ".tmp", dst)


def main(argv):
    args = argv[1:]
    if len(args) == 2 and args[0] == "--dump":
        try:
            with open(args[1], "rb") as f:
                recs = read_image(f.read())
        except (OSError, ValueError) as e:
            print("%s: %s" % (args[1], e), file=sys.stderr)
            return 1
        for owner, ttl, rtype, rd in recs:
            print("%s %d %s \\# %d %s" % (owner, ttl, NAMES.get(rtype, "TYPE%d" % rtype), len(rd), rd.hex()))
        return 0
    out_bin = None
    if "--bin" in args:
        i = args.index("--bin")
        if i + 1 >= len(args):
            args = []
        else:
            out_bin = args[i + 1]
            del args[i:i + 2]
    if len(args) not in (1, 2) or (len(args) == 1 and not out_bin):
        print("usage: mkzone.py ZONEFILE [OUT.c] [--bin OUT.bin]", file=sys.stderr)
        return 2
    path = args[0]
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
    blob = compile_zone(records, apex)
    if len(records) > 1000000 or len(blob) > 0x7FFFFFFF:
        print("%s: %d records, %d bytes: too large" % (path, len(records), len(blob)), file=sys.stderr)
        return 1
    if len(args) == 2:
        write(args[1], emit_c(blob, path), "w")
    if out_bin:
        write(out_bin, blob, "wb")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
