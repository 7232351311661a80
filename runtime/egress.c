/*
 * The egress policy (egress.h) and the egress.allow= key. Pure: the check
 * touches nothing but its argument and the key's list (host tests in
 * tests/host/runtime/test_egress.c). Cold: once per outbound connection.
 */
#include "runtime/egress.h"
#include "kernel/cmdline.h"

struct allow_list egress_allow;	/* n == 0: nothing let through */

CMDLINE_PARAM(egress_allow, .key = "egress.allow", .type = CMDLINE_CUSTOM, .dst = &egress_allow,
	      .parse = allow_parse, .def = "none", .def_prose = true,
	      .values = "comma-separated CIDR prefixes",
	      .help = "private, loopback, link-local, multicast ranges apps may connect to");

/* One refused prefix: its first bytes (the rest zero), its length in bits
 * of the 128, its kind. */
static const struct egress_range {
	u8 a[4];
	u8 at;		/* where a[] goes: 0 (IPv6), or 12 (IPv4-mapped) */
	u8 len;
	u8 kind;
} egress_ranges[] = {
#define V4(a0, a1, n, k) { { a0, a1, 0, 0 }, 12, 96 + (n), k }
	V4(0, 0, 8, EGRESS_UNSPECIFIED),
	V4(127, 0, 8, EGRESS_LOOPBACK),
	V4(169, 254, 16, EGRESS_LINK_LOCAL),
	V4(10, 0, 8, EGRESS_PRIVATE),
	V4(172, 16, 12, EGRESS_PRIVATE),
	V4(192, 168, 16, EGRESS_PRIVATE),
	V4(224, 0, 4, EGRESS_MULTICAST),
	V4(240, 0, 4, EGRESS_BROADCAST),
#undef V4
	{ { 0 }, 0, 128, EGRESS_UNSPECIFIED },		/* :: */
	{ { 0 }, 0, 127, EGRESS_LOOPBACK },		/* ::1 (with ::, above) */
	{ { 0xfe, 0x80 }, 0, 10, EGRESS_LINK_LOCAL },
	{ { 0xfc }, 0, 7, EGRESS_PRIVATE },
	{ { 0xff }, 0, 8, EGRESS_MULTICAST },
};

static const char *const egress_names[] = {
	[EGRESS_OK] = "allowed", [EGRESS_UNSPECIFIED] = "unspecified", [EGRESS_LOOPBACK] = "loopback",
	[EGRESS_LINK_LOCAL] = "link-local", [EGRESS_PRIVATE] = "private", [EGRESS_MULTICAST] = "multicast",
	[EGRESS_BROADCAST] = "broadcast",
};

__cold const char *egress_kind_name(enum egress_kind k)
{
	return (unsigned)k < ARRAY_SIZE(egress_names) ? egress_names[k] : "?";
}

__cold enum egress_kind egress_check(const u8 a[16])
{
	const struct egress_range *r;

	for (r = egress_ranges; r < egress_ranges + ARRAY_SIZE(egress_ranges); r++) {
		u8 p[16] = { 0 };

		if (r->at == 12)
			allow_addr_v4(p, 0);
		__builtin_memcpy(p + r->at, r->a, 4);
		if (!allow_prefix_match(p, r->len, a))
			continue;
		if (egress_allow.n && allow_match(&egress_allow, a))
			return EGRESS_OK;
		return (enum egress_kind)r->kind;
	}
	return EGRESS_OK;
}
