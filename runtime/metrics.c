/*
 * Prometheus text format 0.0.4 writer and the /metrics registry.
 *
 * Each family's samples follow its own # HELP and # TYPE lines, as the format
 * requires, so tables such as lwIP's per-protocol counters are written field
 * by field, one family per field with a proto label. Values are u64 integers.
 */
#include "kernel/mm/mm.h"
#include "lib/outbuf.h"
#include "lib/string.h"
#include "kernel/time/time.h"
#include "lib/types.h"
#include "lwip/memp.h"
#include "lwip/stats.h"
#include "runtime/metrics.h"
#include "net/port/lwip_port.h"

/* ---- the writer ---- */

void metrics_buf_init(struct metrics_buf *b, char *buf, size_t size)
{
	b->buf = buf;
	b->size = buf ? size : 0;
	b->len = 0;
	b->overflow = false;
	b->count_only = buf == NULL;
}

/* A line under construction: appended after b->len, committed by metrics_line_end(). */
struct line {
	struct metrics_buf *b;
	struct outbuf o;	/* over b's buffer, from b->len */
};

/* Label values: backslash, double quote and newline are escaped. */
static void metrics_put_escaped(struct line *l, const char *s)
{
	for (; *s; s++) {
		if (*s == '\\')
			outbuf_str(&l->o, "\\\\");
		else if (*s == '"')
			outbuf_str(&l->o, "\\\"");
		else if (*s == '\n')
			outbuf_str(&l->o, "\\n");
		else
			outbuf_mem(&l->o, s, 1);
	}
}

static bool metrics_line_begin(struct metrics_buf *b, struct line *l)
{
	l->b = b;
	l->o.buf = b->buf;
	l->o.size = b->size;
	l->o.len = b->len;
	return !b->overflow;
}

/* Keep the line if all of it fit; otherwise drop it and everything after. */
static void metrics_line_end(struct line *l)
{
	outbuf_mem(&l->o, "\n", 1);
	if (l->b->count_only || l->o.len <= l->b->size)
		l->b->len = l->o.len;
	else
		l->b->overflow = true;
}

void metrics_family(struct metrics_buf *b, const char *name, enum metrics_type type,
		    const char *help)
{
	struct line l;

	if (!metrics_line_begin(b, &l))
		return;
	outbuf_str(&l.o, "# HELP ");
	outbuf_str(&l.o, name);
	outbuf_str(&l.o, " ");
	outbuf_str(&l.o, help);
	outbuf_str(&l.o, "\n# TYPE ");
	outbuf_str(&l.o, name);
	outbuf_str(&l.o, type == METRICS_COUNTER ? " counter" : type == METRICS_GAUGE ? " gauge" : " histogram");
	metrics_line_end(&l);
}

/* One sample: name{labels} [-]magnitude. */
static void metrics_sample_sign(struct metrics_buf *b, const char *name, const char *labels, bool neg, u64 mag)
{
	struct line l;

	if (!metrics_line_begin(b, &l))
		return;
	outbuf_str(&l.o, name);
	if (labels) {
		outbuf_str(&l.o, "{");
		outbuf_str(&l.o, labels);
		outbuf_str(&l.o, "}");
	}
	outbuf_str(&l.o, neg ? " -" : " ");
	outbuf_u64(&l.o, mag);
	metrics_line_end(&l);
}

void metrics_sample(struct metrics_buf *b, const char *name, const char *labels, u64 value)
{
	metrics_sample_sign(b, name, labels, false, value);
}

void metrics_sample_s64(struct metrics_buf *b, const char *name, const char *labels, s64 value)
{
	metrics_sample_sign(b, name, labels, value < 0, value < 0 ? (u64)0 - (u64)value : (u64)value);
}

void metrics_sample1(struct metrics_buf *b, const char *name, const char *key, const char *value,
		     u64 v)
{
	struct line l;

	if (!metrics_line_begin(b, &l))
		return;
	outbuf_str(&l.o, name);
	outbuf_str(&l.o, "{");
	outbuf_str(&l.o, key);
	outbuf_str(&l.o, "=\"");
	metrics_put_escaped(&l, value ? value : "");
	outbuf_str(&l.o, "\"} ");
	outbuf_u64(&l.o, v);
	metrics_line_end(&l);
}

void metrics_simple(struct metrics_buf *b, const char *name, enum metrics_type type,
		    const char *help, u64 value)
{
	metrics_family(b, name, type, help);
	metrics_sample(b, name, NULL, value);
}

/* ---- built-in sources ---- */

static void metrics_write_uptime(struct metrics_buf *b)
{
	metrics_simple(b, "vireo_uptime_seconds", METRICS_GAUGE,
		       "Seconds since the kernel's clock started.", time_ns() / NSEC_PER_SEC);
}

static void metrics_write_kernel_mem(struct metrics_buf *b)
{
	struct mm_stats s;

	mm_get_stats(&s);
	metrics_simple(b, "vireo_mem_usable_bytes", METRICS_GAUGE,
		       "Usable RAM (conventional and reclaimed boot-services memory).",
		       s.usable_bytes);
	metrics_simple(b, "vireo_mem_frames_total", METRICS_GAUGE,
		       "Page frames managed by the frame allocator.", s.total_frames);
	metrics_simple(b, "vireo_mem_frames_free", METRICS_GAUGE, "Page frames free.",
		       s.free_frames);
	metrics_simple(b, "vireo_mem_page_table_pages", METRICS_GAUGE,
		       "Pages used by the kernel's page tables.", s.pt_pages);
	metrics_simple(b, "vireo_mem_heap_in_use_bytes", METRICS_GAUGE,
		       "Kernel heap bytes in use, block headers included.", s.heap_in_use);
	metrics_simple(b, "vireo_mem_heap_peak_bytes", METRICS_GAUGE,
		       "Highest kernel heap use so far.", s.heap_peak);
	metrics_simple(b, "vireo_mem_heap_arena_bytes", METRICS_GAUGE,
		       "Bytes the kernel heap's arenas hold.", s.heap_arena);
}

/* lwIP's struct stats_proto, one table row per protocol. */
static const struct {
	const char *name;
	const struct stats_proto *st;
} protos[] = {
	{ "link", &lwip_stats.link },
	{ "etharp", &lwip_stats.etharp },
	{ "ip_frag", &lwip_stats.ip_frag },
	{ "ip", &lwip_stats.ip },
	{ "icmp", &lwip_stats.icmp },
	{ "udp", &lwip_stats.udp },
	{ "tcp", &lwip_stats.tcp },
	{ "ip6", &lwip_stats.ip6 },
	{ "icmp6", &lwip_stats.icmp6 },
	{ "ip6_frag", &lwip_stats.ip6_frag },
	{ "nd6", &lwip_stats.nd6 },
};

/* The columns: family name, help and the field's offset. */
#define PROTO_FIELD(f, h) { "vireo_lwip_" #f "_total", h, offsetof(struct stats_proto, f) }
static const struct {
	const char *name;
	const char *help;
	size_t off;
} proto_fields[] = {
	PROTO_FIELD(xmit, "Packets transmitted, by lwIP protocol layer."),
	PROTO_FIELD(recv, "Packets received, by lwIP protocol layer."),
	PROTO_FIELD(fw, "Packets forwarded, by lwIP protocol layer."),
	PROTO_FIELD(drop, "Packets dropped, by lwIP protocol layer."),
	PROTO_FIELD(chkerr, "Checksum errors, by lwIP protocol layer."),
	PROTO_FIELD(lenerr, "Invalid length errors, by lwIP protocol layer."),
	PROTO_FIELD(memerr, "Out of memory errors, by lwIP protocol layer."),
	PROTO_FIELD(rterr, "Routing errors, by lwIP protocol layer."),
	PROTO_FIELD(proterr, "Protocol errors, by lwIP protocol layer."),
	PROTO_FIELD(opterr, "Option errors, by lwIP protocol layer."),
	PROTO_FIELD(err, "Other errors, by lwIP protocol layer."),
	PROTO_FIELD(cachehit, "Cache hits, by lwIP protocol layer."),
};

static void metrics_write_lwip(struct metrics_buf *b)
{
	struct vireo_lwip_heap_stats hs;
	u32 orphans, orphan_bytes;
	size_t f, i;

	metrics_simple(b, "vireo_lwip_heap_bytes", METRICS_GAUGE,
		       "Size of lwIP's private heap.", vireo_lwip_stats.heap_bytes);
	metrics_simple(b, "vireo_lwip_time_wait_trimmed_total", METRICS_COUNTER,
		       "TIME_WAIT PCBs dropped above the port's cap.", vireo_lwip_stats.tw_trimmed);
	metrics_simple(b, "vireo_lwip_time_wait_reopened_total", METRICS_COUNTER,
		       "TIME_WAIT PCBs dropped for a new SYN above the old connection's sequence numbers.",
		       vireo_lwip_stats.tw_reopened);
	metrics_simple(b, "vireo_lwip_rx_coalesced_acks_total", METRICS_COUNTER,
		       "Segments of more than one MSS (receive TSO) acknowledged at once.",
		       vireo_lwip_stats.rx_coalesced_acks);
	metrics_simple(b, "vireo_lwip_syn_rcvd_trimmed_total", METRICS_COUNTER,
		       "Half-open connections aborted after the port's SYN_RCVD limit.", vireo_lwip_stats.syn_trimmed);
	metrics_simple(b, "vireo_lwip_syncookies_sent_total", METRICS_COUNTER,
		       "SYN-ACKs sent with a SYN cookie (listen backlog full).", vireo_lwip_stats.syncookies_sent);
	metrics_simple(b, "vireo_lwip_syncookies_validated_total", METRICS_COUNTER,
		       "ACKs with a valid SYN cookie, each a new connection.", vireo_lwip_stats.syncookies_validated);
	metrics_simple(b, "vireo_lwip_syncookies_rejected_total", METRICS_COUNTER,
		       "ACKs to a listener with an invalid or expired SYN cookie.", vireo_lwip_stats.syncookies_rejected);
	vireo_lwip_orphans_count(&orphans, &orphan_bytes);
	metrics_simple(b, "vireo_lwip_orphans", METRICS_GAUGE,
		       "TCP connections closed by the application that lwIP still holds.", orphans);
	metrics_simple(b, "vireo_lwip_orphans_bytes", METRICS_GAUGE,
		       "lwIP heap the orphans hold (estimate from above).", orphan_bytes);
	metrics_simple(b, "vireo_lwip_orphans_peak", METRICS_GAUGE,
		       "Most orphans at once, after the cap.", vireo_lwip_stats.orphans_peak);
	metrics_family(b, "vireo_lwip_orphans_aborted_total", METRICS_COUNTER,
		       "Orphans aborted by the port, by reason.");
	metrics_sample1(b, "vireo_lwip_orphans_aborted_total", "reason", "cap",
			vireo_lwip_stats.orphans_capped);
	metrics_sample1(b, "vireo_lwip_orphans_aborted_total", "reason", "timeout",
			vireo_lwip_stats.orphans_timedout);

	metrics_simple(b, "vireo_lwip_mem_avail_bytes", METRICS_GAUGE,
		       "lwIP heap bytes available.", lwip_stats.mem.avail);
	metrics_simple(b, "vireo_lwip_mem_used_bytes", METRICS_GAUGE,
		       "lwIP heap bytes in use.", lwip_stats.mem.used);
	metrics_simple(b, "vireo_lwip_mem_max_bytes", METRICS_GAUGE,
		       "Highest lwIP heap use so far.", lwip_stats.mem.max);
	metrics_simple(b, "vireo_lwip_mem_errors_total", METRICS_COUNTER,
		       "lwIP heap allocations that failed.", lwip_stats.mem.err);
	vireo_lwip_heap_stats(&hs);
	metrics_simple(b, "vireo_lwip_heap_pages", METRICS_GAUGE,
		       "Pages of lwIP's segregated heap (8 KiB each).", hs.pages);
	metrics_simple(b, "vireo_lwip_heap_pages_used", METRICS_GAUGE,
		       "lwIP heap pages held by a size class or a large block.", hs.pages_used);
	metrics_simple(b, "vireo_lwip_heap_pages_peak", METRICS_GAUGE,
		       "Most lwIP heap pages held at once.", hs.pages_peak);
	metrics_simple(b, "vireo_lwip_heap_bad_frees_total", METRICS_COUNTER,
		       "Frees of a pointer that was no live lwIP heap block (ignored).", hs.bad_frees);

	metrics_family(b, "vireo_lwip_memp_used", METRICS_GAUGE,
		       "Elements in use, by lwIP memory pool.");
	for (i = 0; i < MEMP_MAX; i++)
		metrics_sample1(b, "vireo_lwip_memp_used", "pool", lwip_stats.memp[i]->name,
				lwip_stats.memp[i]->used);
	metrics_family(b, "vireo_lwip_memp_max", METRICS_GAUGE,
		       "Most elements ever in use, by lwIP memory pool.");
	for (i = 0; i < MEMP_MAX; i++)
		metrics_sample1(b, "vireo_lwip_memp_max", "pool", lwip_stats.memp[i]->name,
				lwip_stats.memp[i]->max);
	metrics_family(b, "vireo_lwip_memp_avail", METRICS_GAUGE,
		       "Budgeted elements (MEMP_NUM_*), by lwIP memory pool.");
	for (i = 0; i < MEMP_MAX; i++)
		metrics_sample1(b, "vireo_lwip_memp_avail", "pool", lwip_stats.memp[i]->name,
				lwip_stats.memp[i]->avail);
	metrics_family(b, "vireo_lwip_memp_errors_total", METRICS_COUNTER,
		       "Failed allocations, by lwIP memory pool.");
	for (i = 0; i < MEMP_MAX; i++)
		metrics_sample1(b, "vireo_lwip_memp_errors_total", "pool", lwip_stats.memp[i]->name,
				lwip_stats.memp[i]->err);

	for (f = 0; f < ARRAY_SIZE(proto_fields); f++) {
		metrics_family(b, proto_fields[f].name, METRICS_COUNTER, proto_fields[f].help);
		for (i = 0; i < ARRAY_SIZE(protos); i++) {
			const STAT_COUNTER *v = (const STAT_COUNTER *)(const void *)
				((const u8 *)protos[i].st + proto_fields[f].off);

			metrics_sample1(b, proto_fields[f].name, "proto", protos[i].name, *v);
		}
	}
}

/* ---- the registry ---- */

static struct metrics_source src_lwip = { "lwip", metrics_write_lwip, NULL };
static struct metrics_source src_mem = { "mem", metrics_write_kernel_mem, &src_lwip };
static struct metrics_source src_uptime = { "uptime", metrics_write_uptime, &src_mem };
static struct metrics_source *sources = &src_uptime;

void metrics_register(struct metrics_source *s)
{
	struct metrics_source **pp;

	for (pp = &sources; *pp; pp = &(*pp)->next)
		if (*pp == s || strcmp((*pp)->name, s->name) == 0)
			return;
	s->next = NULL;
	*pp = s;
}

void metrics_unregister(struct metrics_source *s)
{
	struct metrics_source **pp;

	for (pp = &sources; *pp; pp = &(*pp)->next) {
		if (*pp == s) {
			*pp = s->next;
			s->next = NULL;
			return;
		}
	}
}

void metrics_write_all(struct metrics_buf *b)
{
	struct metrics_source *s;

	for (s = sources; s; s = s->next)
		s->write(b);
}
