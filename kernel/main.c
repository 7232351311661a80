/*
 * kernel_main: bring the machine up in dependency order, then enter the
 * event loop. Console contract (tests rely on it): `vireo <version>` first,
 * `vireo: kernel ready` once initialised, `vireo: panic: ...` on a panic.
 *
 * The composition root: the one file that includes every layer's headers
 * (drivers/, net/, runtime/, debug/). Drivers, the network and the
 * appliance read their own command-line keys (CMDLINE_PARAM) and register
 * their own shell commands (SHELL_CMD); this file only starts them in order.
 */
#include "debug/debug.h"
#include "drivers/acpi/acpi.h"
#include "drivers/pci/pci.h"
#include "drivers/iommu/vtd.h"
#include "drivers/virtio/virtio_mmio.h"
#include "drivers/virtio/net/virtio_net.h"
#include "kernel/boot_info.h"
#include "kernel/time/wallclock.h"
#include "kernel/cmdline.h"
#include "kernel/config.h"
#include "kernel/console.h"
#include "kernel/arch/io.h"
#include "kernel/arch/irq.h"
#include "kernel/loop.h"
#include "kernel/mm/mm.h"
#include "kernel/panic.h"
#include "kernel/random.h"
#include "kernel/time/time.h"
#include "kernel/time/timeline.h"
#include "runtime/api.h"
#include "runtime/app.h"
#include "runtime/site.h"
#include "net/net.h"
#ifdef VIREO_TLS
#include "net/tls/tls.h"
#endif

static bool verbose;
CMDLINE_PARAM(verbose, .key = "verbose", .type = CMDLINE_BOOL, .dst = &verbose, .def = "off",
	      .help = "print the firmware memory map");

static const char *const mem_type_names[] = {
	"free", "boot", "loader", "acpi", "acpi-nvs", "runtime", "mmio", "reserved",
};

static void main_print_memory_map(const struct boot_info *bi)
{
	u32 i;

	kprintf("memory map: %u regions%s\n", bi->nregions, bi->regions_dropped ? " (some dropped)" : "");
	for (i = 0; i < bi->nregions; i++) {
		const struct boot_region *r = &bi->regions[i];

		kprintf("  %#012lx-%#012lx %-8s (efi type %u)\n", r->base, r->base + r->len - 1,
			r->type < ARRAY_SIZE(mem_type_names) ? mem_type_names[r->type] : "?", r->efi_type);
	}
}

/* The netif on the first virtio-net device, the appliance's listeners, the
 * addresses the command line gives, then the link (net/net.h). */
static void main_start_network(void)
{
	struct netup_addrs addrs;
	struct netif *n = netif_vnet_add();
	int err;

	if (!n)
		return;
	err = app_start();
	if (err)
		kprintf("net: appliance failed to start (%d)\n", err);
	netup_cmdline_addrs(&addrs);
	if (netup_start(n, &addrs, app_http_port()) == 0)
		netif_vnet_attach();
	err = sntp_start();
	if (err)
		kprintf("net: ntp client failed to start (%d)\n", err);
	err = syslog_start();
	if (err)
		kprintf("net: syslog failed to start (%d)\n", err);
}

/* The provisional wall clock from the firmware's, its source said; SNTP
 * sets the real one (kernel/time/wallclock.h). */
__cold static void main_clock(const struct boot_info *bi)
{
	char iso[32];

	if (!bi->rtc_unix_s || bi->rtc_tsc < bi->tsc.efi_main ||
	    wallclock_set_provisional(bi->rtc_unix_s * NSEC_PER_SEC, time_tsc_to_ns(bi->rtc_tsc - bi->tsc.efi_main)) ||
	    wallclock_iso(bi->rtc_unix_s * NSEC_PER_SEC, iso, sizeof iso) != 24) {
		kprintf("clock: none until SNTP\n");
		return;
	}
	iso[19] = 'Z';	/* whole seconds: the firmware's */
	iso[20] = '\0';
	kprintf("clock: %s from %s (provisional)\n", iso, bi->rtc_src[0] ? bi->rtc_src : "UEFI GetTime");
}

void kernel_main(struct boot_info *bi)
{
	bool echo;

	timeline_mark_at(bi->stamp_names[0], bi->tsc.efi_main);
	timeline_mark_at(bi->stamp_names[1], bi->tsc.after_exit);
	console_init();
	kprintf("vireo %s (%s)\n", VIREO_VERSION, VIREO_REV);
	trap_init();
	if (bi->magic != BOOT_INFO_MAGIC)
		panic("boot_info magic %#lx is wrong", bi->magic);

	config_boot(bi);

	if (verbose)
		main_print_memory_map(bi);
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
	main_clock(bi);
	acpi_power_init();
	random_init();
	console_enable_input();
	sti();

	pci_init();
	timeline_mark("pci");
	echo = debug_start();	/* vnet.echo: the reflector takes the device */
	vtd_init();	/* DMA remapping on before any driver hands out a buffer */
	pci_probe_drivers();
	virtio_mmio_probe();
	timeline_mark("drivers");

	selftest_run();	/* selftest= (debug/) */

	timeline_mark("ready");
	timeline_print();
	kprintf("vireo: kernel ready\n");
	site_synth_boot();	/* APP_EXTRA's files: generated, not stored */
	site_esp_boot(bi);
	api_esp_boot(bi);	/* EFI/vireo/app/: vireo_esp_file() */
#ifdef VIREO_TLS
	tls_boot_files(bi);	/* EFI/vireo/tls/: used by tls_start() */
#endif
	if (!echo)
		main_start_network();
	loop_run();
}
