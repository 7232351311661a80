/* Host stand-in for kernel/arch/arch.h: same names, host primitives. klog() is
 * implemented in tests/host/shim/hostk.c and counts lines so tests can check
 * "logs once" contracts (see shim_klog_count / shim_klog_last). */
#ifndef VIREO_ARCH_H
#define VIREO_ARCH_H

#include "lib/types.h"

#define READ_ONCE(x) (*(const volatile __typeof__(x) *)&(x))
#define WRITE_ONCE(x, v) (*(volatile __typeof__(x) *)&(x) = (v))
#define barrier() __asm__ __volatile__("" ::: "memory")

/* Each barrier also counts itself, so a test can see which set code chose
 * (drivers/virtio/virtq.c: the platform's with VIRTIO_F_ORDER_PLATFORM, the SMP
 * ones without). A weak definition: every host program has it once. */
struct shim_barrier_counts {
	unsigned long mb, rmb, wmb;		/* platform (device) barriers */
	unsigned long dma_mb, dma_rmb, dma_wmb;	/* SMP barriers */
};
__attribute__((weak)) struct shim_barrier_counts shim_barriers;
/* If set, runs at every full barrier (mb, dma_mb), after the fence: a
 * simulated device acting there acts between the driver's store and its
 * re-read (the event-index race of virtq_enable_cb*), an interleaving a
 * single-threaded test cannot otherwise reach. The virtio host tests also
 * run it just before and after a driver re-enables a callback
 * (tests/host/simdev/hostbus.c). A test that sets it must not re-enter the
 * code under test from it other than as an interrupt would
 * (tests/host/drivers/virtio/net/test_virtio_net.c, the wakeup rules). */
__attribute__((weak)) void (*shim_mb_hook)(void);
#define SHIM_FENCE(counter, order) (shim_barriers.counter++, __atomic_thread_fence(order))
#define SHIM_FULL(counter) (SHIM_FENCE(counter, __ATOMIC_SEQ_CST), shim_mb_hook ? shim_mb_hook() : (void)0)
#define mb() SHIM_FULL(mb)
#define rmb() SHIM_FENCE(rmb, __ATOMIC_ACQUIRE)
#define wmb() SHIM_FENCE(wmb, __ATOMIC_RELEASE)
#define dma_rmb() SHIM_FENCE(dma_rmb, __ATOMIC_ACQUIRE)
#define dma_wmb() SHIM_FENCE(dma_wmb, __ATOMIC_RELEASE)
#define dma_mb() SHIM_FULL(dma_mb)

/* One thread, nothing interrupts it: nothing to mask. */
static inline u64 irq_save(void) { return 0; }
static inline void irq_restore(u64 f) { (void)f; }
static inline u64 irq_save_inline(void) { return 0; }
static inline void irq_restore_inline(u64 f) { (void)f; }

void klog(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

/* Test helpers (host only). */
unsigned shim_klog_count(void);
const char *shim_klog_last(void);
void shim_klog_reset(void);

#endif
