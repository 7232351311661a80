"""Attacks on the guest's receive memory, from the tap (run inside the test's
namespace; frames built with scapy, written and read through a packet
socket).

    rxmem_attack.py ooseq IFACE GUEST_IP CONNS SEGS HOLD_S [GUEST_MAC]
    rxmem_attack.py frags IFACE GUEST_IP TRAINS SECONDS [GUEST_MAC]

GUEST_MAC: the guest's (default vireo's in these tests, 52:54:00:12:34:56);
the IPv6 fragments go to the link-local address derived from it (EUI-64).
Each prints "start" once the packet socket is open, before the first frame.

ooseq: CONNS TCP connections to port 80, each from its own address in
198.18.0.0/24 (off the tap's subnet: the guest answers through its gateway,
the host, whose kernel drops what is not its own and so sends no RST; no
firewall rule needed). After the handshake each sends SEGS one-byte segments
after a one-byte hole (sequence numbers isn+2 ...), which the guest can only
keep in its out-of-order queue. Then holds HOLD_S seconds, and ends every
connection with an exact RST (sequence number isn+1, the guest's rcv_nxt).
Prints "established N", "segments N", "reset N".

frags: TRAINS IPv4 and TRAINS IPv6 datagrams of which only the first
fragment (1000 bytes, more fragments to come) is ever sent, spread over
SECONDS seconds. Prints "frags4 N", "frags6 N"."""
import random
import socket
import struct
import sys
import time

from scapy.all import IP, TCP, Ether, IPv6, IPv6ExtHdrFragment, Raw, UDP, conf

conf.verb = 0
GUEST_MAC = "52:54:00:12:34:56"
ETH_P_ALL = 0x0003


def link_local(mac):
    """The EUI-64 link-local address of a MAC (RFC 4291 appendix A)."""
    b = bytearray.fromhex(mac.replace(":", ""))
    b[0] ^= 2
    eui = bytes(b[:3]) + b"\xff\xfe" + bytes(b[3:])
    return "fe80::" + ":".join(f"{(eui[i] << 8) | eui[i + 1]:x}" for i in range(0, 8, 2))


class Tap:
    def __init__(self, iface, gmac=GUEST_MAC):
        self.s = socket.socket(socket.AF_PACKET, socket.SOCK_RAW, socket.htons(ETH_P_ALL))
        self.s.bind((iface, 0))
        self.gmac = gmac
        with open(f"/sys/class/net/{iface}/address") as f:
            self.mac = f.read().strip()

    def send(self, pkt):
        self.s.send(bytes(Ether(dst=self.gmac, src=self.mac) / pkt))

    def tcp_from_guest(self, gip, timeout):
        """(src ip, dst ip, sport, dport, seq, ack, flags) of the guest's next
        IPv4 TCP segment, or None after timeout seconds."""
        deadline = time.monotonic() + timeout
        gaddr = socket.inet_aton(gip)
        while True:
            left = deadline - time.monotonic()
            if left <= 0:
                return None
            self.s.settimeout(left)
            try:
                fr = self.s.recv(2048)
            except socket.timeout:
                return None
            if len(fr) < 54 or fr[12:14] != b"\x08\x00":
                continue
            ip = fr[14:]
            ihl = (ip[0] & 15) * 4
            if ip[9] != 6 or ip[12:16] != gaddr or len(ip) < ihl + 20:
                continue
            sport, dport, seq, ack = struct.unpack("!HHII", ip[ihl:ihl + 12])
            return socket.inet_ntoa(ip[12:16]), socket.inet_ntoa(ip[16:20]), sport, dport, seq, ack, ip[ihl + 13]


def handshake(tap, gip, src, sport, isn):
    """SYN, SYN-ACK, ACK; returns the guest's ISN or None."""
    for _ in range(3):
        tap.send(IP(src=src, dst=gip) / TCP(sport=sport, dport=80, flags="S", seq=isn, window=65535,
                                             options=[("MSS", 1460)]))
        deadline = time.monotonic() + 3
        while time.monotonic() < deadline:
            seg = tap.tcp_from_guest(gip, deadline - time.monotonic())
            if seg is None:
                break
            _, dst, sp, dp, seq, ack, flags = seg
            if dst == src and sp == 80 and dp == sport and flags & 0x12 == 0x12 and ack == (isn + 1) & 0xFFFFFFFF:
                tap.send(IP(src=src, dst=gip) / TCP(sport=sport, dport=80, flags="A", seq=isn + 1,
                                                     ack=(seq + 1) & 0xFFFFFFFF, window=65535))
                return seq
    return None


def ooseq(tap, gip, conns, segs, hold):
    rnd = random.Random(1)
    est = []
    for i in range(conns):
        src, sport, isn = f"198.18.0.{1 + i}", 20000 + i, rnd.randrange(1 << 31)
        giss = handshake(tap, gip, src, sport, isn)
        if giss is not None:
            est.append((src, sport, isn, giss))
    print(f"established {len(est)}", flush=True)
    sent = 0
    for src, sport, isn, giss in est:
        for k in range(segs):
            tap.send(IP(src=src, dst=gip) / TCP(sport=sport, dport=80, flags="PA", seq=isn + 2 + k,
                                                 ack=(giss + 1) & 0xFFFFFFFF, window=65535) / Raw(b"G"))
            sent += 1
        time.sleep(0.005)
    print(f"segments {sent}", flush=True)
    time.sleep(hold)
    for src, sport, isn, giss in est:
        tap.send(IP(src=src, dst=gip) / TCP(sport=sport, dport=80, flags="R", seq=isn + 1))
    print(f"reset {len(est)}", flush=True)


def frags(tap, gip, trains, seconds):
    rnd = random.Random(2)
    per_burst = 32
    bursts = max(1, (2 * trains) // per_burst)
    pause = seconds / bursts
    n4 = n6 = 0
    payload = bytes(rnd.randrange(256) for _ in range(1000))
    while n4 < trains or n6 < trains:
        for _ in range(per_burst // 2):
            if n4 < trains:
                tap.send(IP(src=f"198.18.1.{1 + n4 % 200}", dst=gip, id=n4 & 0xFFFF, proto=17, flags="MF") /
                         UDP(sport=5000, dport=9, len=8 + 3000) / Raw(payload))
                n4 += 1
            if n6 < trains:
                tap.send(IPv6(src="fe80::1", dst=link_local(tap.gmac)) / IPv6ExtHdrFragment(offset=0, m=1, id=0x30000 + n6) /
                         UDP(sport=5000, dport=9, len=8 + 3000) / Raw(payload))
                n6 += 1
        time.sleep(pause)
    print(f"frags4 {n4}", flush=True)
    print(f"frags6 {n6}", flush=True)


def main():
    phase, iface, gip = sys.argv[1:4]
    nargs = 7 if phase == "ooseq" else 6
    tap = Tap(iface, sys.argv[nargs] if len(sys.argv) > nargs else GUEST_MAC)
    print("start", flush=True)
    if phase == "ooseq":
        ooseq(tap, gip, int(sys.argv[4]), int(sys.argv[5]), float(sys.argv[6]))
    elif phase == "frags":
        frags(tap, gip, int(sys.argv[4]), float(sys.argv[5]))
    else:
        raise SystemExit(f"unknown phase {phase}")


if __name__ == "__main__":
    main()
