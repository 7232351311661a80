/* Boot command line: key=value tokens parsed against a table of options. */
#ifndef VIREO_CMDLINE_H
#define VIREO_CMDLINE_H

#include "kernel/types.h"

/* Longest line looked at, NUL included: at most CMDLINE_MAX - 1 characters
 * are parsed; a longer line is cut (with a warning) before its last partial
 * token. */
#define CMDLINE_MAX 1024

enum cmdline_type { CMDLINE_BOOL, CMDLINE_UINT, CMDLINE_HEX, CMDLINE_ENUM, CMDLINE_STR, CMDLINE_CUSTOM };

struct cmdline_opt {
	const char *key;
	enum cmdline_type type;
	void *dst;		/* bool*, u64* (UINT/HEX), int* (ENUM: index into choices), char* (STR), any (CUSTOM) */
	size_t dst_size;	/* STR: buffer size including NUL */
	u64 min, max;		/* UINT/HEX inclusive range; max == 0 means no limit */
	const char *const *choices;	/* ENUM: NULL-terminated list */
	/* CUSTOM: return 0, or -EINVAL and write a short reason into why[why_len] */
	int (*parse)(const char *val, void *dst, char *why, size_t why_len);
	const char *help;
};

/* Receives one warning line (no newline); msg is only valid during the call. */
typedef void (*cmdline_warn_fn)(void *ctx, const char *msg);

/* Parses `line` (key=value tokens separated by spaces/tabs/newlines; values
 * may be "double quoted" to contain spaces) against opts[nopts]. A known key
 * with a valid value sets *dst (a repeated key: the last valid one wins); a
 * malformed value, unknown key or bare non-BOOL token calls warn(ctx, msg)
 * (warn may be NULL) and leaves the destination alone. Never reads past the
 * NUL nor past CMDLINE_MAX bytes. Returns the number of warnings. */
int cmdline_parse(const char *line, const struct cmdline_opt *opts, size_t nopts, cmdline_warn_fn warn, void *ctx);

/* Parses a dotted-quad IPv4 address (four decimal parts 0..255, no leading
 * zeros beyond a lone 0) followed, when prefix is non-NULL, by an optional
 * "/len" (0..32; *prefix is -1 without it). *addr is host order (a.b.c.d is
 * a << 24 | ...). Returns 0, or -EINVAL with the outputs untouched. */
int cmdline_parse_ipv4(const char *s, u32 *addr, int *prefix);

#endif
