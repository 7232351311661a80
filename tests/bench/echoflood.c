/* echoflood IFACE SIZE RATE SECS: raw Ethernet frames for the frame
 * reflector (vnet.echo), written to a tap device through an AF_PACKET
 * socket, run inside the namespace that holds the tap. Each frame is SIZE
 * bytes (60-1514, no FCS), to the guest's MAC (52:54:00:12:34:56) from
 * 02:00:00:00:00:01 with the local experimental EtherType 0x88b5, and
 * carries its sequence number. RATE frames per second (0: as fast as the
 * socket takes them) for at most SECS seconds; bounded at 10^7 frames.
 * Prints one JSON object: frames offered (handed to the socket), of which
 * refused at once (send errors: the tap's queue towards QEMU, charged to
 * this socket's send buffer, was full), and the time taken.
 *
 * Only sends: what comes back is counted from the tap's own counters by
 * the caller (rx_packets: frames QEMU wrote, i.e. reflected; tx_dropped:
 * frames QEMU did not read in time), which costs nothing at 10^5 frames/s,
 * where a receiving socket would compete with QEMU for the CPU.
 *
 * Pacing sends what is due by the clock in batches of up to BATCH
 * (sendmmsg); ahead of time it sleeps 50 us rather than spin, leaving the
 * CPU to QEMU. Used by tests/matrix/test_echo_flood.py and
 * tests/bench/echo.py. */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <errno.h>
#include <linux/if_packet.h>
#include <net/ethernet.h>
#include <net/if.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#define MAX_FRAMES	10000000L
#define BATCH		32
#define ETHERTYPE_TEST	0x88b5

static uint64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

int main(int argc, char **argv)
{
	static const unsigned char dst[6] = { 0x52, 0x54, 0x00, 0x12, 0x34, 0x56 };
	static const unsigned char src[6] = { 0x02, 0x00, 0x00, 0x00, 0x00, 0x01 };
	static unsigned char frames[BATCH][1514];
	struct sockaddr_ll to = { .sll_family = AF_PACKET, .sll_protocol = htons(ETHERTYPE_TEST) };
	struct mmsghdr msgs[BATCH];
	struct iovec iov[BATCH];
	struct timespec nap = { 0, 50000 };
	long size, total, sent = 0, errors = 0;
	double rate, secs;
	uint64_t t0, end, dur;
	int s, one = 1;

	if (argc != 5) {
		fprintf(stderr, "usage: echoflood IFACE SIZE RATE SECS\n");
		return 2;
	}
	size = atol(argv[2]);
	rate = atof(argv[3]);
	secs = atof(argv[4]);
	to.sll_ifindex = (int)if_nametoindex(argv[1]);
	if (!to.sll_ifindex || size < 60 || size > 1514 || rate < 0 || !(secs > 0 && secs <= 600)) {
		fprintf(stderr, "echoflood: an interface, SIZE 60-1514, RATE >= 0, 0 < SECS <= 600\n");
		return 2;
	}
	total = rate > 0 && rate * secs < MAX_FRAMES ? (long)(rate * secs) : MAX_FRAMES;
	s = socket(AF_PACKET, SOCK_RAW, 0);
	if (s < 0) {
		perror("echoflood: socket");
		return 1;
	}
	/* Straight to the device, past any queueing discipline. */
	setsockopt(s, SOL_PACKET, PACKET_QDISC_BYPASS, &one, sizeof one);
	for (int i = 0; i < BATCH; i++) {
		memcpy(frames[i], dst, 6);
		memcpy(frames[i] + 6, src, 6);
		frames[i][12] = ETHERTYPE_TEST >> 8;
		frames[i][13] = ETHERTYPE_TEST & 0xff;
		for (long k = 14; k < size; k++)
			frames[i][k] = (unsigned char)(k * 7);
		iov[i] = (struct iovec){ frames[i], (size_t)size };
		msgs[i] = (struct mmsghdr){ .msg_hdr = { .msg_name = &to, .msg_namelen = sizeof to,
							  .msg_iov = &iov[i], .msg_iovlen = 1 } };
	}
	t0 = now_ns();
	end = t0 + (uint64_t)(secs * 1e9);
	while (sent < total) {
		uint64_t t = now_ns();
		long due = rate > 0 ? (long)((double)(t - t0) * rate / 1e9) + 1 : sent + BATCH;
		int n, k;

		if (t >= end)
			break;
		if (due > total)
			due = total;
		if (due <= sent) {
			nanosleep(&nap, NULL);
			continue;
		}
		n = due - sent > BATCH ? BATCH : (int)(due - sent);
		for (k = 0; k < n; k++)
			memcpy(frames[k] + 14, &(uint64_t){ (uint64_t)(sent + k) }, 8);
		k = sendmmsg(s, msgs, (unsigned)n, 0);
		if (k < 0) {
			errors += n;	/* ENOBUFS and the like: counted as offered */
			k = n;
		}
		sent += k;
	}
	dur = now_ns() - t0;
	printf("{\"size\": %ld, \"rate\": %.0f, \"offered\": %ld, \"send_errors\": %ld, \"send_seconds\": %.3f, "
	       "\"offered_pps\": %.0f}\n", size, rate, sent, errors, (double)dur / 1e9,
	       (double)sent * 1e9 / (double)dur);
	close(s);
	return 0;
}
