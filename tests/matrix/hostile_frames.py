"""Hostile frames for the guest, built with scapy and written to the tap
device through a raw packet socket (run inside the test's namespace).

    hostile_frames.py PHASE IFACE GUEST_IP HOST_IP [SEED]

PHASE garbage: malformed Ethernet/ARP/IPv4/IPv6/TCP/UDP/ICMP in every way
listed below, oversized frames, and random mutations of valid packets.
PHASE csum: 50 TCP SYNs with a bad TCP checksum, 50 UDP echo datagrams with
a bad UDP checksum, 50 ICMP echos with a bad IPv4 header checksum.
PHASE synflood: 5000 SYNs to port 80, 4000 from the host's address and
random ports (the host answers the SYN-ACKs with RSTs) and 1000 from
addresses nobody answers ARP for (half-open until lwIP gives up).

Frames go out in bursts with short pauses so the guest's receive ring, not
the tap queue, sees most of them; nothing depends on how many arrive. Prints
one line per category with the number of frames sent."""
import random
import socket
import struct
import sys
import time

from scapy.all import (ARP, ICMP, IP, TCP, UDP, Ether, ICMPv6EchoRequest, ICMPv6ND_NA, ICMPv6ND_NS,
                       ICMPv6ND_RA, ICMPv6NDOptPrefixInfo, ICMPv6NDOptSrcLLAddr, IPv6, IPv6ExtHdrDestOpt,
                       IPv6ExtHdrFragment, IPv6ExtHdrHopByHop, IPv6ExtHdrRouting, Raw, conf, fragment)

conf.verb = 0
GUEST_MAC = "52:54:00:12:34:56"
GUEST_LL = "fe80::5054:ff:fe12:3456"
HOST_LL = "fe80::1"


def main():
    phase, iface, gip, hip = sys.argv[1:5]
    seed = int(sys.argv[5]) if len(sys.argv) > 5 else 1
    rnd = random.Random(seed)
    with open(f"/sys/class/net/{iface}/address") as f:
        hmac = f.read().strip()
    out = Sender(iface)
    gen = {"garbage": garbage, "csum": bad_checksums, "synflood": synflood}[phase]
    for name, frames in gen(rnd, gip, hip, hmac):
        n = out.send_all(frames)
        print(f"{name} {n}", flush=True)
    print(f"total {out.sent} errors {out.errors}", flush=True)


class Sender:
    def __init__(self, iface, burst=64, pause=0.01):
        self.s = socket.socket(socket.AF_PACKET, socket.SOCK_RAW)
        self.s.bind((iface, 0))
        self.burst, self.pause = burst, pause
        self.sent = self.errors = 0
        self.in_burst = 0

    def send_all(self, frames):
        n = 0
        for fr in frames:
            fr = bytes(fr)
            try:
                self.s.send(fr)
                n += 1
                self.sent += 1
            except OSError:
                self.errors += 1
            self.in_burst += 1
            if self.in_burst >= self.burst:
                self.in_burst = 0
                time.sleep(self.pause)
        return n


def eth(hmac, dst=GUEST_MAC, type=None):
    return Ether(dst=dst, src=hmac) if type is None else Ether(dst=dst, src=hmac, type=type)


def rmac(rnd):
    return "02:" + ":".join(f"{rnd.randrange(256):02x}" for _ in range(5))


def rbytes(rnd, n):
    return bytes(rnd.randrange(256) for _ in range(n))


def flip(rnd, raw, start, count):
    b = bytearray(raw)
    for _ in range(count):
        i = rnd.randrange(start, len(b))
        b[i] ^= 1 << rnd.randrange(8)
    return bytes(b)


def garbage(rnd, gip, hip, hmac):
    e = lambda **kw: eth(hmac, **kw)  # noqa: E731
    syn = IP(src=hip, dst=gip) / TCP(sport=40000, dport=80, flags="S", seq=1)

    # truncated Ethernet: a bare header of each type, and a few bytes more
    yield "truncated-ethernet", [bytes(e(type=t)) + rbytes(rnd, k)
                                 for t in (0x0800, 0x86DD, 0x0806, 0x8100, 0x88CC, 0x1234)
                                 for k in range(0, 20)]

    # truncated IPv4 and TCP headers (the IP length says more than is there)
    whole = bytes(syn)
    yield "truncated-ip-tcp", [bytes(e(type=0x0800)) + whole[:k] for k in range(1, len(whole))] * 3

    # IHL below 5, beyond the packet, total lengths that lie, options garbage
    frames = []
    for ihl in list(range(0, 5)) + [15]:
        frames.append(e() / IP(src=hip, dst=gip, ihl=ihl) / TCP(dport=80, flags="S"))
    for ln in (0, 1, 19, 20, 21, 39, 41, 100, 1500, 65535):
        frames.append(e() / IP(src=hip, dst=gip, len=ln) / TCP(dport=80, flags="S"))
        frames.append(e() / IP(src=hip, dst=gip, len=ln) / UDP(dport=7) / Raw(b"x" * 32))
    for _ in range(100):
        frames.append(e() / IP(src=hip, dst=gip, ihl=rnd.randrange(6, 16), options=[]) /
                      Raw(rbytes(rnd, rnd.randrange(0, 80))))
        frames.append(e() / IP(src=hip, dst=gip, version=rnd.choice([0, 5, 6, 15])) / UDP(dport=7) / Raw(b"v"))
        frames.append(e() / IP(src=hip, dst=gip, proto=rnd.randrange(256)) / Raw(rbytes(rnd, 40)))
    for src in ("0.0.0.0", "255.255.255.255", "127.0.0.1", "224.0.0.1", gip):
        frames.append(e() / IP(src=src, dst=gip) / TCP(dport=80, flags="S"))
        frames.append(e() / IP(src=src, dst=gip) / UDP(sport=7, dport=7) / Raw(b"loop?"))
    yield "bad-ip-headers", frames

    # TCP: short headers, data offsets out of range, option garbage
    frames = []
    for k in range(0, 20):
        frames.append(e() / IP(src=hip, dst=gip, proto=6) / Raw(bytes(TCP(dport=80, flags="S"))[:k]))
    for off in list(range(0, 5)) + [6, 10, 15]:
        frames.append(e() / IP(src=hip, dst=gip) / TCP(sport=40001, dport=80, flags="S", dataofs=off))
    opts = [b"\x02\x00", b"\x02\x01", b"\x02\x04", b"\x02\xff", b"\x03\x00", b"\x03\x01\x0e", b"\x08\x0a",
            b"\x01" * 40, b"\x00" + b"\xff" * 39, b"\x04\x00", b"\x05\x02", b"\x05\xff"]
    for o in opts:
        o = (o + b"\x00" * 40)[: max(4, (len(o) + 3) // 4 * 4)]
        frames.append(e() / IP(src=hip, dst=gip) /
                      TCP(sport=rnd.randrange(1024, 65536), dport=80, flags="S", dataofs=5 + len(o) // 4) / Raw(o))
    for _ in range(300):
        o = rbytes(rnd, 4 * rnd.randrange(1, 11))
        frames.append(e() / IP(src=hip, dst=gip) /
                      TCP(sport=rnd.randrange(1024, 65536), dport=rnd.choice([80, 7]), flags=rnd.choice(["S", "A", "PA"]),
                          seq=rnd.randrange(1 << 32), ack=rnd.randrange(1 << 32), dataofs=5 + len(o) // 4) /
                      Raw(o + rbytes(rnd, rnd.randrange(0, 64))))
    yield "tcp-headers-options", frames

    # every TCP flag combination, to the server, the echo and a closed port
    frames = []
    for flags in range(256):
        for dport in (80, 7, 81):
            frames.append(e() / IP(src=hip, dst=gip) /
                          TCP(sport=rnd.randrange(1024, 65536), dport=dport, flags=flags, seq=rnd.randrange(1 << 32),
                              ack=rnd.randrange(1 << 32), urgptr=rnd.randrange(65536)) /
                          Raw(rbytes(rnd, rnd.choice([0, 0, 10]))))
    yield "tcp-flag-combinations", frames

    # IPv4 fragments: overlapping, never completing, beyond 64 KiB, tiny
    frames = []
    for i in range(60):
        ident = 1000 + i
        p = IP(src=hip, dst=gip, id=ident, proto=17)
        udp = bytes(UDP(sport=5000, dport=7, len=8 + 3000)) + rbytes(rnd, 3000)
        frames.append(e() / p.copy() / Raw(udp[:1480]))
        frames[-1][IP].flags = "MF"
        frames.append(e() / IP(src=hip, dst=gip, id=ident, proto=17, flags="MF", frag=100) / Raw(rbytes(rnd, 1000)))
        frames.append(e() / IP(src=hip, dst=gip, id=ident, proto=17, frag=150) / Raw(rbytes(rnd, 1000)))
        frames.append(e() / IP(src=hip, dst=gip, id=ident, proto=17, flags="MF", frag=120) / Raw(rbytes(rnd, 800)))
    for i in range(300):  # first fragments only: reassembly never completes
        frames.append(e() / IP(src=hip, dst=gip, id=5000 + i, proto=1, flags="MF") / ICMP() / Raw(b"f" * 1000))
    for i in range(100):  # last fragments only, past 64 KiB
        frames.append(e() / IP(src=hip, dst=gip, id=9000 + i, proto=17, frag=8189) / Raw(b"z" * 64))
    for i in range(20):  # a train of tiny fragments
        for k in range(40):
            frames.append(e() / IP(src=hip, dst=gip, id=12000 + i, proto=17, flags="MF", frag=k) / Raw(b"t" * 8))
    for i in range(50):  # duplicates and a datagram that completes, twice
        big = IP(src=hip, dst=gip, id=15000 + i) / UDP(sport=5001, dport=9) / Raw(b"d" * 2000)
        fr = fragment(big, fragsize=800)
        for f in fr + fr:
            frames.append(e() / f)
    yield "ipv4-fragments", frames

    # ARP: a storm of requests for our address from random senders,
    # gratuitous and unsolicited replies, and malformed ARP
    frames = []
    for _ in range(1500):
        smac = rmac(rnd)
        sip = f"10.77.{rnd.randrange(0, 2)}.{rnd.randrange(3, 255)}"
        kind = rnd.randrange(4)
        if kind == 0:
            frames.append(Ether(dst="ff:ff:ff:ff:ff:ff", src=smac) / ARP(op=1, hwsrc=smac, psrc=sip, pdst=gip))
        elif kind == 1:
            frames.append(Ether(dst="ff:ff:ff:ff:ff:ff", src=smac) / ARP(op=1, hwsrc=smac, psrc=sip, pdst=sip))
        elif kind == 2:
            frames.append(Ether(dst=GUEST_MAC, src=smac) / ARP(op=2, hwsrc=smac, psrc=sip, hwdst=GUEST_MAC, pdst=gip))
        else:
            # hardware type, protocol type, lengths and opcode as they come
            head = struct.pack("!HHBBH", rnd.choice([1, 6, 0xFFFF]), rnd.choice([0x0800, 0x86DD, 0]),
                               rnd.randrange(256), rnd.randrange(256), rnd.randrange(65536))
            frames.append(bytes(Ether(dst="ff:ff:ff:ff:ff:ff", src=smac, type=0x0806)) + head +
                          rbytes(rnd, rnd.randrange(0, 40)))
    for _ in range(10):  # someone claims the guest's own address
        smac = rmac(rnd)
        frames.append(Ether(dst="ff:ff:ff:ff:ff:ff", src=smac) / ARP(op=2, hwsrc=smac, psrc=gip, pdst=gip))
    for k in range(0, 28):
        frames.append(bytes(Ether(dst="ff:ff:ff:ff:ff:ff", src=hmac, type=0x0806)) +
                      bytes(ARP(op=1, hwsrc=hmac, psrc=hip, pdst=gip))[:k])
    yield "arp-storm", frames

    # oversized: longer than the guest's MTU, up to a jumbo frame
    frames = []
    for size in (1515, 1519, 1600, 2000, 4000, 4096, 8000, 9000, 9014):
        pay = size - 14 - 20 - 20
        frames.append(e() / IP(src=hip, dst=gip) / TCP(sport=40002, dport=80, flags="PA") / Raw(b"G" * pay))
        frames.append(e() / IP(src=hip, dst=gip) / UDP(sport=5002, dport=7) / Raw(b"U" * (pay + 12)))
        frames.append(e() / IPv6(src=HOST_LL, dst=GUEST_LL) / ICMPv6EchoRequest(data=b"6" * (size - 14 - 48)))
        frames.append(bytes(e(type=0x0800)) + rbytes(rnd, size - 14))
    yield "oversized", frames * 5

    # IPv6: truncated headers, lying payload lengths, extension header chains
    frames = []
    v6 = lambda **kw: e() / IPv6(src=HOST_LL, dst=GUEST_LL, **kw)  # noqa: E731
    whole6 = bytes(IPv6(src=HOST_LL, dst=GUEST_LL) / ICMPv6EchoRequest())
    for k in range(0, len(whole6)):
        frames.append(bytes(e(type=0x86DD)) + whole6[:k])
    for plen in (0, 1, 7, 8, 100, 1500, 65535):
        frames.append(v6(plen=plen) / ICMPv6EchoRequest(data=b"p" * 16))
    chains = [
        IPv6ExtHdrHopByHop() / IPv6ExtHdrHopByHop(),  # hop-by-hop not first
        IPv6ExtHdrDestOpt() / IPv6ExtHdrHopByHop(),
        IPv6ExtHdrRouting(type=0, addresses=["::1", "::2"], segleft=5),
        IPv6ExtHdrRouting(type=2, segleft=1),
        IPv6ExtHdrRouting(type=4, segleft=255),
        IPv6ExtHdrFragment(offset=0, m=0, id=1) / IPv6ExtHdrFragment(offset=0, m=0, id=2),
        IPv6ExtHdrDestOpt(nh=253),
        IPv6ExtHdrDestOpt(nh=59) / Raw(b"after no-next-header"),
    ]
    for c in chains:
        frames.append(v6() / c / ICMPv6EchoRequest(data=b"c"))
    long_chain = IPv6ExtHdrDestOpt()
    for _ in range(60):
        long_chain = long_chain / IPv6ExtHdrDestOpt()
    frames.append(v6() / long_chain / ICMPv6EchoRequest())
    for _ in range(200):  # extension headers with garbage option bytes and lengths
        nh = rnd.choice([0, 43, 44, 60])
        body = bytes([rnd.choice([58, 6, 17, 0, 43, 44, 60, 59, 255]), rnd.randrange(256)]) + rbytes(rnd, 6 + 8 * rnd.randrange(0, 4))
        frames.append(v6(nh=nh) / Raw(body + rbytes(rnd, rnd.randrange(0, 40))))
    # neighbour discovery garbage: zero-length options, bad prefixes
    for _ in range(100):
        frames.append(v6(hlim=255) / ICMPv6ND_NS(tgt=GUEST_LL) / Raw(bytes([1, 0]) + rbytes(rnd, 6)))
        frames.append(v6(hlim=255) / ICMPv6ND_NA(tgt=HOST_LL, R=1, S=1, O=1) / Raw(bytes([2, rnd.randrange(0, 3)]) + rbytes(rnd, 6)))
        frames.append(e(dst="33:33:00:00:00:01") / IPv6(src=HOST_LL, dst="ff02::1", hlim=255) /
                      ICMPv6ND_RA(routerlifetime=0) /
                      ICMPv6NDOptPrefixInfo(A=0, prefixlen=rnd.choice([0, 64, 129, 255]), validlifetime=rnd.randrange(1 << 32),
                                            preferredlifetime=rnd.randrange(1 << 32), prefix="2001:db8::") /
                      Raw(bytes([rnd.choice([1, 3, 5, 25]), 0]) + rbytes(rnd, 6)))
    frames.append(v6(hlim=255) / ICMPv6ND_NS(tgt=GUEST_LL) / ICMPv6NDOptSrcLLAddr(lladdr=hmac))
    # IPv6 fragments: overlapping and never completing (60 s in lwIP)
    for i in range(100):
        frames.append(v6() / IPv6ExtHdrFragment(offset=0, m=1, id=0x10000 + i) / Raw(rbytes(rnd, 1000)))
        frames.append(v6() / IPv6ExtHdrFragment(offset=50, m=1, id=0x10000 + i) / Raw(rbytes(rnd, 800)))
    for i in range(40):
        frames.append(v6() / IPv6ExtHdrFragment(offset=8190, m=0, id=0x20000 + i) / Raw(rbytes(rnd, 64)))
    yield "ipv6", frames

    # random mutations of valid packets
    templates = [
        e() / IP(src=hip, dst=gip) / TCP(sport=40003, dport=80, flags="S", options=[("MSS", 1460), ("WScale", 7)]),
        e() / IP(src=hip, dst=gip) / TCP(sport=40004, dport=80, flags="PA") / Raw(b"GET / HTTP/1.1\r\nHost: x\r\n\r\n"),
        e() / IP(src=hip, dst=gip) / UDP(sport=5003, dport=7) / Raw(b"echo me"),
        e() / IP(src=hip, dst=gip) / ICMP() / Raw(b"ping"),
        e() / IP(src=hip, dst=gip, flags="MF", id=777) / UDP(sport=5004, dport=7) / Raw(b"frag" * 100),
        Ether(dst="ff:ff:ff:ff:ff:ff", src=hmac) / ARP(op=1, hwsrc=hmac, psrc=hip, pdst=gip),
        e() / IPv6(src=HOST_LL, dst=GUEST_LL) / ICMPv6EchoRequest(data=b"ping6"),
        e() / IPv6(src=HOST_LL, dst=GUEST_LL, hlim=255) / ICMPv6ND_NS(tgt=GUEST_LL) / ICMPv6NDOptSrcLLAddr(lladdr=hmac),
        e() / IPv6(src=HOST_LL, dst=GUEST_LL) / TCP(sport=40005, dport=80, flags="S"),
        e() / IPv6(src=HOST_LL, dst=GUEST_LL) / UDP(sport=5005, dport=7) / Raw(b"six"),
        e() / IPv6(src=HOST_LL, dst=GUEST_LL) / IPv6ExtHdrHopByHop() / IPv6ExtHdrDestOpt() / UDP(dport=7) / Raw(b"e"),
    ]
    frames = []
    for _ in range(3000):
        raw = bytes(rnd.choice(templates))
        raw = flip(rnd, raw, 14, rnd.randrange(1, 9))
        if rnd.random() < 0.2:
            raw = raw[: rnd.randrange(14, len(raw) + 1)]
        frames.append(raw)
    yield "mutations", frames


def with_bad_l4_checksum(pkt, layer):
    raw = bytearray(bytes(pkt))
    pkt = Ether(bytes(raw))
    good = pkt[layer].chksum
    pkt[layer].chksum = (good + 0x1111) & 0xFFFF or 1
    return bytes(pkt)


def bad_checksums(rnd, gip, hip, hmac):
    e = lambda: eth(hmac)  # noqa: E731
    yield "bad-tcp-checksum", [with_bad_l4_checksum(
        e() / IP(src=hip, dst=gip) / TCP(sport=41000 + i, dport=80, flags="S", seq=rnd.randrange(1 << 32)), TCP)
        for i in range(50)]
    yield "bad-udp-checksum", [with_bad_l4_checksum(
        e() / IP(src=hip, dst=gip) / UDP(sport=42000 + i, dport=7) / Raw(b"bad udp checksum"), UDP)
        for i in range(50)]
    frames = []
    for i in range(50):
        p = Ether(bytes(e() / IP(src=hip, dst=gip, id=i) / ICMP(id=i) / Raw(b"bad ip checksum")))
        p[IP].chksum = (p[IP].chksum + 0x2222) & 0xFFFF or 1
        frames.append(bytes(p))
    yield "bad-ip-checksum", frames


def synflood(rnd, gip, hip, hmac):
    e = lambda: eth(hmac)  # noqa: E731
    yield "syn-from-host", [e() / IP(src=hip, dst=gip) /
                            TCP(sport=rnd.randrange(1024, 65536), dport=80, flags="S", seq=rnd.randrange(1 << 32),
                                options=[("MSS", 1460)]) for _ in range(4000)]
    pre = gip.rsplit(".", 1)[0]
    yield "syn-spoofed", [e() / IP(src=f"{pre}.{rnd.randrange(100, 200)}", dst=gip) /
                          TCP(sport=rnd.randrange(1024, 65536), dport=80, flags="S", seq=rnd.randrange(1 << 32))
                          for _ in range(1000)]


if __name__ == "__main__":
    main()
