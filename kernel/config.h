/* The boot command line: every key registered with CMDLINE_PARAM
 * (kernel/cmdline.h) next to the code it configures, parsed in one place. */
#ifndef VIREO_CONFIG_H
#define VIREO_CONFIG_H

#include "kernel/cmdline.h"
#include "lib/types.h"

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

struct boot_info;

/*
 * The boot's configuration, every source in order (later wins): the
 * built-in defaults; EFI/vireo/vireo.cfg as boot/ read it (bi->files[BOOT_FILE_CFG]);
 * bi->cmdline. Checks the table, logs the file's state and the command
 * line, warns "warning: <source>: ..." for each bad line or token (a bad
 * value keeps what the key held: its default or an earlier source's
 * value), then logs "config: key=value (from <source>)" for every key a
 * source set. Returns the number of warnings.
 */
int config_boot(const struct boot_info *bi);

/* One source: a file's text (cmdline_parse_file; label names it in
 * warnings and the origin log) or a command line (warnings say "cmdline";
 * label, which must outlive the boot, is the origin). Return warnings. */
int config_apply_file(const char *label, const char *buf, size_t len);
int config_apply_cmdline(const char *label, const char *line);

/* The label of the source that set o last, or NULL (its default). */
const char *config_origin(const struct cmdline_opt *o);

/* The "config: key=value (from <source>)" lines; forgetting them (tests). */
void config_print_origins(void);
/* Only the keys the source labelled label set (a late source: metadata). */
void config_print_origins_from(const char *label);
void config_reset_origins(void);

/* Prints the table, sorted by key, one "  key=<values> (default <d>): help"
 * line each (the shell's `params`; tools/cmdline_table.py prints the same). */
void config_print_params(void);

#endif
