/* virtio-rng: boot entropy, and the self-tests that drive the virtio core's
 * two recovery paths (DEVICE_NEEDS_RESET and RING_RESET) in a real VMM. */
#ifndef VIREO_VIRTIO_RNG_H
#define VIREO_VIRTIO_RNG_H

#include "kernel/types.h"

enum vrng_selftest {
	VRNG_SELFTEST_NONE,
	VRNG_SELFTEST_NEEDS_RESET,	/* selftest=virtio-needs-reset */
	VRNG_SELFTEST_RING_RESET,	/* selftest=virtio-ring-reset */
};

/* Arms one recovery self-test on the first bound virtio-rng device; call
 * after drivers probed. It starts from the loop once that device has
 * delivered its boot entropy, runs once, and prints `selftest: <name>: ...`
 * lines ending in exactly one of `pass`, `FAIL (...)` or `skipped (...)`.
 * Returns 0, or -ENODEV when no virtio-rng device is bound (FAIL printed). */
int virtio_rng_selftest(enum vrng_selftest kind);

#endif
