/* 16550 UART (COM1) output and input, the log ring, and sink fan-out. */
#include <stdarg.h>

#include "kernel/console.h"
#include "kernel/time/wallclock.h"
#include "lib/fmt.h"
#include "kernel/arch/io.h"
#include "kernel/arch/irq.h"
#include "kernel/loop.h"
#include "kernel/shell.h"
#include "lib/string.h"

#define COM1 0x3f8
#define UART_RBR 0	/* receive buffer (DLAB=0) */
#define UART_THR 0	/* transmit holding (DLAB=0) */
#define UART_IER 1
#define UART_FCR 2
#define UART_LCR 3
#define UART_MCR 4
#define UART_LSR 5
#define LSR_DR 0x01
#define LSR_THRE 0x20
#define UART_IRQ 4

static char log_ring[LOG_RING_SIZE];
static u64 log_head;	/* bytes ever written; ring index is head % size */
static struct console_sink *sinks;
static bool panic_mode;
struct console_stats console_stats;

#define RX_RING 256
static char rx_ring[RX_RING];
static u32 rx_head, rx_tail;
static struct work rx_work;
static void console_rx_drain(void *arg);

/*
 * The shell's line editor. After each command (or an empty line) it prints
 * CONSOLE_PROMPT, and typed characters are echoed behind it, so the cursor
 * sits mid-line (in_open). Other output never shares that line: it starts
 * on a new one, so every log line still starts a line for the tests and
 * scripts that read the console line by line (docs/console.md), and the
 * prompt with the text typed so far is drawn again below it (a bare prompt
 * is not, to keep a quiet console quiet: Enter gives a new one). The
 * prompt is only printed in answer to input: a console nobody types on
 * never shows one.
 */
#define CONSOLE_PROMPT "vireo> "
static char in_line[128];	/* the line being typed */
static size_t in_len;
static bool in_open;		/* the cursor is on the prompt or typed text */
static bool in_redraw;		/* draw the prompt and in_line once the line in progress ends */
static bool line_start = true;	/* the last byte written ended a line */

static void console_uart_putc(char c)
{
	u32 spins = 100000;

	/* Bounded wait: a missing UART must not hang the kernel. */
	while (!(inb(COM1 + UART_LSR) & LSR_THRE) && --spins)
		pause();
	outb(COM1 + UART_THR, (u8)c);
}

static void console_uart_write(const char *buf, size_t len)
{
	size_t i;

	for (i = 0; i < len; i++) {
		if (buf[i] == '\n')
			console_uart_putc('\r');
		console_uart_putc(buf[i]);
	}
}

void console_init(void)
{
	outb(COM1 + UART_IER, 0x00);
	outb(COM1 + UART_LCR, 0x80);	/* DLAB: divisor follows */
	outb(COM1 + 0, 0x01);		/* 115200 baud */
	outb(COM1 + 1, 0x00);
	outb(COM1 + UART_LCR, 0x03);	/* 8N1 */
	outb(COM1 + UART_FCR, 0xc7);	/* FIFO on, cleared, 14-byte threshold */
	outb(COM1 + UART_MCR, 0x0b);	/* DTR, RTS, OUT2 (IRQ line enable) */
	work_init(&rx_work, console_rx_drain, NULL);
}

static void console_write_raw(const char *buf, size_t len)
{
	struct console_sink *s;
	size_t i;

	for (i = 0; i < len; i++)
		log_ring[(log_head + i) % LOG_RING_SIZE] = buf[i];
	log_head += len;
	console_stats.bytes += len;
	console_uart_write(buf, len);
	for (s = sinks; s; s = s->next) {
		if (panic_mode && s->emerg_write)
			s->emerg_write(s, buf, len);
		else if (!panic_mode)
			s->write(s, buf, len);
	}
}

/* Every line starts with the wall-clock time once it is known
 * (kernel/time/wallclock.c); before that, and in a panic, lines are as
 * written. Interrupts are off. */
static void console_write_lines(const char *buf, size_t len)
{
	while (len) {
		size_t n = 0;

		if (line_start && !panic_mode) {
			char stamp[32];
			size_t sn = wallclock_stamp(stamp, sizeof stamp);

			if (sn)
				console_write_raw(stamp, sn);
		}
		while (n < len && buf[n] != '\n')
			n++;
		if (n < len)
			n++;	/* the newline */
		console_write_raw(buf, n);
		line_start = buf[n - 1] == '\n';
		buf += n;
		len -= n;
	}
}

void console_write(const char *buf, size_t len)
{
	u64 flags = irq_save();

	if (in_open && len) {	/* not on the prompt's line (see CONSOLE_PROMPT) */
		console_write_lines("\n", 1);
		in_open = false;
		in_redraw = in_len > 0;
	}
	console_write_lines(buf, len);
	if (in_redraw && line_start && !panic_mode) {
		in_redraw = false;
		console_write_lines(CONSOLE_PROMPT, sizeof CONSOLE_PROMPT - 1);
		console_write_lines(in_line, in_len);
		in_open = true;
	}
	irq_restore(flags);
}

/* The line editor's own output: the prompt and echoed input. */
static void console_echo(const char *buf, size_t len)
{
	u64 flags = irq_save();

	console_write_lines(buf, len);
	in_open = !line_start;
	irq_restore(flags);
}

size_t console_log_copy(char *dst, size_t size)
{
	u64 start = log_head > LOG_RING_SIZE ? log_head - LOG_RING_SIZE : 0, i;
	size_t n = 0;

	for (i = start; i < log_head && n < size; i++)
		dst[n++] = log_ring[i % LOG_RING_SIZE];
	return n;
}

void console_add_sink(struct console_sink *s)
{
	u64 flags = irq_save();
	u64 start = log_head > LOG_RING_SIZE ? log_head - LOG_RING_SIZE : 0;
	size_t at = start % LOG_RING_SIZE, n = log_head - start;

	/* The ring in place, oldest first: at most two pieces. */
	s->write(s, log_ring + at, MIN(n, LOG_RING_SIZE - at));
	if (n > LOG_RING_SIZE - at)
		s->write(s, log_ring, n - (LOG_RING_SIZE - at));
	s->next = sinks;
	sinks = s;
	irq_restore(flags);
}

void console_remove_sink(struct console_sink *s)
{
	u64 flags = irq_save();
	struct console_sink **pp;

	for (pp = &sinks; *pp; pp = &(*pp)->next) {
		if (*pp == s) {
			*pp = s->next;
			s->next = NULL;
			break;
		}
	}
	irq_restore(flags);
}

void console_write_except(struct console_sink *skip, const char *buf, size_t len)
{
	u64 flags = irq_save_inline();	/* not irq_save(): arch.h says why */
	struct console_sink **pp;

	/* out of the list for this write, back in its place after (sinks
	 * change only with interrupts off, so nothing moves meanwhile) */
	for (pp = &sinks; *pp && *pp != skip; pp = &(*pp)->next)
		;
	if (skip && *pp == skip)
		*pp = skip->next;
	else
		pp = NULL;
	console_write(buf, len);	/* irq_save() nests */
	if (pp)
		*pp = skip;
	irq_restore_inline(flags);
}

void console_panic_mode(void)
{
	panic_mode = true;
}

int kprintf(const char *fmt, ...)
{
	char buf[512];
	va_list ap;
	int n;

	va_start(ap, fmt);
	n = kvsnprintf(buf, sizeof buf, fmt, ap);
	va_end(ap);
	/* Cut short: a line still ends where it would have, so the next one
	 * (and the syslog record split at newlines) starts on its own. */
	if ((size_t)n >= sizeof buf && fmt[0] && fmt[__builtin_strlen(fmt) - 1] == '\n')
		buf[sizeof buf - 2] = '\n';
	console_write(buf, MIN((size_t)n, sizeof buf - 1));
	return n;
}

void klog(const char *fmt, ...)
{
	char buf[512];
	va_list ap;
	int n;

	va_start(ap, fmt);
	n = kvsnprintf(buf, sizeof buf - 1, fmt, ap);
	va_end(ap);
	n = MIN(n, (int)sizeof buf - 2);
	buf[n++] = '\n';
	console_write(buf, (size_t)n);
}

/* Runs in the event loop: hand complete input to the shell. in_line is
 * changed with interrupts off, as console_write() may draw it from any
 * context. */
static void console_rx_drain(void *arg)
{
	char line[sizeof in_line];
	u32 head;

	for (;;) {
		u64 flags;
		char c;

		head = READ_ONCE(rx_head);
		if (rx_tail == head)
			break;
		c = rx_ring[rx_tail % RX_RING];
		rx_tail++;
		flags = irq_save();
		if (c == '\r' || c == '\n') {
			memcpy(line, in_line, in_len);
			line[in_len] = '\0';
			in_len = 0;
			in_redraw = false;
			console_echo("\n", 1);
			irq_restore(flags);
			shell_line(line);
			console_echo(CONSOLE_PROMPT, sizeof CONSOLE_PROMPT - 1);
			continue;
		}
		if ((c == 0x7f || c == '\b') && in_len) {
			in_len--;
			console_echo("\b \b", 3);
		} else if (c >= 0x20 && c < 0x7f && in_len < sizeof in_line - 1) {
			in_line[in_len++] = c;
			console_echo(&c, 1);
		}
		irq_restore(flags);
	}
}

/* Producer side of rx_ring: interrupts are off (an interrupt handler, or
 * console_input), so UART and virtio input never interleave mid-byte. */
static void console_rx_put(char c)
{
	console_stats.rx_bytes++;
	if (rx_head - rx_tail >= RX_RING) {
		console_stats.rx_dropped++;
		return;
	}
	rx_ring[rx_head % RX_RING] = c;
	WRITE_ONCE(rx_head, rx_head + 1);
}

static void console_uart_irq(void *arg)
{
	u32 spins = 64;

	while ((inb(COM1 + UART_LSR) & LSR_DR) && spins--)
		console_rx_put((char)inb(COM1 + UART_RBR));
	work_queue(&rx_work);
}

void console_input(const char *buf, size_t len)
{
	u64 flags = irq_save();
	size_t i;

	for (i = 0; i < len; i++)
		console_rx_put(buf[i]);
	irq_restore(flags);
	if (len)
		work_queue(&rx_work);
}

void console_enable_input(void)
{
	if (irq_route_isa(UART_IRQ, console_uart_irq, NULL) < 0) {
		klog("console: no interrupt route for COM1, input disabled");
		return;
	}
	while (inb(COM1 + UART_LSR) & LSR_DR)
		(void)inb(COM1 + UART_RBR);
	outb(COM1 + UART_IER, 0x01);	/* receive data available */
}
