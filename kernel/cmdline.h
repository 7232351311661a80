/* Boot command line: key=value tokens parsed against a table of options,
 * the CMDLINE_PARAM registrations (include/vireo/config.h: the kernel's keys
 * and the apps' are one kind). */
#ifndef VIREO_CMDLINE_H
#define VIREO_CMDLINE_H

#include "lib/types.h"
#include "vireo/config.h"	/* struct cmdline_opt, CMDLINE_PARAM: the registration apps share */

/* Longest line looked at, NUL included: at most CMDLINE_MAX - 1 characters
 * are parsed; a longer line is cut (with a warning) before its last partial
 * token. */
#define CMDLINE_MAX 1024

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

/* line as the log may show it: the value of every key of set[0..n) marked
 * secret is replaced by "...", whichever quoting the parser would accept;
 * all else is copied byte for byte. Writes at most size - 1 bytes and a NUL
 * (size > 0) and returns the length of the whole redacted line, as
 * snprintf does. */
size_t cmdline_redact(const char *line, const struct cmdline_opt *const *set, size_t n, char *out, size_t size);

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
