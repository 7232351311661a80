/* SNTP messages (see sntp_msg.h). */
#include "kernel/time/wallclock.h"
#include "net/clients/sntp_msg.h"

static u64 sntp_msg_be64(const u8 *p)
{
	u64 v = 0;

	for (int i = 0; i < 8; i++)
		v = v << 8 | p[i];
	return v;
}

void sntp_msg_request(u8 msg[SNTP_MSG_LEN], u64 nonce)
{
	for (int i = 0; i < SNTP_MSG_LEN; i++)
		msg[i] = 0;
	msg[0] = 0 << 6 | 4 << 3 | 3;	/* LI 0, VN 4, mode 3 (client) */
	for (int i = 0; i < 8; i++)
		msg[40 + i] = (u8)(nonce >> (56 - 8 * i));
}

u64 sntp_msg_to_unix_ns(u64 ntp)
{
	u64 s = ntp >> 32, frac = ntp & 0xffffffffULL;

	if (s < 0x80000000ULL)
		s += 1ULL << 32;	/* era 1 */
	s -= SNTP_UNIX_OFFSET;
	return s * 1000000000ULL + (frac * 1000000000ULL >> 32);
}

static void sntp_msg_why(char *why, size_t why_len, const char *a, const u8 *code)
{
	size_t o = 0;

	for (; *a && o + 1 < why_len; a++)
		why[o++] = *a;
	for (int i = 0; code && i < 4 && o + 1 < why_len; i++)
		why[o++] = code[i] >= 0x20 && code[i] < 0x7f ? (char)code[i] : '?';
	if (why_len)
		why[o] = '\0';
}

int sntp_msg_check(const u8 *p, size_t len, u64 nonce, struct sntp_reply *r, char *why, size_t why_len)
{
	u32 li, vn, mode;
	u64 rx, tx;

	if (len < SNTP_MSG_LEN) {
		sntp_msg_why(why, why_len, "shorter than 48 bytes", NULL);
		return -EINVAL;
	}
	li = p[0] >> 6;
	vn = p[0] >> 3 & 7;
	mode = p[0] & 7;
	if (mode != 4) {
		sntp_msg_why(why, why_len, "not a server reply (mode)", NULL);
		return -EINVAL;
	}
	if (vn != 3 && vn != 4) {
		sntp_msg_why(why, why_len, "version not 3 or 4", NULL);
		return -EINVAL;
	}
	if (sntp_msg_be64(p + 24) != nonce) {
		sntp_msg_why(why, why_len, "not an answer to our request (originate)", NULL);
		return -EINVAL;
	}
	if (p[1] == 0) {
		sntp_msg_why(why, why_len, "kiss-o'-death ", p + 12);
		return -EINVAL;
	}
	if (p[1] > 15) {
		sntp_msg_why(why, why_len, "stratum over 15", NULL);
		return -EINVAL;
	}
	if (li == 3) {
		sntp_msg_why(why, why_len, "server not synchronised (leap indicator 3)", NULL);
		return -EINVAL;
	}
	rx = sntp_msg_be64(p + 32);
	tx = sntp_msg_be64(p + 40);
	if (!rx || !tx) {
		sntp_msg_why(why, why_len, "no receive or transmit time", NULL);
		return -EINVAL;
	}
	r->rx_ns = sntp_msg_to_unix_ns(rx);
	r->tx_ns = sntp_msg_to_unix_ns(tx);
	r->stratum = p[1];
	if (r->tx_ns < r->rx_ns) {
		sntp_msg_why(why, why_len, "transmit before receive", NULL);
		return -EINVAL;
	}
	if (r->rx_ns / 1000000000ULL < WALLCLOCK_MIN_S || r->tx_ns / 1000000000ULL > WALLCLOCK_MAX_S) {
		sntp_msg_why(why, why_len, "time outside 2024..2105", NULL);
		return -EINVAL;
	}
	return 0;
}

u64 sntp_msg_time_at(const struct sntp_reply *r, u64 t1_ns, u64 t4_ns)
{
	u64 rtt = t4_ns > t1_ns ? t4_ns - t1_ns : 0, held = r->tx_ns - r->rx_ns;
	u64 delay = rtt > held ? rtt - held : 0;

	return r->tx_ns + delay / 2;
}
