/* selftest=: faults provoked at boot (see selftest.h). */
#include "kernel/cmdline.h"
#include "kernel/console.h"
#include "kernel/panic.h"
#include "debug/selftest.h"
#include "debug/virtio_selftest.h"

static const char *const selftest_choices[] = {
	"none", "panic", "pagefault", "null", "ud", "divzero", "stack", "wx", "nx",
	"virtio-needs-reset", "virtio-ring-reset", "iommu-fault", NULL,
};
static int selftest = SELFTEST_NONE;
CMDLINE_PARAM(selftest, .key = "selftest", .type = CMDLINE_ENUM, .dst = &selftest, .choices = selftest_choices,
	      .def = "none",
	      .help = "trigger a fault at boot (tests the panic path); virtio-* and iommu-fault run on the first "
		      "virtio-rng once it has delivered entropy (docs/appliance.md) and end in selftest: <value>: "
		      "pass, FAIL (...) or skipped (...)");


static volatile int sink;

/* Recurses until the guard page stops it (depth is never reached). */
static int __attribute__((noinline)) selftest_recurse(int n)
{
	volatile char pad[512];

	pad[0] = (char)n;
	if (n < 0x7fffffff && sink != -1)
		return selftest_recurse(n + 1) + pad[0];
	return pad[0];
}

static void __attribute__((noinline)) selftest_fault(void)
{
	volatile int zero = 0;

	switch (selftest) {
	case SELFTEST_PANIC:
		panic("selftest: requested panic");
	case SELFTEST_PAGEFAULT:
		sink = *(volatile int *)0x00007ff0deadbee0ULL;
		break;
	case SELFTEST_NULL:
		sink = *(volatile int *)(u64)zero;
		break;
	case SELFTEST_UD:
		__asm__ __volatile__("ud2");
		break;
	case SELFTEST_DIVZERO:
		sink = 42 / zero;
		break;
	case SELFTEST_STACK:
		sink = selftest_recurse(0);
		break;
	case SELFTEST_WX:
		/* Text is read-only: writing to our own code must fault. */
		*(volatile u8 *)(void *)selftest_fault = 0xc3;
		break;
	case SELFTEST_NX:
		/* Data is not executable: jumping into it must fault. */
		((void (*)(void))(void *)&sink)();
		break;
	}
}

void selftest_run(void)
{
	if (selftest == SELFTEST_NONE)
		return;
	kprintf("selftest: %s\n", selftest_choices[selftest]);
	/* Not faults: armed on virtio-rng, whose driver has probed by now. */
	if (selftest == SELFTEST_VIRTIO_NEEDS_RESET)
		virtio_selftest(VIRTIO_SELFTEST_NEEDS_RESET);
	else if (selftest == SELFTEST_VIRTIO_RING_RESET)
		virtio_selftest(VIRTIO_SELFTEST_RING_RESET);
	else if (selftest == SELFTEST_IOMMU_FAULT)
		virtio_selftest(VIRTIO_SELFTEST_IOMMU_FAULT);
	if (selftest >= SELFTEST_VIRTIO_NEEDS_RESET)
		return;
	selftest_fault();
	kprintf("selftest: %s did not fault\n", selftest_choices[selftest]);
}
