"""Raw TCP SYNs from inside the test's namespace, built by hand (no scapy:
the flood must keep its rate on a shared 2-core machine).

  syn_tools.py flood IFACE GUEST_IP RATE SECONDS [GUEST_MAC]
      SYNs to GUEST_IP:80 from random addresses in 198.18.0.0/15 (RFC 2544's
      benchmark range; the guest routes its SYN-ACKs to the gateway, the host
      drops them), paced at RATE per second for SECONDS, in 10 ms slices.
      GUEST_MAC: the guest's (default vireo's in these tests, 52:54:00:12:34:56).
      Prints "start" before the first SYN and "sent N in S s" at the end.
  syn_tools.py isn IFACE GUEST_IP HOST_IP COUNT
      COUNT SYNs from HOST_IP, one source port each, one at a time; prints the
      ISN of each SYN-ACK, one per line (the host's kernel resets them).
"""
import os
import random
import socket
import struct
import sys
import time

GUEST_MAC = "52:54:00:12:34:56"
ETH_P_IP = 0x0800


def csum(data):
    if len(data) & 1:
        data += b"\0"
    s = sum(struct.unpack(f"!{len(data) // 2}H", data))
    while s >> 16:
        s = (s & 0xFFFF) + (s >> 16)
    return ~s & 0xFFFF


def mac_bytes(mac):
    return bytes.fromhex(mac.replace(":", ""))


def syn_frame(hmac, src, dst, sport, seq, gmac=GUEST_MAC):
    tcp = struct.pack("!HHIIBBHHH", sport, 80, seq, 0, 6 << 4, 0x02, 64240, 0, 0) + b"\x02\x04\x05\xb4"
    pseudo = src + dst + struct.pack("!BBH", 0, 6, len(tcp))
    tcp = tcp[:16] + struct.pack("!H", csum(pseudo + tcp)) + tcp[18:]
    ip = struct.pack("!BBHHHBBH4s4s", 0x45, 0, 20 + len(tcp), 0, 0x4000, 64, 6, 0, src, dst)
    ip = ip[:10] + struct.pack("!H", csum(ip)) + ip[12:]
    return mac_bytes(gmac) + hmac + struct.pack("!H", ETH_P_IP) + ip + tcp


def host_mac(iface):
    with open(f"/sys/class/net/{iface}/address") as f:
        return bytes.fromhex(f.read().strip().replace(":", ""))


def flood(iface, gip, rate, seconds, gmac=GUEST_MAC):
    rate, seconds = int(rate), float(seconds)
    s = socket.socket(socket.AF_PACKET, socket.SOCK_RAW)
    s.bind((iface, 0))
    hmac, dst, rnd = host_mac(iface), socket.inet_aton(gip), random.Random(os.getpid())
    print("start", flush=True)
    t0 = time.monotonic()
    sent = 0
    while True:
        now = time.monotonic() - t0
        if now >= seconds:
            break
        due = min(int(now * rate) + rate // 100, int(seconds * rate))
        while sent < due:
            src = bytes([198, 18 + rnd.randrange(2), rnd.randrange(256), rnd.randrange(1, 255)])
            try:
                s.send(syn_frame(hmac, src, dst, rnd.randrange(1024, 65536), rnd.randrange(1 << 32), gmac))
            except OSError:
                pass  # a full tap queue drops, like a real link
            sent += 1
        time.sleep(0.01)
    print(f"sent {sent} in {time.monotonic() - t0:.1f} s", flush=True)


def isn(iface, gip, hip, count):
    s = socket.socket(socket.AF_PACKET, socket.SOCK_RAW, socket.htons(ETH_P_IP))
    s.bind((iface, 0))
    s.settimeout(0.5)
    hmac, src, dst = host_mac(iface), socket.inet_aton(hip), socket.inet_aton(gip)
    rnd = random.Random(os.getpid())
    ports = rnd.sample(range(20000, 60000), int(count))
    for sport in ports:
        s.send(syn_frame(hmac, src, dst, sport, rnd.randrange(1 << 32)))
        deadline = time.monotonic() + 20
        got = None
        while got is None:
            if time.monotonic() > deadline:
                sys.exit(f"no SYN-ACK for port {sport}")
            try:
                fr = s.recv(2048)
            except socket.timeout:
                s.send(syn_frame(hmac, src, dst, sport, rnd.randrange(1 << 32)))
                continue
            ip = fr[14:]
            if len(ip) < 40 or ip[9] != 6 or ip[12:16] != dst:
                continue
            tcp = ip[(ip[0] & 15) * 4:]
            sp, dp, seq, _ = struct.unpack("!HHII", tcp[:12])
            if sp == 80 and dp == sport and tcp[13] & 0x12 == 0x12:
                got = seq
        print(got, flush=True)
        time.sleep(0.02)


if __name__ == "__main__":
    {"flood": flood, "isn": isn}[sys.argv[1]](*sys.argv[2:])
