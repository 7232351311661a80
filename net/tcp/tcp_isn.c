/* TCP initial sequence numbers per RFC 6528 section 3:
 *	ISN = M + F(localip, localport, remoteip, remoteport, secretkey)
 * M is time_ns() in 4.096 us steps (the RFC's 4 us timer: it wraps the
 * 32-bit space in 4.9 hours, as RFC 793's clock does), F is SipHash-2-4
 * under a 128-bit key from the kernel's ChaCha20 generator, truncated to 32
 * bits. An off-path attacker who sees the ISNs of its own connections learns
 * nothing about another 4-tuple's; successive connections on one 4-tuple
 * still advance with the clock, which keeps old duplicates out (RFC 6528
 * section 3, last paragraph).
 *
 * The key is drawn on first use, the first connection, rather than at boot,
 * so that virtio-rng's entropy (mixed in while the network comes up) is in
 * it when there is a virtio-rng device. */
#include "kernel/random.h"
#include "lib/crypto/siphash.h"
#include "lib/string.h"
#include "kernel/time/time.h"
#include "lwip/ip_addr.h"
#include "net/port/lwip_hooks.h"
#include "net/tcp/tcp_isn.h"

void tcp_isn_key(struct siphash_key *k)
{
	u64 w[2];

	w[0] = (u64)random_u32() << 32 | random_u32();
	w[1] = (u64)random_u32() << 32 | random_u32();
	k->k0 = w[0];
	k->k1 = w[1];
}

size_t tcp_isn_tuple(u8 *buf, const ip_addr_t *local_ip, u16_t local_port,
		     const ip_addr_t *remote_ip, u16_t remote_port)
{
	size_t n = 0;
	const ip_addr_t *a[2] = { local_ip, remote_ip };
	int i;

	for (i = 0; i < 2; i++) {
#if LWIP_IPV6
		if (IP_IS_V6(a[i])) {
			memcpy(buf + n, ip_2_ip6(a[i])->addr, 16);
			n += 16;
			continue;
		}
#endif
		memcpy(buf + n, &ip_2_ip4(a[i])->addr, 4);
		n += 4;
	}
	buf[n++] = (u8)(local_port >> 8);
	buf[n++] = (u8)local_port;
	buf[n++] = (u8)(remote_port >> 8);
	buf[n++] = (u8)remote_port;
	return n;
}

/* A key drawn on first use, kept for the life of the kernel. */
struct tuple_key {
	struct siphash_key k;
	bool set;
};

/* SipHash-2-4 of the 4-tuple under key, truncated to 32 bits. */
static u32_t tuple_hash(struct tuple_key *key, const ip_addr_t *local_ip, u16_t local_port,
			const ip_addr_t *remote_ip, u16_t remote_port)
{
	u8 buf[TCP_ISN_TUPLE_MAX];
	size_t n;

	if (!key->set) {
		tcp_isn_key(&key->k);
		key->set = true;
	}
	n = tcp_isn_tuple(buf, local_ip, local_port, remote_ip, remote_port);
	return (u32_t)siphash24(&key->k, buf, n);
}

static struct tuple_key isn_key;

u32_t vireo_tcp_isn(const ip_addr_t *local_ip, u16_t local_port,
		    const ip_addr_t *remote_ip, u16_t remote_port)
{
	return tuple_hash(&isn_key, local_ip, local_port, remote_ip, remote_port) +
	       (u32_t)(time_ns() >> 12);
}

/* LWIP_HOOK_TCP_PCB_HASH: the bucket hash of lwIP's 4-tuple index (patch
 * 0010), SipHash-2-4 under a key of its own drawn on first use and never
 * changed (lwIP keeps each PCB's hash). A remote party chooses its address
 * and ports but cannot tell which 4-tuples share a bucket, so the PCBs a
 * segment's lookup examines stay about one plus the table's load. */
static struct tuple_key pcb_hash_key;

u32_t vireo_tcp_pcb_hash(const ip_addr_t *local_ip, u16_t local_port,
			 const ip_addr_t *remote_ip, u16_t remote_port)
{
	return tuple_hash(&pcb_hash_key, local_ip, local_port, remote_ip, remote_port);
}
