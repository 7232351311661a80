/* Parsing helpers shared by the command line, the drivers' settings, the
 * formatter and the HTTP parser: the app API's (include/vireo/parse.h),
 * implemented in lib/parse.c. Pure: the host tests link it as it is. */
#ifndef VIREO_PARSE_H
#define VIREO_PARSE_H

#include "lib/types.h"
#include "vireo/parse.h"

#endif
