/*
 * kernel_main: bring the machine up in dependency order, then enter the
 * event loop. Console contract (tests rely on it): `vireo <version>` first,
 * `vireo: kernel ready` once initialised, `vireo: panic: ...` on a panic.
 */
#include "drivers/acpi.h"
#include "drivers/pci.h"
#include "drivers/virtio.h"
#include "drivers/virtio_mmio.h"
#include "drivers/virtio_net.h"
#include "drivers/virtio_rng.h"
#include "kernel/boot_info.h"
#include "kernel/config.h"
#include "net/net.h"
#include "kernel/console.h"
#include "kernel/io.h"
#include "kernel/irq.h"
#include "kernel/loop.h"
#include "kernel/mm.h"
#include "kernel/panic.h"
#include "kernel/random.h"
#include "kernel/time.h"
#include "kernel/timeline.h"

static const char *const mem_type_names[] = {
	"free", "boot", "loader", "acpi", "acpi-nvs", "runtime", "mmio", "reserved",
};

static void print_memory_map(const struct boot_info *bi)
{
	u32 i;

	kprintf("memory map: %u regions%s\n", bi->nregions, bi->regions_dropped ? " (some dropped)" : "");
	for (i = 0; i < bi->nregions; i++) {
		const struct boot_region *r = &bi->regions[i];

		kprintf("  %#012lx-%#012lx %-8s (efi type %u)\n", r->base, r->base + r->len - 1,
			r->type < ARRAY_SIZE(mem_type_names) ? mem_type_names[r->type] : "?", r->efi_type);
	}
}

void kernel_main(struct boot_info *bi)
{
	int warnings;

	timeline_mark_at(bi->stamp_names[0], bi->tsc.efi_main);
	timeline_mark_at(bi->stamp_names[1], bi->tsc.after_exit);
	console_init();
	kprintf("vireo %s (%s)\n", VIREO_VERSION, VIREO_REV);
	trap_init();
	if (bi->magic != BOOT_INFO_MAGIC)
		panic("boot_info magic %#lx is wrong", bi->magic);

	kprintf("cmdline (%s): %s\n", bi->cmdline_src, bi->cmdline[0] ? bi->cmdline : "(empty)");
	warnings = config_parse(bi->cmdline);
	if (warnings)
		kprintf("cmdline: %d warning%s, continuing with defaults for those keys\n", warnings,
			warnings == 1 ? "" : "s");

	if (kconfig.verbose)
		print_memory_map(bi);
	mm_init(bi);
	trap_init_ist();
	timeline_mark("mm");
	mm_print_summary();

	acpi_init(bi);
	timeline_mark("acpi");
	apic_init();
	time_init(bi->tsc.efi_main);
	timeline_mark("time");
	kprintf("time: tsc %lu.%03lu MHz, lapic timer %lu.%03lu MHz (against %s)", time_tsc_hz() / 1000000,
		time_tsc_hz() / 1000 % 1000, time_lapic_hz() / 1000000, time_lapic_hz() / 1000 % 1000,
		time_reference());
	if (bi->exit_tries)
		kprintf(", exit_boot_services took %u tr%s", bi->exit_tries, bi->exit_tries == 1 ? "y" : "ies");
	kprintf("\n");
	acpi_power_init();
	random_init();
	console_enable_input();
	sti();

	pci_init();
	timeline_mark("pci");
	virtio_set_feature_mask(kconfig.virtio_features);
	vnet_set_echo(kconfig.vnet_echo);
	vnet_set_tso(kconfig.vnet_tso);
	vnet_set_coalesce(kconfig.coalesce.mode, kconfig.coalesce.frames, kconfig.coalesce.usecs);
	pci_probe_drivers();
	virtio_mmio_probe();
	timeline_mark("drivers");

	config_run_selftest();
	if (kconfig.selftest == SELFTEST_VIRTIO_NEEDS_RESET)
		virtio_rng_selftest(VRNG_SELFTEST_NEEDS_RESET);
	else if (kconfig.selftest == SELFTEST_VIRTIO_RING_RESET)
		virtio_rng_selftest(VRNG_SELFTEST_RING_RESET);

	timeline_mark("ready");
	timeline_print();
	kprintf("vireo: kernel ready\n");
	if (!kconfig.vnet_echo)
		net_init();
	loop_run();
}
