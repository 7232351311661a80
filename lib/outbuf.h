/* The output builder: the app API's (include/vireo/outbuf.h), implemented
 * in lib/outbuf.c. Pure: the host tests link it as it is. */
#ifndef VIREO_OUTBUF_H
#define VIREO_OUTBUF_H

#include "lib/types.h"
#include "vireo/outbuf.h"

#endif
