/* The boot command line: every key registered with CMDLINE_PARAM
 * (kernel/cmdline.h) next to the code it configures, parsed in one place. */
#ifndef VIREO_CONFIG_H
#define VIREO_CONFIG_H

#include "kernel/cmdline.h"
#include "kernel/types.h"

/* Checks the table (config_check), then parses the boot command line
 * against it, warning on the console ("warning: cmdline: ...") for each bad
 * token; a bad value keeps the key's default. Returns the warning count. */
int config_parse(const char *cmdline);

/* The registered keys: *set receives the table (a linker set, in link
 * order); returns its length. */
size_t config_params(const struct cmdline_opt *const **set);

/* Checks the table itself: a key registered twice, an entry with no key or
 * help, a default text that does not parse to its variable's initial
 * value. Calls warn once per problem; returns the number of problems. */
int config_check(cmdline_warn_fn warn, void *ctx);

/* Prints the table, sorted by key, one "  key=<values> (default <d>): help"
 * line each (the shell's `params`; tools/cmdline_table.py prints the same). */
void config_print_params(void);

#endif
