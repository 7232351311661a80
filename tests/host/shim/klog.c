/* Host klog(): keeps the last line and a count; prints when VIREO_TEST_LOG=1. */
#include <arch.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>

static unsigned count;
static char last[512];

void klog(const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(last, sizeof last, fmt, ap);
	va_end(ap);
	count++;
	if (getenv("VIREO_TEST_LOG"))
		fprintf(stderr, "klog: %s\n", last);
}

unsigned shim_klog_count(void)
{
	return count;
}

const char *shim_klog_last(void)
{
	return last;
}

void shim_klog_reset(void)
{
	count = 0;
	last[0] = '\0';
}
