/* Boot command line: key=value tokens parsed against a table of options. */
#ifndef VIREO_CMDLINE_H
#define VIREO_CMDLINE_H

#include "lib/types.h"
#include "vireo/linkset.h"

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
	/* Optional, for every type but CUSTOM: sees the parsed value (bool *,
	 * u64 *, int * or const char * as dst would get it) after the type's
	 * own checks and before it is stored; returns 0, or -EINVAL with a
	 * short reason in why[why_len] (the destination keeps its value). */
	int (*validate)(const void *val, char *why, size_t why_len);
	const char *def;	/* the default as the docs show it; for BOOL, UINT, HEX,
				 * ENUM and STR it must parse to dst's initial value
				 * (cmdline_default_ok) ... */
	bool def_prose;		/* ... unless this says def is prose: a default
				 * no value of the type can express */
	const char *values;	/* the accepted values for the docs; NULL: from the type */
	const char *help;
};

/*
 * Registers a command-line key next to the code it configures, at link time:
 *
 *	static u64 http_port = 80;
 *	CMDLINE_PARAM(http, .key = "http", .type = CMDLINE_UINT, .dst = &http_port,
 *		      .min = 1, .max = 65535, .def = "80", .help = "the HTTP server's port");
 *
 * The first argument only names the registration (unique in its file); the
 * rest initialises a struct cmdline_opt, put in the cmdline linker set
 * (include/vireo/linkset.h). kernel/config.c parses the boot command line
 * against every registered key (config_params()); the shell's `params` and
 * tools/cmdline_table.py print the table from the same fields.
 */
#define CMDLINE_PARAM(id, ...)                                               \
	static const struct cmdline_opt cmdlinereg_##id = { __VA_ARGS__ }; \
	VIREO_LINKSET_ADD(cmdline, const struct cmdline_opt, id, cmdlinereg_##id)

/* Receives one warning line (no newline); msg is only valid during the call. */
typedef void (*cmdline_warn_fn)(void *ctx, const char *msg);

/* Parses `line` (key=value tokens separated by spaces/tabs/newlines; values
 * may be "double quoted" to contain spaces) against opts[nopts]. A known key
 * with a valid value sets *dst (a repeated key: the last valid one wins); a
 * malformed value, unknown key or bare non-BOOL token calls warn(ctx, msg)
 * (warn may be NULL; msg starts "cmdline: ", and one about a key's value
 * ends ", keeping default[ <def>]") and leaves the destination alone. Never reads past the
 * NUL nor past CMDLINE_MAX bytes. Returns the number of warnings. */
int cmdline_parse(const char *line, const struct cmdline_opt *opts, size_t nopts, cmdline_warn_fn warn, void *ctx);

/* The same against a table of pointers (a linker set of CMDLINE_PARAMs). */
int cmdline_parse_set(const char *line, const struct cmdline_opt *const *set, size_t n, cmdline_warn_fn warn,
		      void *ctx);

/* A source of key=value settings (the command line, a file) and what its
 * caller hears of it. */
struct cmdline_source {
	const char *name;	/* every warning starts "<name>: " (a file's "<name> line N: ") */
	cmdline_warn_fn warn;	/* may be NULL */
	/* After o has taken val (the text as given); where is the warning
	 * prefix of the moment (for a file, with its line). May be NULL. */
	void (*set)(void *ctx, const char *where, const struct cmdline_opt *o, const char *val);
	/* A bad value keeps what o holds: writes the ", keeping ..." text
	 * into buf[size] and returns its length, or 0 for "default <def>".
	 * May be NULL. */
	int (*kept)(void *ctx, const struct cmdline_opt *o, char *buf, size_t size);
	void *ctx;		/* passed to warn, set and kept */
	int max_warn;		/* at most this many warnings reach warn, then one
				 * "<name>: N more warnings not shown"; 0: no bound */
};

/* cmdline_parse_set with the source's name, hooks and warning bound. */
int cmdline_parse_src(const char *line, const struct cmdline_opt *const *set, size_t n,
		      const struct cmdline_source *src);

/*
 * A configuration file, buf[0..len) (not NUL-terminated; NUL bytes are
 * data): one setting per line, "key=value" with blanks allowed around the
 * '=' and at either end, a value wholly in double quotes loses them; blank
 * lines and lines starting with '#' are skipped; "\r\n" endings and a last
 * line without '\n' are fine. Each setting goes through the same token
 * parser as the command line (a later line wins). A line longer than
 * CMDLINE_MAX - 1 characters, or holding a NUL or a byte that is not
 * printable ASCII (tab aside), is skipped with a warning
 * "<name> line N: ...". Returns the number of warnings.
 */
int cmdline_parse_file(const char *buf, size_t len, const struct cmdline_opt *const *set, size_t n,
		       const struct cmdline_source *src);

/* Whether o->def parses, with o's own type and checks (validate included),
 * to the value *dst holds now; true for CUSTOM, a NULL def and def_prose,
 * which have nothing to compare. Call before the command line is parsed. */
bool cmdline_default_ok(const struct cmdline_opt *o);

/* The accepted values of o as the docs and `params` show them: o->values,
 * or from the type (bool; min-max; hex; the choices joined by sep). */
void cmdline_describe_values(const struct cmdline_opt *o, const char *sep, char *buf, size_t size);

/* Parses a dotted-quad IPv4 address (four decimal parts 0..255, no leading
 * zeros beyond a lone 0) followed, when prefix is non-NULL, by an optional
 * "/len" (0..32; *prefix is -1 without it). *addr is host order (a.b.c.d is
 * a << 24 | ...). Returns 0, or -EINVAL with the outputs untouched. */
int cmdline_parse_ipv4(const char *s, u32 *addr, int *prefix);

#endif
