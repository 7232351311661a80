/* udpstream IP RATE SECS: a paced stream of 64-byte datagrams to the echo
 * service (UDP port 7) at RATE per second for SECS seconds, run inside the
 * benchmark's namespace. Each datagram carries its send time; a second
 * thread takes the echoes and their round-trip times. Prints one JSON
 * object. Bounded: RATE * SECS datagrams (at most 10^7), then 1 s for the
 * last echoes.
 *
 * Pacing sends whatever is due by the clock, so a late sender catches up
 * and the average rate holds. A C client because Python's receive loop
 * falls behind at 20k/s and the host socket, not the guest, drops. */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <errno.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <time.h>
#include <unistd.h>

#define MAX_DATAGRAMS	10000000L

static int sock;
static volatile int stopping;
static uint64_t *rtt_ns;
static long n_rtt, n_sent;

static uint64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static void *receiver(void *arg)
{
	unsigned char buf[2048];
	uint64_t sent_at;

	(void)arg;
	while (!stopping) {
		ssize_t n = recv(sock, buf, sizeof buf, 0);

		if (n != 64 || n_rtt >= __atomic_load_n(&n_sent, __ATOMIC_ACQUIRE))
			continue;	/* timeout, error, or not ours */
		memcpy(&sent_at, buf, sizeof sent_at);
		rtt_ns[n_rtt++] = now_ns() - sent_at;
	}
	return NULL;
}

static int cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

	return x < y ? -1 : x > y;
}

static double pct_us(double p)
{
	long i;

	if (!n_rtt)
		return -1;
	i = (long)(p / 100 * (double)n_rtt + 0.5) - 1;
	if (i < 0)
		i = 0;
	if (i >= n_rtt)
		i = n_rtt - 1;
	return (double)rtt_ns[i] / 1000;
}

int main(int argc, char **argv)
{
	struct sockaddr_in to = { .sin_family = AF_INET, .sin_port = htons(7) };
	struct timeval tmo = { 0, 100000 };
	unsigned char msg[64];
	double rate, secs;
	long total, lost = 0;
	uint64_t t0, dur;
	pthread_t rx;

	if (argc != 4 || inet_pton(AF_INET, argv[1], &to.sin_addr) != 1) {
		fprintf(stderr, "usage: udpstream IPv4 RATE SECS\n");
		return 2;
	}
	rate = atof(argv[2]);
	secs = atof(argv[3]);
	if (!(rate >= 1 && secs > 0 && rate * secs <= MAX_DATAGRAMS)) {
		fprintf(stderr, "udpstream: RATE >= 1, SECS > 0, RATE * SECS <= %ld\n", MAX_DATAGRAMS);
		return 2;
	}
	total = (long)(rate * secs);
	sock = socket(AF_INET, SOCK_DGRAM, 0);
	if (sock < 0 || connect(sock, (struct sockaddr *)&to, sizeof to) < 0 ||
	    setsockopt(sock, SOL_SOCKET, SO_RCVTIMEO, &tmo, sizeof tmo) < 0) {
		perror("udpstream: socket");
		return 1;
	}
	rtt_ns = calloc((size_t)total, sizeof *rtt_ns);
	if (!rtt_ns || pthread_create(&rx, NULL, receiver, NULL)) {
		fprintf(stderr, "udpstream: out of memory\n");
		return 1;
	}
	memset(msg, 's', sizeof msg);
	t0 = now_ns();
	while (n_sent < total) {
		long due = (long)((double)(now_ns() - t0) * rate / 1e9) + 1;

		if (due > total)
			due = total;
		while (n_sent < due) {
			uint64_t t = now_ns();

			memcpy(msg, &t, sizeof t);
			if (send(sock, msg, sizeof msg, 0) != sizeof msg)
				lost++;		/* ENOBUFS: a full tap queue */
			__atomic_store_n(&n_sent, n_sent + 1, __ATOMIC_RELEASE);
		}
	}
	dur = now_ns() - t0;
	sleep(1);
	stopping = 1;
	pthread_join(rx, NULL);
	qsort(rtt_ns, (size_t)n_rtt, sizeof *rtt_ns, cmp_u64);
	printf("{\"rate\": %.0f, \"sent\": %ld, \"send_errors\": %ld, \"echoed\": %ld, \"send_seconds\": %.3f, "
	       "\"send_rate_pps\": %.0f, \"rtt_p50_us\": %.1f, \"rtt_p99_us\": %.1f}\n",
	       rate, n_sent, lost, n_rtt, (double)dur / 1e9, (double)n_sent * 1e9 / (double)dur,
	       pct_us(50), pct_us(99));
	return 0;
}
