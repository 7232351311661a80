/* Linker sets: tables of pointers that the linker gathers from every object
 * (linker/vireo.ld lists each section between its start and end symbols).
 * A module adds an entry with LINKSET_ADD next to the code it registers;
 * the one that owns the set walks it with linkset_items(). */
#ifndef VIREO_LINKSET_H
#define VIREO_LINKSET_H

#include "lib/types.h"

/* One entry of section `sect`, pointing at obj; `tag` makes the name unique. */
#define LINKSET_ADD(sect, type, tag, obj)                                               \
	static type *const linkset_entry_##tag __attribute__((used, section(sect))) = &(obj)

/* The set's entries, as an array of n pointers, from its bounds. */
static inline const void *const *linkset_items(const char *start, const char *end, size_t *n)
{
	*n = (size_t)(end - start) / sizeof(void *);
	return (const void *const *)start;
}

#endif
