/*
 * Linker sets: vireo's one registration mechanism. A module registers an
 * object next to its own code; the module that owns the set walks every
 * entry the link gathered, and nothing calls the registering module from
 * above. Drivers (PCI_DRIVER, VIRTIO_DRIVER), command-line keys
 * (CMDLINE_PARAM), shell commands (SHELL_CMD), apps (VIREO_APP), their
 * metrics (VIREO_COUNTER...), the kernel's metrics sources (METRICS_SOURCE)
 * and IOMMU drivers (DMA_IOMMU) are all sets.
 *
 *	VIREO_LINKSET_ADD(apps, const struct vireo_app, hello, hello_app);
 *
 * puts a pointer to hello_app in the ELF section "vireo_apps"; `id` names
 * the entry (unique in its file). The section's name is a C identifier, so
 * the linker itself provides __start_vireo_apps and __stop_vireo_apps
 * around everything the link put there (linker/vireo.ld names no set; the
 * host's linker does the same for tests). The owner walks the set with
 * lib/linkset.h. Entries come in link order.
 *
 * This header includes nothing: the app API and every layer of the kernel
 * use it (tools/layers.py lets any file include it).
 */
#ifndef VIREO_LINKSET_H_API
#define VIREO_LINKSET_H_API

#define VIREO_LINKSET_SECTION(set) "vireo_" #set

#define VIREO_LINKSET_ADD(set, type, id, obj)                                            \
	static type *const vireo_linkset_##set##_##id                                     \
		__attribute__((used, section(VIREO_LINKSET_SECTION(set)), aligned(sizeof(void *)))) = &(obj)

#endif
