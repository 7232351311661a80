/*
 * vireo's application API: metrics the app declares, written on /metrics
 * (Prometheus text format 0.0.4) after the runtime's own families.
 *
 *	VIREO_COUNTER(hello_total, "template_hello_total", "Greetings sent.");
 *	... vireo_counter_inc(&hello_total);
 *
 *	VIREO_HISTOGRAM(sizes, "kv_value_bytes", "Sizes of the values stored.",
 *			64, 256, 1024, 4096);
 *	... vireo_histogram_observe(&sizes, len);
 *
 * Each macro defines the metric (static, in its file) and registers it at
 * link time. Name them as Prometheus does (`promtool check metrics` runs on
 * the apps' /metrics in their tests): counters end in _total, a unit in its
 * base form ends the name (_bytes, _seconds), nothing else ends in _total.
 * Counters only go up; gauges are signed. Histogram buckets are
 * upper bounds in the app's own unit, integers, ascending, at most
 * VIREO_HISTOGRAM_BUCKETS (a build error past that); the runtime adds +Inf,
 * _sum and _count. A labelled counter has one label and a fixed list of
 * values (at most VIREO_COUNTER_VEC_MAX) chosen by index.
 *
 * Checked at boot, each refusal one log line, the metric then left out of
 * /metrics (updates still work and cost nothing): a name that is not
 * [a-zA-Z_][a-zA-Z0-9_]* or starts with "vireo_" (the runtime's, and its own
 * apps': those built with VIREO_BUILTIN, vireo/app.h), a name
 * declared twice, buckets not ascending, a help text with a newline or
 * backslash, a bad label name (label values are escaped as the format
 * wants). Updates take a pointer to
 * the declared type, so handing a gauge to vireo_counter_inc() is a build
 * error.
 */
#ifndef VIREO_API_METRICS_H
#define VIREO_API_METRICS_H

#include "vireo/app.h"

enum vireo_metric_kind { VIREO_METRIC_COUNTER, VIREO_METRIC_GAUGE, VIREO_METRIC_HISTOGRAM, VIREO_METRIC_COUNTER_VEC };

#define VIREO_HISTOGRAM_BUCKETS 16
#define VIREO_COUNTER_VEC_MAX 16

/* The part the runtime reads; the macros fill it. */
struct vireo_metric {
	const char *name;
	const char *help;
	enum vireo_metric_kind kind;
	bool refused;		/* set at boot when a check fails */
	bool builtin;		/* declared by one of vireo's own apps (VIREO_BUILTIN) */
	void *value;		/* the typed struct below */
};

struct vireo_counter {
	u64 v;
};
struct vireo_gauge {
	s64 v;
};
struct vireo_histogram {
	const u64 *le;		/* n ascending upper bounds */
	u32 n;
	u64 *counts;		/* n + 1: the last is above every bound */
	u64 sum, count;
};
struct vireo_counter_vec {
	const char *label;
	const char *const *values;	/* n label values */
	u32 n;
	u64 *v;
};

/* Each metric is an entry of the metrics linker set (vireo/linkset.h). */
#define VIREO_METRIC_REGISTER_(var, name_, help_, kind_)                                   \
	static struct vireo_metric vireo_metricreg_##var = { .name = name_, .help = help_, \
							     .kind = kind_, .value = &var, \
							     .builtin = VIREO_BUILTIN_ }; \
	VIREO_LINKSET_ADD(metrics, struct vireo_metric, var, vireo_metricreg_##var)

#define VIREO_COUNTER(var, name_, help_)          \
	static struct vireo_counter var;          \
	VIREO_METRIC_REGISTER_(var, name_, help_, VIREO_METRIC_COUNTER)

#define VIREO_GAUGE(var, name_, help_)            \
	static struct vireo_gauge var;            \
	VIREO_METRIC_REGISTER_(var, name_, help_, VIREO_METRIC_GAUGE)

/* Buckets: integer constants, ascending. */
#define VIREO_HISTOGRAM(var, name_, help_, ...)                                                  \
	static const u64 var##_le[] = { __VA_ARGS__ };                                          \
	_Static_assert(sizeof(var##_le) / sizeof(u64) <= VIREO_HISTOGRAM_BUCKETS,               \
		       "VIREO_HISTOGRAM " name_ ": too many buckets");                          \
	static u64 var##_counts[sizeof(var##_le) / sizeof(u64) + 1];                            \
	static struct vireo_histogram var = { .le = var##_le,                                   \
					      .n = sizeof(var##_le) / sizeof(u64),              \
					      .counts = var##_counts };                         \
	VIREO_METRIC_REGISTER_(var, name_, help_, VIREO_METRIC_HISTOGRAM)

/* Label values: string literals; vireo_counter_vec_add(&var, i, n) counts
 * under the i-th. */
#define VIREO_COUNTER_VEC(var, name_, help_, label_, ...)                                       \
	static const char *const var##_values[] = { __VA_ARGS__ };                              \
	_Static_assert(sizeof(var##_values) / sizeof(var##_values[0]) <= VIREO_COUNTER_VEC_MAX, \
		       "VIREO_COUNTER_VEC " name_ ": too many label values");                   \
	static u64 var##_v[sizeof(var##_values) / sizeof(var##_values[0])];                     \
	static struct vireo_counter_vec var = { .label = label_, .values = var##_values,        \
						.n = sizeof(var##_values) / sizeof(var##_values[0]), \
						.v = var##_v };                                 \
	VIREO_METRIC_REGISTER_(var, name_, help_, VIREO_METRIC_COUNTER_VEC)

static inline void vireo_counter_add(struct vireo_counter *c, u64 n)
{
	c->v += n;
}
static inline void vireo_counter_inc(struct vireo_counter *c)
{
	c->v++;
}
static inline void vireo_gauge_set(struct vireo_gauge *g, s64 v)
{
	g->v = v;
}
static inline void vireo_gauge_add(struct vireo_gauge *g, s64 d)
{
	g->v += d;
}
/* Counts v in the first bucket whose bound is >= v. */
void vireo_histogram_observe(struct vireo_histogram *h, u64 v);
/* i outside the list is ignored (and counted by the runtime as misuse:
 * vireo_app_misuse_total). */
void vireo_counter_vec_add(struct vireo_counter_vec *c, u32 i, u64 n);

/* ---- families written when /metrics is read ---- */

/*
 * For what an app knows only when asked (a service's counters from
 * vireo_tcp_stats(), a table's size) or shows only while it runs:
 * fn(o, arg) is called each time /metrics is generated, after the declared
 * metrics, and writes its families with vireo_metrics_family() and each
 * family's samples with vireo_metrics_sample(). Names follow the declared
 * metrics' rules (a family refused is left out, its writer's first refusal
 * logged and every one counted as misuse). Register from init, at most
 * VIREO_METRICS_WRITERS of all apps: 0, -EINVAL (no fn), -ENOSPC.
 */
#define VIREO_METRICS_WRITERS 4
struct vireo_metrics_out;
int vireo_metrics_writer(void (*fn)(struct vireo_metrics_out *o, void *arg), void *arg);
/* kind: VIREO_METRIC_COUNTER or VIREO_METRIC_GAUGE. */
void vireo_metrics_family(struct vireo_metrics_out *o, const char *name, enum vireo_metric_kind kind,
			  const char *help);
/* A sample of the family last begun (name is its name): label NULL for
 * none, else label="value" (value escaped as the format wants). */
void vireo_metrics_sample(struct vireo_metrics_out *o, const char *name, const char *label, const char *value,
			  u64 v);

#endif
