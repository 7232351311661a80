/* <string.h> for lwIP in the freestanding kernel: the kernel's own routines. */
#ifndef VIREO_LWIP_STRING_H
#define VIREO_LWIP_STRING_H
#include "lib/string.h"
#endif
