/*
 * vireo's application API: configuration keys the app declares. They are the
 * kernel's own kind (the kernel's keys register the same way, through
 * kernel/cmdline.h, which includes this header): set from EFI/vireo/vireo.cfg,
 * the command line (UEFI load options, fw_cfg, PVH) in that order, later wins;
 * a bad value is one warning naming the source and the key keeps its
 * default; `params` on the console lists them, and `make params` prints the
 * table docs/appliance.md holds (tools/cmdline_table.py). Name keys
 * "<app>.<name>".
 *
 *	VIREO_CONFIG_UINT(greet_times, "template.times", 1, 1, 10,
 *			  "how many times /hello greets");
 *	... use greet_times (a u64) from init or any callback.
 *
 * Each VIREO_CONFIG_ macro defines the variable (static, in the file that
 * declares it) with its default, and registers the key. Build-time checks:
 * the default lies in [min, max] and a string default fits its buffer. The
 * default is written as a plain number (or true/false): its text is what
 * `params` shows, and a text that does not parse to the value is a boot
 * warning. Keys are parsed before any app's init runs.
 *
 * A key the three macros cannot express (a list of choices, a parser or a
 * validator of the app's own, a default in words) is a CMDLINE_PARAM
 * (below), as the kernel's are: apps/echo's echo= is one.
 */
#ifndef VIREO_API_CONFIG_H
#define VIREO_API_CONFIG_H

#include "vireo/types.h"
#include "vireo/linkset.h"

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
	bool secret;		/* a secret (a token): the configuration's origin
				 * log shows it as hidden, never its value */
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
 * (vireo/linkset.h). kernel/config.c parses the boot
 * command line against every registered key (cmdline_params()); the shell's
 * `params` and tools/cmdline_table.py print the table from the same fields.
 */
#define CMDLINE_PARAM(id, ...)                                               \
	static const struct cmdline_opt cmdlinereg_##id = { __VA_ARGS__ }; \
	VIREO_LINKSET_ADD(cmdline, const struct cmdline_opt, id, cmdlinereg_##id)

/* var: u64 in [min, max] (max 0: no upper bound). */
#define VIREO_CONFIG_UINT(var, key_, def_, min_, max_, help_)                                  \
	_Static_assert((u64)(def_) >= (u64)(min_) && ((u64)(max_) == 0 || (u64)(def_) <= (u64)(max_)), \
		       "VIREO_CONFIG_UINT " key_ ": the default is outside [min, max]");     \
	static u64 var = (def_);                                                              \
	CMDLINE_PARAM(var, .key = key_, .type = CMDLINE_UINT, .dst = &var, .min = (min_),    \
		      .max = (max_), .def = #def_, .help = help_)

/* var: bool; def is true or false (on/off, yes/no, 1/0 are accepted). */
#define VIREO_CONFIG_BOOL(var, key_, def_, help_)                                             \
	static bool var = (def_);                                                             \
	CMDLINE_PARAM(var, .key = key_, .type = CMDLINE_BOOL, .dst = &var, .def = #def_,      \
		      .help = help_)

/* var: char[size], NUL-terminated; def a string literal. */
#define VIREO_CONFIG_STR(var, key_, size_, def_, help_)                                        \
	_Static_assert(sizeof(def_) <= (size_), "VIREO_CONFIG_STR " key_ ": the default does not fit"); \
	static char var[size_] = def_;                                                         \
	CMDLINE_PARAM(var, .key = key_, .type = CMDLINE_STR, .dst = var, .dst_size = (size_), \
		      .def = def_, .help = help_)

#endif
