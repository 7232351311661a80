/* libFuzzer target for net/clients/sntp_msg.c: arbitrary bytes as a server's reply.
 * Checks: no crash or over-read (an exactly-sized copy), a refusal always
 * has a printable reason, an accepted reply is in wallclock.h's range with
 * receive <= transmit, and the time derived from it never goes below the
 * transmit time. */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "kernel/time/wallclock.h"
#include "net/clients/sntp_msg.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	u8 *copy = malloc(size ? size : 1);
	struct sntp_reply r;
	char why[64];
	u64 nonce = size >= 32 ? 0 : 1;

	memcpy(copy, data, size);
	/* Half the inputs carry their own originate as the nonce, so the
	 * checks behind it are reached. */
	if (size >= 32 && (data[0] & 0x80) == 0)
		for (int i = 0; i < 8; i++)
			nonce = nonce << 8 | data[24 + i];
	memset(why, 0xaa, sizeof why);
	if (sntp_msg_check(copy, size, nonce, &r, why, sizeof why) == 0) {
		if (r.rx_ns > r.tx_ns || r.tx_ns / 1000000000ULL > WALLCLOCK_MAX_S ||
		    r.rx_ns / 1000000000ULL < WALLCLOCK_MIN_S || r.stratum < 1 || r.stratum > 15)
			abort();
		if (sntp_msg_time_at(&r, size, size * 3) < r.tx_ns)
			abort();
	} else {
		size_t n = strnlen(why, sizeof why);

		if (n == 0 || n == sizeof why)
			abort();
		for (size_t i = 0; i < n; i++)
			if ((u8)why[i] < 0x20 || (u8)why[i] >= 0x7f)
				abort();
	}
	free(copy);
	return 0;
}
