/* Linker sets, the owner's side: the set a module walks (the entries come
 * from VIREO_LINKSET_ADD, include/vireo/linkset.h, which describes the
 * mechanism). */
#ifndef VIREO_LINKSET_H
#define VIREO_LINKSET_H

#include "lib/types.h"
#include "vireo/linkset.h"

/*
 * Declares the bounds of set `set` of `type *const` entries, once, at file
 * scope in the file that walks it. It also puts an empty anchor in the
 * section, so a set nothing registers into still has its bounds (equal)
 * rather than undefined symbols: an image without apps links, and a host
 * test links the set's owner without any entry.
 */
#define LINKSET_DECLARE(set, type)                                                          \
	extern type *const __start_vireo_##set[] __attribute__((visibility("hidden")));    \
	extern type *const __stop_vireo_##set[] __attribute__((visibility("hidden")));     \
	static type *const linkset_anchor_##set[0]                                          \
		__attribute__((used, section(VIREO_LINKSET_SECTION(set)), aligned(sizeof(void *))))

/* The entries of a declared set: LINKSET_BEGIN(set)[0 .. LINKSET_COUNT(set)). */
#define LINKSET_BEGIN(set) (__start_vireo_##set)
#define LINKSET_END(set) (__stop_vireo_##set)
#define LINKSET_COUNT(set) ((size_t)(LINKSET_END(set) - LINKSET_BEGIN(set)))
/* for (each entry) with p a `type *const *`. */
#define LINKSET_FOREACH(set, p) for ((p) = LINKSET_BEGIN(set); (p) < LINKSET_END(set); (p)++)

#endif
