/* debug/: every test-only hook, in one place. Always linked, so the image
 * tested is the image shipped; each is active only when its own key asks
 * (vnet.echo=, iommu.stray=, selftest=) or, for the shell's verbs (`fault`,
 * `iommu-stray`, `panic`), with debug=on. They reach the production code
 * through one small seam per subsystem: the ring's virtq_arm_debug, VT-d's
 * vtd_stray_nth/vtd_stray_next, virtio-net's upper-layer interface
 * (vnet_attach), the bus's device list. kernel/main.c, the composition
 * root, calls debug_start() and selftest_run(); nothing else includes
 * debug/. */
#ifndef VIREO_DEBUG_H
#define VIREO_DEBUG_H

#include "debug/selftest.h"
#include "lib/types.h"

/* Before the drivers probe: with vnet.echo=on, has the frame reflector
 * take the first virtio-net device. Returns true when it did: the caller
 * leaves the network and the appliance off. */
bool debug_start(void);

/* Once the drivers have probed: selftest_run() (debug/selftest.h), the
 * self-test selftest= names, if any. Called directly, so a fault self-test's
 * backtrace reads selftest_fault, selftest_run, kernel_main. */

#endif
