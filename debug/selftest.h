/* selftest=: a fault provoked at boot to test the panic path, or a virtio
 * recovery path the composition root arms once drivers have probed. */
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

/* The value of selftest= (enum selftest). */
enum selftest selftest_requested(void);

/* Runs the fault self-test named by selftest= (most of them do not return).
 * The virtio-* ones only print their name here: kernel_main arms them on
 * the virtio-rng driver once devices have probed. */
void selftest_run(void);

#endif
