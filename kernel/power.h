/* Graceful power off: a power-button event drains the registered service
 * within shutdown.grace= seconds, then the platform's off method
 * runs. The kernel knows neither: net code registers the drain, the ACPI
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
	/* Abort whatever is left (the grace period is over); returns how many. */
	u32 (*cut)(void *ctx);
	void *ctx;
};

/* One drain; a later call replaces it. ops must outlive the kernel. */
void power_register_drain(const struct power_drain_ops *ops);
/* The off method (ACPI S5); it returns only if the platform ignored it. */
void power_register_off(void (*off)(void));
/* A power-button press; safe from interrupt handlers. The first press starts
 * the drain, later ones are counted and ignored. */
void power_button(void);

#endif
