/* The intrusive doubly linked list: the app API's (include/vireo/list.h),
 * all of it inline there. Pure: the host tests include it as it is. */
#ifndef VIREO_LIST_H
#define VIREO_LIST_H

#include "lib/types.h"
#include "vireo/list.h"

#endif
