/* dns_serve: apps/dns's engine and rate limiter behind host sockets, so the
 * zone can be asked by real clients (dig, kdig) without booting a VM:
 * apps/dns/tests/host_dig.py runs it under ASan/UBSan on 127.0.0.1.
 *
 *   dns_serve PORT RATE SLIP SECONDS
 *
 * UDP and TCP on 127.0.0.1:PORT (TCP: one connection at a time, several
 * queries on it, closed by the peer or after 2 s of silence); rate 0 turns
 * rate limiting off. Exits after SECONDS (at most 600) or on SIGTERM,
 * printing its counters. Not part of the appliance. */
#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "apps/dns/dnsmsg.h"
#include "apps/dns/rrl.h"
#include "lib/byteorder.h"

static struct dns_zone zone;
static struct dns_server srv = { .zone = &zone, .version = "vireo", .id = "dns_serve" };

static volatile sig_atomic_t stop;

static void on_term(int sig)
{
	stop = 1;
}

static u64 now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (u64)ts.tv_sec * 1000000000ULL + (u64)ts.tv_nsec;
}

static int sock(int type, int port)
{
	struct sockaddr_in a = { .sin_family = AF_INET, .sin_port = htons((u16)port) };
	int one = 1, fd = socket(AF_INET, type, 0);

	a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
	if (fd < 0 || bind(fd, (struct sockaddr *)&a, sizeof a) < 0 || (type == SOCK_STREAM && listen(fd, 4) < 0)) {
		perror("dns_serve: bind");
		exit(1);
	}
	return fd;
}

static void serve_tcp(int c)
{
	static struct dns_tcp_reader rd;
	static u8 out[2 + 65535];
	u8 buf[4096];
	struct pollfd p = { .fd = c, .events = POLLIN };

	dns_tcp_next(&rd);
	while (poll(&p, 1, 2000) == 1) {
		ssize_t got = recv(c, buf, sizeof buf, 0);
		size_t off = 0;

		if (got <= 0)
			break;
		while (off < (size_t)got) {
			size_t m;
			long took = dns_tcp_feed(&rd, buf + off, (size_t)got - off, &m);

			if (took < 0)
				return;
			off += (size_t)took;
			if (m) {
				struct dns_result res;
				struct dns_peer p = { .now_s = (u32)(now_ns() / 1000000000ULL) };
				size_t n = dns_respond(&srv, &p, rd.buf + 2, m, out + 2, 65535, true, &res);

				dns_tcp_next(&rd);
				if (n) {
					put_be16(out, (u16)n);
					if (send(c, out, n + 2, MSG_NOSIGNAL) != (ssize_t)(n + 2))
						return;
				}
			}
		}
	}
}

int main(int argc, char **argv)
{
	static struct rrl r;
	static const u8 key[16] = "dns_serve key 16";
	u64 end;
	int u, t;
	unsigned long answered = 0, ignored = 0;

	char err[128];

	if (argc != 5) {
		fprintf(stderr, "usage: dns_serve PORT RATE SLIP SECONDS\n");
		return 2;
	}
	if (dns_zone_open(&zone, dns_zone_builtin, dns_zone_builtin_len, err, sizeof err)) {
		fprintf(stderr, "dns_serve: the zone: %s\n", err);
		return 1;
	}
	u = sock(SOCK_DGRAM, atoi(argv[1]));
	t = sock(SOCK_STREAM, atoi(argv[1]));
	rrl_init(&r, key, (u32)atoi(argv[2]), (u32)atoi(argv[3]));
	end = now_ns() + (u64)MIN(atoi(argv[4]), 600) * 1000000000ULL;
	signal(SIGTERM, on_term);
	printf("dns_serve: ready\n");
	fflush(stdout);
	while (!stop && now_ns() < end) {
		struct pollfd p[2] = { { .fd = u, .events = POLLIN }, { .fd = t, .events = POLLIN } };

		if (poll(p, 2, 200) <= 0)
			continue;
		if (p[0].revents & POLLIN) {
			u8 q[4096], out[DNS_UDP_MAX];
			struct sockaddr_in from;
			socklen_t fl = sizeof from;
			ssize_t got = recvfrom(u, q, sizeof q, 0, (struct sockaddr *)&from, &fl);
			struct dns_result res;
			size_t n;

			if (got < 0)
				continue;
			struct dns_peer peer = { .addr = (const u8 *)&from.sin_addr, .alen = 4,
						 .now_s = (u32)(now_ns() / 1000000000ULL) };

			n = dns_respond(&srv, &peer, q, (size_t)got, out, sizeof out, false, &res);
			if (!n) {
				ignored++;
				continue;
			}
			switch (rrl_check(&r, (const u8 *)&from.sin_addr, 4, now_ns())) {
			case RRL_DROP:
				continue;
			case RRL_SLIP:
				n = dns_slip(out, n, &res);
				break;
			case RRL_PASS:
				break;
			}
			if (n && sendto(u, out, n, 0, (struct sockaddr *)&from, fl) == (ssize_t)n)
				answered++;
		}
		if (p[1].revents & POLLIN) {
			int c = accept(t, NULL, NULL);

			if (c >= 0) {
				serve_tcp(c);
				close(c);
			}
		}
	}
	printf("dns_serve: answered %lu ignored %lu rrl pass %llu drop %llu slip %llu\n", answered, ignored,
	       (unsigned long long)r.passed, (unsigned long long)r.dropped, (unsigned long long)r.slipped);
	return 0;
}
