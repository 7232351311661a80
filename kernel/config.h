/* Kernel configuration from the command line (key=value tokens). */
#ifndef VIREO_CONFIG_H
#define VIREO_CONFIG_H

#include "kernel/types.h"

enum panic_action { PANIC_HALT, PANIC_REBOOT };
enum selftest {
	SELFTEST_NONE,
	SELFTEST_PANIC,
	SELFTEST_PAGEFAULT,
	SELFTEST_NULL,
	SELFTEST_UD,
	SELFTEST_DIVZERO,
	SELFTEST_STACK,
	SELFTEST_WX,
	SELFTEST_NX,
	SELFTEST_VIRTIO_NEEDS_RESET,	/* run by virtio-rng once drivers are up */
	SELFTEST_VIRTIO_RING_RESET,
};

struct kconfig {
	int panic;	/* enum panic_action */
	int selftest;	/* enum selftest */
	bool verbose;
	bool vnet_echo;	/* vnet.echo: reflect received frames (raw-frame self-test) */
	bool vnet_tso;	/* vnet.tso: negotiate transmit segmentation offload (on) */
	u64 virtio_features;	/* virtio.features: features that may be negotiated */
	struct {		/* coalesce=: interrupt coalescing policy */
		int mode;	/* enum coal_mode */
		u16 frames;
		u32 usecs;
	} coalesce;
	struct {		/* ip=A.B.C.D/len gw=A.B.C.D: static IPv4, else DHCP */
		bool set, gw_set;
		u32 addr, gw;	/* host order */
		int prefix;
	} ip4;
	u64 http_port;		/* http=: the appliance's port (80) */
	unsigned int echo;	/* echo=tcp,udp: CONFIG_ECHO_* services to start (none) */
	u64 echo_udp_rate;	/* echo.udp_rate=: UDP echo datagrams/s, all and per source (0: defaults) */
	bool debug;		/* debug: test-only hooks (shell `fault`) answer */
	u64 shutdown_grace;	/* shutdown.grace=: drain seconds on power off (10) */
};
#define CONFIG_ECHO_TCP 1u
#define CONFIG_ECHO_UDP 2u
extern struct kconfig kconfig;

/* Parses the boot command line into kconfig; returns the warning count. */
int config_parse(const char *cmdline);
/* Runs the fault self-test named by selftest= (most of them do not return).
 * The virtio-* ones only print their name here: kernel_main arms them on
 * the virtio-rng driver once devices have probed. */
void config_run_selftest(void);

#endif
