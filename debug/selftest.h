/* selftest=: a fault provoked at boot to test the panic path, or a virtio
 * recovery path armed once drivers have probed. */
#ifndef VIREO_SELFTEST_H
#define VIREO_SELFTEST_H

enum selftest {
	SELFTEST_NONE,
	SELFTEST_PANIC,
	SELFTEST_PAGEFAULT,
	SELFTEST_NULL,
	SELFTEST_UD,
	SELFTEST_DIVZERO,
	SELFTEST_STACK,
	SELFTEST_WX,
	SELFTEST_NX,
	SELFTEST_VIRTIO_NEEDS_RESET,	/* run by virtio-rng once drivers are up */
	SELFTEST_VIRTIO_RING_RESET,
	SELFTEST_IOMMU_FAULT,		/* on virtio-rng too, behind VT-d */
};

/* Runs the self-test named by selftest=, once the drivers have probed: a
 * fault (most of them do not return), or a virtio recovery test armed on
 * the virtio-rng driver (debug/virtio_selftest.h). */
void selftest_run(void);

#endif
