/* A tiny serial-console command interpreter. Commands register themselves
 * next to their code with SHELL_CMD; `help` lists them. */
#ifndef VIREO_SHELL_H
#define VIREO_SHELL_H

#include "lib/types.h"
#include "vireo/linkset.h"

struct shell_cmd {
	const char *name;
	/* args: what follows the name and one space ("" for none). A command
	 * whose usage is NULL takes no arguments: given some, the shell says
	 * so and does not call it. */
	void (*fn)(const char *args);
	const char *usage;	/* e.g. "<fault>", shown by help; NULL: no arguments */
	const char *help;
	bool debug;		/* test-only: refused unless `debug` is on the command line */
};

/*
 * Registers a command at link time, next to the code it runs:
 *
 *	SHELL_CMD(mem, .name = "mem", .fn = cmd_mem, .help = "memory summary");
 *
 * The first argument only names the registration (unique in its file).
 * kernel/shell.c finds the commands in the shell linker set
 * (include/vireo/linkset.h) and includes no driver header.
 */
#define SHELL_CMD(id, ...)                                             \
	static const struct shell_cmd shellreg_##id = { __VA_ARGS__ }; \
	VIREO_LINKSET_ADD(shell, const struct shell_cmd, id, shellreg_##id)

/* Runs one input line (leading spaces skipped; an empty line does nothing). */
void shell_line(const char *line);

#endif
