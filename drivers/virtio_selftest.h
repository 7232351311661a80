/* The virtio core's recovery self-tests (selftest=virtio-needs-reset and
 * selftest=virtio-ring-reset), run on a virtio-rng device in a real VMM. */
#ifndef VIREO_VIRTIO_SELFTEST_H
#define VIREO_VIRTIO_SELFTEST_H

enum virtio_selftest {
	VIRTIO_SELFTEST_NONE,
	VIRTIO_SELFTEST_NEEDS_RESET,	/* selftest=virtio-needs-reset */
	VIRTIO_SELFTEST_RING_RESET,	/* selftest=virtio-ring-reset */
};

/* Arms one recovery self-test on the first bound virtio-rng device; call
 * after drivers probed. It starts from the loop once that device has
 * delivered its boot entropy (its queue went idle after completions), runs
 * once, and prints `selftest: <name>: ...` lines ending in exactly one of
 * `pass`, `FAIL (...)` or `skipped (...)`. Returns 0, or -ENODEV when no
 * virtio-rng device is bound (FAIL printed). */
int virtio_selftest(enum virtio_selftest kind);

#endif
