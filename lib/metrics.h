/*
 * Prometheus text exposition (format 0.0.4): a bounded line writer and the
 * registry of the sources that write /metrics. Pure (no kernel service), so
 * every layer from kernel/mm up exports through it and host tests build it
 * as it is; the runtime only serves the text (runtime/http/server.c).
 */
#ifndef VIREO_METRICS_H
#define VIREO_METRICS_H

#include "lib/types.h"
#include "vireo/linkset.h"

#define METRICS_CONTENT_TYPE "text/plain; version=0.0.4; charset=utf-8"

/*
 * Output buffer. Every write appends one or two whole lines or nothing: a
 * line that does not fit sets overflow and is dropped, as is everything after
 * it, so the text always ends at a line boundary. With buf NULL and size 0
 * nothing is stored and len counts what the output would need.
 */
struct metrics_buf {
	char *buf;
	size_t size;
	size_t len;
	bool overflow;
	bool count_only;
};

enum metrics_type { METRICS_COUNTER, METRICS_GAUGE, METRICS_HISTOGRAM };

void metrics_buf_init(struct metrics_buf *b, char *buf, size_t size);

/* "# HELP name help" and "# TYPE name counter|gauge|histogram": once per family, before
 * its samples. help must not contain a newline or backslash. Names follow
 * Prometheus' conventions (`promtool check metrics` finds nothing, tested
 * against a booted appliance): base units (seconds, bytes) as the last word
 * before _total, counters end in _total and nothing else does. */
void metrics_family(struct metrics_buf *b, const char *name, enum metrics_type type,
		    const char *help);

/* "name value", or "name{labels} value" when labels is not NULL; labels is
 * written as given (k="v",k2="v2"), so its values must already be escaped. */
void metrics_sample(struct metrics_buf *b, const char *name, const char *labels, u64 value);

/* A signed sample (gauges that may go below zero). */
void metrics_sample_s64(struct metrics_buf *b, const char *name, const char *labels, s64 value);

/* v / 10^decimals as a decimal fraction with `decimals` digits (at most 9)
 * after the point: a count of microseconds written in seconds, the base
 * unit, is metrics_sample_fixed(b, name, labels, us, 6). */
void metrics_sample_fixed(struct metrics_buf *b, const char *name, const char *labels, u64 v,
			  unsigned decimals);

/* "name{key="value"} v" with value escaped (\\, \", \n) as the format wants. */
void metrics_sample1(struct metrics_buf *b, const char *name, const char *key, const char *value,
		     u64 v);

/* A family with a single unlabelled sample. */
void metrics_simple(struct metrics_buf *b, const char *name, enum metrics_type type,
		    const char *help, u64 value);

/*
 * A source writes its families when /metrics is generated. It registers at
 * link time, next to the code whose counters it exports, in the
 * metrics_sources linker set (include/vireo/linkset.h):
 *
 *	static void loop_write_metrics(struct metrics_buf *b) { ... }
 *	METRICS_SOURCE(loop, loop_write_metrics);
 *
 * A source whose module is not running (a server not started, no device)
 * writes nothing. The first argument names the source (unique in the
 * image: the entry is named after it).
 */
struct metrics_source {
	const char *name;
	void (*write)(struct metrics_buf *b);
};
#define METRICS_SOURCE(id, write_)                                                  \
	static const struct metrics_source metrics_source_##id = { #id, write_ };  \
	VIREO_LINKSET_ADD(metrics_sources, const struct metrics_source, id, metrics_source_##id)

/* Writes every source into b, in link order. */
void metrics_write_all(struct metrics_buf *b);

#endif
