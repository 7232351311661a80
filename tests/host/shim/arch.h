/* Host stand-in for kernel/arch.h: same names, host primitives. klog() is
 * implemented in tests/host/shim/hostk.c and counts lines so tests can check
 * "logs once" contracts (see shim_klog_count / shim_klog_last). */
#ifndef VIREO_ARCH_H
#define VIREO_ARCH_H

#include "kernel/types.h"

#define READ_ONCE(x) (*(const volatile __typeof__(x) *)&(x))
#define WRITE_ONCE(x, v) (*(volatile __typeof__(x) *)&(x) = (v))
#define barrier() __asm__ __volatile__("" ::: "memory")
#define mb() __atomic_thread_fence(__ATOMIC_SEQ_CST)
#define rmb() __atomic_thread_fence(__ATOMIC_ACQUIRE)
#define wmb() __atomic_thread_fence(__ATOMIC_RELEASE)
#define dma_rmb() __atomic_thread_fence(__ATOMIC_ACQUIRE)
#define dma_wmb() __atomic_thread_fence(__ATOMIC_RELEASE)
#define dma_mb() __atomic_thread_fence(__ATOMIC_SEQ_CST)

/* One thread, nothing interrupts it: nothing to mask. */
static inline u64 irq_save(void) { return 0; }
static inline void irq_restore(u64 f) { (void)f; }

void klog(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

/* Test helpers (host only). */
unsigned shim_klog_count(void);
const char *shim_klog_last(void);
void shim_klog_reset(void);

#endif
