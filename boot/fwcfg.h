/* QEMU fw_cfg file reader (legacy I/O port interface), used by boot/ only. */
#ifndef VIREO_FWCFG_H
#define VIREO_FWCFG_H

#include "lib/types.h"

/* Copies the named fw_cfg file into buf (NUL-terminated, truncated to
 * size - 1). Returns its full length, or -ENOENT if absent or no fw_cfg. */
int fwcfg_read_file(const char *name, char *buf, size_t size);

#endif
