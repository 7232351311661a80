/* Prometheus text exposition (format 0.0.4): a bounded line writer and a registry of sources. */
#ifndef VIREO_NET_APP_METRICS_H
#define VIREO_NET_APP_METRICS_H

#include "lib/types.h"

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
 * its samples. help must not contain a newline or backslash. */
void metrics_family(struct metrics_buf *b, const char *name, enum metrics_type type,
		    const char *help);

/* "name value", or "name{labels} value" when labels is not NULL; labels is
 * written as given (k="v",k2="v2"), so its values must already be escaped. */
void metrics_sample(struct metrics_buf *b, const char *name, const char *labels, u64 value);

/* A signed sample (gauges that may go below zero). */
void metrics_sample_s64(struct metrics_buf *b, const char *name, const char *labels, s64 value);

/* "name{key="value"} v" with value escaped (\\, \", \n) as the format wants. */
void metrics_sample1(struct metrics_buf *b, const char *name, const char *key, const char *value,
		     u64 v);

/* A family with a single unlabelled sample. */
void metrics_simple(struct metrics_buf *b, const char *name, enum metrics_type type,
		    const char *help, u64 value);

/*
 * A source writes its families when /metrics is generated. The caller owns
 * the struct and keeps it alive; registering the same struct twice, or a
 * name already present, does nothing. Sources are written in registration
 * order after the built-in ones: uptime, kernel memory, lwIP.
 */
struct metrics_source {
	const char *name;
	void (*write)(struct metrics_buf *b);
	struct metrics_source *next;
};
void metrics_register(struct metrics_source *s);

/* Remove s again (tests; a source that stops). */
void metrics_unregister(struct metrics_source *s);

/* Write every source into b. */
void metrics_write_all(struct metrics_buf *b);

#endif
