/* Loads and stores at any alignment, little- and big-endian: the app API's
 * (include/vireo/byteorder.h), which the kernel shares. */
#ifndef VIREO_BYTEORDER_H
#define VIREO_BYTEORDER_H

#include "lib/types.h"
#include "vireo/byteorder.h"

#endif
