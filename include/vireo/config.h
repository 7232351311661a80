/*
 * vireo's application API: configuration keys the app declares. They are the
 * kernel's own kind (kernel/cmdline.h): set from EFI/vireo/vireo.cfg, the
 * command line (UEFI load options, fw_cfg, PVH) in that order, later wins;
 * a bad value is one warning naming the source and the key keeps its
 * default; `params` on the console lists them. Name keys "<app>.<name>".
 *
 *	VIREO_CONFIG_UINT(greet_times, "template.times", 1, 1, 10,
 *			  "how many times /hello greets");
 *	... use greet_times (a u64) from init or any callback.
 *
 * Each macro defines the variable (static, in the file that declares it)
 * with its default, and registers the key. Build-time checks: the default
 * lies in [min, max] and a string default fits its buffer. The default is
 * written as a plain number (or true/false): its text is what `params`
 * shows, and a text that does not parse to the value is a boot warning.
 * Keys are parsed before any app's init runs.
 */
#ifndef VIREO_API_CONFIG_H
#define VIREO_API_CONFIG_H

#include "kernel/cmdline.h"
#include "vireo/app.h"

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
