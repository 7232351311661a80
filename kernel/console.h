/* Console: the 16550 UART on COM1, a log ring in memory, pluggable sinks
 * (virtio-console ports), and line input from the UART and those sinks. */
#ifndef VIREO_CONSOLE_H
#define VIREO_CONSOLE_H

#include "lib/types.h"

struct console_sink {
	const char *name;
	/* Called with interrupts disabled; must not block indefinitely. */
	void (*write)(struct console_sink *s, const char *buf, size_t len);
	/* Panic path: best effort, may poll; NULL to use write. */
	void (*emerg_write)(struct console_sink *s, const char *buf, size_t len);
	struct console_sink *next;
};

#define LOG_RING_SIZE 8192

void console_init(void);
/* Adds a sink; it first receives the log ring's current contents. */
void console_add_sink(struct console_sink *s);
/* Unlinks a sink added before (no-op if it is not linked); after it returns
 * the sink is no longer called. */
void console_remove_sink(struct console_sink *s);
void console_write(const char *buf, size_t len);
/* console_write() to every sink but skip (NULL: all): an app's own stream
 * (an access log) that reaches syslog= by its own way, or not at all. */
void console_write_except(struct console_sink *skip, const char *buf, size_t len);
/* Input bytes from a sink's device (virtio-console), fed to the same line
 * editor and shell as UART input. Any context; bytes beyond the input
 * ring's room are dropped and counted in rx_dropped. */
void console_input(const char *buf, size_t len);
/* printf to every sink and the log ring; returns the formatted length. */
int kprintf(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
/* Switch to the panic path: output goes only through polled, lock-free writes. */
void console_panic_mode(void);
/* Enables the UART receive interrupt on the given vector (after IOAPIC setup). */
void console_enable_input(void);
/* Copies the log ring, oldest first; returns bytes copied. */
size_t console_log_copy(char *dst, size_t size);
/* Bytes dropped by sinks, lines written: for metrics. */
struct console_stats { u64 bytes, rx_bytes, rx_dropped; };
extern struct console_stats console_stats;

#endif
