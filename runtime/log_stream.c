/*
 * An app's own stream of log lines (include/vireo/app.h: vireo_log_stream(),
 * an access log): apart from vireo_log()'s rate limit, to the console alone
 * (console_write_except(): not the syslog sink) and to syslog= through its
 * client's ring (syslog_line()). Nothing waits: the console takes
 * VIREO_LOG_STREAM_RATE lines a second (a token bucket: what a 115,200-baud
 * UART writes of ~120-byte lines), syslog what its 64-line ring has room
 * for; the rest is dropped and the caller told.
 */
#include "kernel/console.h"
#include "kernel/time/time.h"
#include "lib/types.h"
#include "net/net.h"
#include "vireo/app.h"

static struct {
	u64 t_ms;
	u32 milli;	/* tokens x 1000 */
	bool primed;
} ls_console;

static bool ls_console_allow(void)
{
	u64 now = time_ns() / NSEC_PER_MSEC, cap = (u64)VIREO_LOG_STREAM_RATE * 1000;

	if (!ls_console.primed) {
		ls_console.primed = true;
		ls_console.milli = (u32)cap;
		ls_console.t_ms = now;
	}
	if (now > ls_console.t_ms) {
		ls_console.milli = (u32)MIN(cap, ls_console.milli + (now - ls_console.t_ms) * VIREO_LOG_STREAM_RATE);
		ls_console.t_ms = now;
	}
	if (ls_console.milli < 1000)
		return false;
	ls_console.milli -= 1000;
	return true;
}

unsigned vireo_log_stream(unsigned to, const char *line, size_t len)
{
	char buf[VIREO_LOG_STREAM_LINE + 1];
	unsigned took = 0;

	if (len > VIREO_LOG_STREAM_LINE)
		len = VIREO_LOG_STREAM_LINE;
	for (size_t i = 0; i < len; i++)
		buf[i] = (u8)line[i] < 0x20 || (u8)line[i] == 0x7f ? '?' : line[i];
	if ((to & VIREO_LOG_SYSLOG) && syslog_line(buf, len) == 0)
		took |= VIREO_LOG_SYSLOG;
	if ((to & VIREO_LOG_CONSOLE) && ls_console_allow()) {
		buf[len] = '\n';
		console_write_except(syslog_console_sink(), buf, len + 1);
		took |= VIREO_LOG_CONSOLE;
	}
	return took;
}
