/* Boot timeline. Stamps are raw TSC values; they are converted once the TSC
 * is calibrated, so early stamps (before time_init) cost nothing. */
#include "kernel/console.h"
#include "kernel/arch/io.h"
#include "lib/string.h"
#include "kernel/time/time.h"
#include "kernel/time/timeline.h"

#define MAX_MARKS 24

static struct {
	const char *name;
	u64 tsc;
} marks[MAX_MARKS];
static unsigned nmarks;

void timeline_mark_at(const char *name, u64 tsc)
{
	if (nmarks < MAX_MARKS)
		marks[nmarks++] = (typeof(marks[0])){ name, tsc };
}

void timeline_mark(const char *name)
{
	timeline_mark_at(name, rdtsc());
}

u64 timeline_ns(const char *name)
{
	unsigned i;

	for (i = 1; i < nmarks; i++)
		if (!strcmp(marks[i].name, name))
			return time_tsc_to_ns(marks[i].tsc - marks[0].tsc);
	return 0;
}

void timeline_print(void)
{
	unsigned i;

	kprintf("boot: timeline (ms since %s):", nmarks ? marks[0].name : "?");
	for (i = 1; i < nmarks; i++) {
		u64 us = time_tsc_to_ns(marks[i].tsc - marks[0].tsc) / 1000;

		kprintf(" %s=%lu.%03lu", marks[i].name, us / 1000, us % 1000);
	}
	kprintf("\n");
}
