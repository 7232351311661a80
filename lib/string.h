/* The kernel's own memory and string routines (lib/string.c), as the app
 * API declares them (include/vireo/string.h). Kernel build only: the host
 * tests take the host's libc. */
#ifndef VIREO_STRING_H
#define VIREO_STRING_H

#include "lib/types.h"
#include "vireo/string.h"

#endif
