/* lwIP's system layer for NO_SYS=1: only the millisecond clock. */
#include "kernel/time/time.h"
#include "lwip/sys.h"

/* Milliseconds since boot from the kernel's monotonic clock. lwIP compares
 * timestamps by difference, so the wrap after ~49.7 days is harmless. */
u32_t sys_now(void)
{
	return (u32_t)(time_ns() / NSEC_PER_MSEC);
}
