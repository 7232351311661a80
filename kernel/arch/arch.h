/* x86_64 primitives the portable code needs: barriers, once-accessors, log.
 * tests/host/shim/arch.h provides the same names for host builds, so code that
 * includes <arch.h> (never "arch.h") builds in both places. */
#ifndef VIREO_ARCH_H
#define VIREO_ARCH_H

#include "lib/types.h"

#define READ_ONCE(x) (*(const volatile __typeof__(x) *)&(x))
#define WRITE_ONCE(x, v) (*(volatile __typeof__(x) *)&(x) = (v))

/* Compiler barrier: orders the compiler's view only. */
#define barrier() __asm__ __volatile__("" ::: "memory")

/* Full-strength barriers, for memory shared with real hardware
 * (VIRTIO_F_ORDER_PLATFORM: "memory barriers suitable for devices described
 * by the platform", drivers/virtio/virtq.c) and for write-combining/uncached
 * memory. */
#define mb() __asm__ __volatile__("mfence" ::: "memory")
#define rmb() __asm__ __volatile__("lfence" ::: "memory")
#define wmb() __asm__ __volatile__("sfence" ::: "memory")

/* Barriers for coherent write-back memory shared with a device or another
 * CPU (a hypervisor's device model: virtio without ORDER_PLATFORM, "assumed
 * to run on identical CPUs in an SMP configuration"). x86 is TSO: loads are
 * not reordered with loads, stores not with stores, so only store->load
 * needs a real fence. */
#define dma_rmb() barrier()
#define dma_wmb() barrier()
#define dma_mb() __asm__ __volatile__("lock; addl $0,-8(%%rsp)" ::: "memory", "cc")

static inline u64 read_rflags(void)
{
	u64 f;

	__asm__ __volatile__("pushfq; popq %0" : "=r"(f));
	return f;
}

/* Saves IF and disables interrupts; irq_restore() puts IF back. (The host's
 * <arch.h> makes both no-ops: a host test is one thread, nothing interrupts.) */
static inline u64 irq_save(void)
{
	u64 f = read_rflags();

	__asm__ __volatile__("cli" ::: "memory");
	return f;
}

static inline void irq_restore(u64 f)
{
	if (f & (1u << 9))
		__asm__ __volatile__("sti" ::: "memory");
}

/* The same two, always inlined: for a caller added to a file built -Os
 * (COLD_SRCS) whose other callers must stay as they are: one more call
 * site there and -Os turns irq_save()/irq_restore() into calls for every
 * caller in the file, growing images that never run the new one. */
static inline __attribute__((always_inline)) u64 irq_save_inline(void)
{
	u64 f;

	__asm__ __volatile__("pushfq; popq %0; cli" : "=r"(f) : : "memory");
	return f;
}

static inline __attribute__((always_inline)) void irq_restore_inline(u64 f)
{
	if (f & (1u << 9))
		__asm__ __volatile__("sti" ::: "memory");
}

/* Kernel log line (printf format, no trailing newline needed). */
void klog(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

#endif
