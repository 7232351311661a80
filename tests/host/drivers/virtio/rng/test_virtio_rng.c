/* drivers/virtio/rng/virtio_rng.c, unchanged, against the simulated device
 * (tests/host/simdev/simdev.h: its queue 0 filling every posted buffer at
 * once, as virtio-rng does) and the real virtio core: entropy is gathered, and a
 * device that completes every buffer at once with nothing in it cannot
 * keep the event loop re-posting (budgets per pass and in all). */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "tests/host/shim/hostk.h"
#include "tests/host/simdev/hostbus.h"
#include "tests/host/simdev/simdev.h"

static struct simdev dev;

static void bring_up(u32 len)
{
	sd_init(&dev, VIRTIO_ID_RNG, VIRTIO_BIT(VIRTIO_F_VERSION_1), 0);	/* no config space */
	dev.qmax[0] = 8;
	dev.auto_fill = true;
	dev.auto_len = len;
	assert_int_equal(hk_probe(&dev.vd), 0);
	assert_true(dev.status & VIRTIO_S_DRIVER_OK);
	assert_int_equal(dev.auto_done, 1);	/* the probe's buffer, at once */
}

static int teardown(void **state)
{
	if (dev.vd.driver)
		hk_remove(&dev.vd);
	hk_run(100000);
	hk_loop_reset();
	assert_int_equal(sd_errors(&dev), 0);
	sd_fini(&dev);
	hk_free_kept();
	assert_int_equal(hk_pages_live(), 0);
	assert_int_equal(hk_kmem_live(), 0);
	return 0;
}

static void test_rng_gathers(void **state)
{
	u64 before = hk_entropy_bytes();

	bring_up(64);
	sd_irq(&dev, 0, true);
	assert_true(hk_run(100000) < 100000);
	assert_int_equal(hk_entropy_bytes() - before, 256);
	assert_int_equal(dev.auto_done, 4);
	assert_true(hk_log_contains("256 bytes of entropy"));
}

/* Zero-length completions, each re-posted buffer completed again at once:
 * the driver gives the device up after a fixed number, logged. */
static void test_rng_empty_completions_bounded(void **state)
{
	bring_up(0);
	sd_irq(&dev, 0, true);
	assert_true(hk_run(100000) < 100);
	assert_true(dev.auto_done <= 8);
	assert_true(hk_log_contains("empty completions; device given up"));
	/* Further interrupts change nothing. */
	sd_irq(&dev, 0, true);
	hk_run(100000);
	assert_true(dev.auto_done <= 8);
}

/* One byte per completion: 256 completions, taken at most 16 per pass. */
static void test_rng_pass_budget(void **state)
{
	u64 before = hk_entropy_bytes();
	unsigned passes;

	bring_up(1);
	sd_irq(&dev, 0, true);
	assert_int_equal(hk_run(1), 1);
	assert_true(dev.auto_done <= 1 + 16);
	passes = 1 + hk_run(100000);
	assert_true(passes >= 256 / 16);
	assert_int_equal(hk_entropy_bytes() - before, 256);
	assert_int_equal(dev.auto_done, 256);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_teardown(test_rng_gathers, teardown),
		cmocka_unit_test_teardown(test_rng_empty_completions_bounded, teardown),
		cmocka_unit_test_teardown(test_rng_pass_budget, teardown),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
