/* The virtio core's recovery self-tests (selftest=virtio-needs-reset,
 * selftest=virtio-ring-reset and selftest=iommu-fault), run on a virtio-rng
 * device in a real VMM, and run-time fault injection. */
#ifndef VIREO_VIRTIO_SELFTEST_H
#define VIREO_VIRTIO_SELFTEST_H

#include "lib/types.h"

enum virtio_selftest {
	VIRTIO_SELFTEST_NONE,
	VIRTIO_SELFTEST_NEEDS_RESET,	/* selftest=virtio-needs-reset */
	VIRTIO_SELFTEST_RING_RESET,	/* selftest=virtio-ring-reset */
	VIRTIO_SELFTEST_IOMMU_FAULT,	/* selftest=iommu-fault */
};

/* Arms one recovery self-test on the first bound virtio-rng device; call
 * after drivers probed. It starts from the loop once that device has
 * delivered its boot entropy (its queue went idle after completions), runs
 * once, and prints `selftest: <name>: ...` lines ending in exactly one of
 * `pass`, `FAIL (...)` or `skipped (...)`. Returns 0, or -ENODEV when no
 * virtio-rng device is bound (FAIL printed). */
int virtio_selftest(enum virtio_selftest kind);

/* Fault injection, the one debug seam (shell `fault`, with debug on): the
 * next buffer the driver posts on queue qidx of the first bound, working
 * device of type device_id gets a malformed head descriptor
 * (virtq_debug_corrupt_next), which a checking device answers with
 * DEVICE_NEEDS_RESET. For virtio-net, queue 0 (receive): a receive buffer is
 * always one direct descriptor, whose bad NEXT link a device must reject,
 * while a transmitted frame is usually an indirect table, and QEMU ignores
 * NEXT on an indirect head. Returns the device's virtio index, or -EIO when
 * there is no such device (or queue). */
int virtio_fault_corrupt_next(u16 device_id, u16 qidx);

#endif
