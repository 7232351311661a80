/* Graceful power off: a power-button event drains the registered services
 * within shutdown.grace= seconds, cuts what is left, lets the drains that
 * must settle (a data disk's commits in flight) finish within
 * POWER_SETTLE_MS more, then the platform's off method runs. The kernel
 * knows none of them: net code and the store register drains, the ACPI
 * driver registers the button and the off method. */
#ifndef VIREO_POWER_H
#define VIREO_POWER_H

#include "lib/types.h"

/* Connections at the moment draining began. */
struct power_drain_counts {
	u32 idle;	/* closed at once (no request in progress) */
	u32 busy;	/* left to finish their current response */
};

struct power_drain_ops {
	/* Stop accepting, close what is idle, let the rest finish. */
	void (*begin)(void *ctx, struct power_drain_counts *counts);
	/* True once nothing registered is still in flight. */
	bool (*done)(void *ctx);
	/* Abort whatever is left (the grace period is over); returns how many
	 * connections that was (counted in the power-off line). */
	u32 (*cut)(void *ctx);
	/* Optional: after every cut, wait for done() again, up to
	 * POWER_SETTLE_MS, then call it (true: done; false: still busy) to
	 * report. For work that must not be abandoned half-way (a batch being
	 * written) and ends by itself in milliseconds. */
	void (*settled)(void *ctx, bool done);
	bool settle;
	void *ctx;
};

#define POWER_DRAINS 4
#define POWER_SETTLE_MS 5000

/* Adds a drain (up to POWER_DRAINS; registering the same ops again is a
 * no-op). ops must outlive the kernel. Returns 0 or -ENOSPC. */
int power_register_drain(const struct power_drain_ops *ops);
/* The off method (ACPI S5); it returns only if the platform ignored it. */
void power_register_off(void (*off)(void));
/* A power-button press; safe from interrupt handlers. The first press starts
 * the drain, later ones are counted and ignored. */
void power_button(void);

#endif
