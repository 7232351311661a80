"""Attacks made of ordinary TCP clients, shared by test_hostile_clients.py and
the attack benchmark (tests/bench/attacks.py). `guest` is an mxlib.NsClient
(a Guest, or a client attached to another boot's namespace): connect(),
socket(), ip, and ns (run, tap, host_ip).

hog: one source (the tap's own address) keeps `conns` idle connections
open, reopening each one the server ends.

orphan flood: clients that send a request with `Connection: close`, half-close
and never ACK the server's FIN (drop_pure_acks loses every pure ACK from
their source ports on the way to the guest), so the server keeps each closed
connection as an orphan until its own timeouts end it."""
import select
import socket
import time

from mxlib import read_all

MAX_CONNS = 64  # vireo's HTTP connection limit up to -m 64 (net/port/netmem.h's floor)
FLOOD_PORT = 20480  # 20480-20991: below Linux's ephemeral range, so legitimate clients are never matched


def hog(guest, socks, stop, deadline, conns=MAX_CONNS + 8):
    """Keeps up to `conns` connections open from the tap's address (it sends
    nothing; a server's header timeout ends each, and the hog opens another)
    until stop is set or the monotonic deadline passes. socks: the list of
    open sockets, shared with the caller (who closes them)."""
    while not stop.is_set() and time.monotonic() < deadline:
        live = []
        for s in socks:
            r, _, _ = select.select([s], [], [], 0)
            if r:
                try:
                    if s.recv(1) == b"":
                        s.close()
                        continue
                except OSError:
                    s.close()
                    continue
            live.append(s)
        socks[:] = live
        while len(socks) < conns and not stop.is_set():
            try:
                s = guest.connect(timeout=5)
            except OSError:
                break
            socks.append(s)
        time.sleep(0.2)


def tc(guest, *args, check=True):
    return guest.ns.run("tc", *args, check=check)


def drop_pure_acks(guest):
    """Loses, on the way to the guest, every IPv4 TCP segment from source
    ports 20480-20991 that carries no data, SYN or FIN: with timestamps and
    SACK off in the namespace that is exactly a 40-byte pure ACK."""
    for k in ("net.ipv4.tcp_timestamps=0", "net.ipv4.tcp_sack=0"):
        guest.ns.run("sysctl", "-qw", k, check=True)
    # no gact action in this kernel: the filter sends them to an htb class
    # whose queue holds nothing (pfifo limit 0); the rest pass unshaped
    tap = guest.ns.tap
    tc(guest, "qdisc", "add", "dev", tap, "root", "handle", "1:", "htb", "default", "10")
    tc(guest, "class", "add", "dev", tap, "parent", "1:", "classid", "1:10", "htb", "rate", "10gbit")
    tc(guest, "class", "add", "dev", tap, "parent", "1:", "classid", "1:20", "htb", "rate", "10gbit")
    tc(guest, "qdisc", "add", "dev", tap, "parent", "1:20", "handle", "20:", "pfifo", "limit", "0")
    tc(guest, "filter", "add", "dev", tap, "parent", "1:", "protocol", "ip", "prio", "1", "u32",
       "match", "ip", "protocol", "6", "0xff", "match", "ip", "sport", str(FLOOD_PORT), "0xfe00",
       "match", "u16", "40", "0xffff", "at", "2", "match", "u8", "0", "0x03", "at", "33",
       "flowid", "1:20")


def undo_drop(guest):
    tc(guest, "qdisc", "del", "dev", guest.ns.tap, "root", check=False)
    for k in ("net.ipv4.tcp_timestamps=1", "net.ipv4.tcp_sack=1"):
        guest.ns.run("sysctl", "-qw", k)


def orphan_client(guest, port, stats):
    req = b"GET /healthz HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n"
    try:
        s = guest.socket()
        s.settimeout(10)
        s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        s.bind((guest.ns.host_ip, port))
        s.connect((guest.ip, 80))
        s.sendall(req)
        s.shutdown(socket.SHUT_WR)
        read_all(s)
        s.close()
        stats["done"] += 1
    except OSError:
        stats["errors"] += 1


def orphan_flood(guest, n, rate, stats, every=None):
    """n orphan clients paced at `rate` per second, one after another, from
    ports FLOOD_PORT + i % 512 (each port comes round only after the client's
    own TIME_WAIT of 60 s if rate <= 8). drop_pure_acks() must be in place.
    every: (k, fn): fn(i) after every k-th client. Returns the seconds taken."""
    t0 = time.monotonic()
    for i in range(n):
        while time.monotonic() - t0 < i / rate:
            time.sleep(0.01)
        orphan_client(guest, FLOOD_PORT + i % 512, stats)
        if every and i % every[0] == 0:
            every[1](i)
    return time.monotonic() - t0

