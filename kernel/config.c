/* The kernel's command-line keys, and the fault self-tests they can ask for. */
#include "kernel/cmdline.h"
#include "kernel/config.h"
#include "kernel/console.h"
#include "kernel/fmt.h"
#include "kernel/panic.h"
#include "kernel/string.h"
#include "drivers/coalesce.h"
#include "drivers/virtio_mmio.h"

struct kconfig kconfig = {
	.virtio_features = ~0ULL,
	.vnet_tso = true,
	.coalesce = { .mode = COAL_ADAPTIVE },
	.http_port = 80,
	.shutdown_grace = 10,
};

static int parse_coalesce(const char *val, void *dst, char *why, size_t why_len)
{
	enum coal_mode mode;
	u16 frames;
	u32 usecs;

	(void)dst;
	if (coal_parse(val, &mode, &frames, &usecs) < 0) {
		ksnprintf(why, why_len, "want off, adaptive or <frames 1-%u>,<usecs 0-%u>",
			  COAL_FRAMES_MAX, COAL_USECS_MAX);
		return -EINVAL;
	}
	kconfig.coalesce.mode = mode;
	kconfig.coalesce.frames = frames;
	kconfig.coalesce.usecs = usecs;
	return 0;
}

static int parse_ip(const char *val, void *dst, char *why, size_t why_len)
{
	u32 a;
	int pfx;

	(void)dst;
	if (cmdline_parse_ipv4(val, &a, &pfx) < 0 || pfx == 0 || pfx == 32) {
		ksnprintf(why, why_len, "want A.B.C.D/len with len 1-31; using DHCP");
		return -EINVAL;
	}
	kconfig.ip4.set = true;
	kconfig.ip4.addr = a;
	kconfig.ip4.prefix = pfx < 0 ? 24 : pfx;
	return 0;
}

static int parse_gw(const char *val, void *dst, char *why, size_t why_len)
{
	u32 a;

	(void)dst;
	if (cmdline_parse_ipv4(val, &a, NULL) < 0) {
		ksnprintf(why, why_len, "want A.B.C.D");
		return -EINVAL;
	}
	kconfig.ip4.gw_set = true;
	kconfig.ip4.gw = a;
	return 0;
}

/* echo=tcp, echo=udp or echo=tcp,udp (either order). */
static int parse_echo(const char *val, void *dst, char *why, size_t why_len)
{
	unsigned int want = 0;
	const char *s = val;

	(void)dst;
	for (;;) {
		size_t n = 0;

		while (s[n] && s[n] != ',')
			n++;
		if (n == 3 && !strncmp(s, "tcp", 3))
			want |= CONFIG_ECHO_TCP;
		else if (n == 3 && !strncmp(s, "udp", 3))
			want |= CONFIG_ECHO_UDP;
		else
			goto bad;
		s += n;
		if (*s == '\0')
			break;
		s++;	/* the comma; an empty item after it is rejected above */
	}
	kconfig.echo = want;
	return 0;
bad:
	ksnprintf(why, why_len, "want tcp, udp or tcp,udp; echo stays off");
	return -EINVAL;
}

static const char *const panic_choices[] = { "halt", "reboot", NULL };
static const char *const selftest_choices[] = {
	"none", "panic", "pagefault", "null", "ud", "divzero", "stack", "wx", "nx",
	"virtio-needs-reset", "virtio-ring-reset", NULL,
};

static const struct cmdline_opt opts[] = {
	{ .key = "panic", .type = CMDLINE_ENUM, .dst = &kconfig.panic, .choices = panic_choices,
	  .help = "what a panic does after printing: halt (default) or reboot" },
	{ .key = "selftest", .type = CMDLINE_ENUM, .dst = &kconfig.selftest, .choices = selftest_choices,
	  .help = "trigger a fault at boot to test the panic path, or a virtio recovery path" },
	{ .key = "virtio.features", .type = CMDLINE_HEX, .dst = &kconfig.virtio_features,
	  .help = "mask of virtio feature bits that may be negotiated (live-migration lock-down)" },
	{ .key = "vnet.echo", .type = CMDLINE_BOOL, .dst = &kconfig.vnet_echo,
	  .help = "virtio-net reflects every received frame back to its sender (no IP stack)" },
	{ .key = "vnet.tso", .type = CMDLINE_BOOL, .dst = &kconfig.vnet_tso,
	  .help = "transmit segmentation offload (HOST_TSO4/6) when the device offers it (default on)" },
	{ .key = "coalesce", .type = CMDLINE_CUSTOM, .parse = parse_coalesce,
	  .help = "interrupt coalescing: off, adaptive (default) or <frames>,<usecs>" },
	{ .key = "ip", .type = CMDLINE_CUSTOM, .parse = parse_ip,
	  .help = "static IPv4 address A.B.C.D/len (default: DHCP)" },
	{ .key = "gw", .type = CMDLINE_CUSTOM, .parse = parse_gw,
	  .help = "IPv4 default gateway with ip=" },
	{ .key = "http", .type = CMDLINE_UINT, .dst = &kconfig.http_port, .min = 1, .max = 65535,
	  .help = "the HTTP server's TCP port (default 80)" },
	{ .key = "echo", .type = CMDLINE_CUSTOM, .parse = parse_echo,
	  .help = "start the echo service (RFC 862) on port 7: tcp, udp or tcp,udp (default: off)" },
	{ .key = "echo.udp_rate", .type = CMDLINE_UINT, .dst = &kconfig.echo_udp_rate, .min = 1, .max = 1000000,
	  .help = "UDP echo rate limit in datagrams/s, global and per source (default 256 and 16; benchmarks)" },
	{ .key = "debug", .type = CMDLINE_BOOL, .dst = &kconfig.debug,
	  .help = "enable test-only hooks (the shell's fault command)" },
	{ .key = "shutdown.grace", .type = CMDLINE_UINT, .dst = &kconfig.shutdown_grace, .min = 0, .max = 3600,
	  .help = "seconds a power-button press lets in-flight responses finish (default 10)" },
	{ .key = "verbose", .type = CMDLINE_BOOL, .dst = &kconfig.verbose,
	  .help = "print the firmware memory map at boot" },
	/* virtio-mmio windows (drivers/virtio_mmio_parse.c parses; repeatable). */
	{ .key = "virtio_mmio.device", .type = CMDLINE_CUSTOM, .dst = &virtio_mmio_windows,
	  .parse = vmmio_cmdline_add, .help = "a virtio-mmio window <size>@<addr>:<irq>[:<id>] (repeatable)" },
};

static void warn(void *ctx, const char *msg)
{
	kprintf("warning: %s\n", msg);
}

int config_parse(const char *cmdline)
{
	return cmdline_parse(cmdline, opts, ARRAY_SIZE(opts), warn, NULL);
}

static volatile int sink;

/* Recurses until the guard page stops it (depth is never reached). */
static int __attribute__((noinline)) recurse(int n)
{
	volatile char pad[512];

	pad[0] = (char)n;
	if (n < 0x7fffffff && sink != -1)
		return recurse(n + 1) + pad[0];
	return pad[0];
}

static void __attribute__((noinline)) selftest_fault(void)
{
	volatile int zero = 0;

	switch (kconfig.selftest) {
	case SELFTEST_PANIC:
		panic("selftest: requested panic");
	case SELFTEST_PAGEFAULT:
		sink = *(volatile int *)0x00007ff0deadbee0ULL;
		break;
	case SELFTEST_NULL:
		sink = *(volatile int *)(u64)zero;
		break;
	case SELFTEST_UD:
		__asm__ __volatile__("ud2");
		break;
	case SELFTEST_DIVZERO:
		sink = 42 / zero;
		break;
	case SELFTEST_STACK:
		sink = recurse(0);
		break;
	case SELFTEST_WX:
		/* Text is read-only: writing to our own code must fault. */
		*(volatile u8 *)(void *)selftest_fault = 0xc3;
		break;
	case SELFTEST_NX:
		/* Data is not executable: jumping into it must fault. */
		((void (*)(void))(void *)&sink)();
		break;
	}
}

void config_run_selftest(void)
{
	if (kconfig.selftest == SELFTEST_NONE)
		return;
	kprintf("selftest: %s\n", selftest_choices[kconfig.selftest]);
	if (kconfig.selftest == SELFTEST_VIRTIO_NEEDS_RESET || kconfig.selftest == SELFTEST_VIRTIO_RING_RESET)
		return;	/* not a fault: armed on virtio-rng by kernel_main */
	selftest_fault();
	kprintf("selftest: %s did not fault\n", selftest_choices[kconfig.selftest]);
}
