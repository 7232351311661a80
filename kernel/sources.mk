# kernel/: arch/ (entry, traps, APIC and interrupts), mm/ (page tables,
# frames, heap, MMIO ranges, the DMA seam), time/ (clocks, timer queue, wall clock, boot
# timeline) and the rest (console, panic, event loop, command line and
# configuration, shell, random generator, power-off). Cold: set-up and
# configuration, the console and panic paths, the shell, and (-Os since
# issue 29's keep-alive list and lwIP's parked PCBs needed 1.5 KiB of the
# TLS=0 image) the clocks' calibration, the APIC's set-up and the random
# generator's seeding: their per-request part is a TSC read, an EOI write
# or a call into lib/crypto/csprng.c.
HOT_SRCS += kernel/arch/entry.S kernel/arch/trap.c \
	kernel/mm/mm.c kernel/mm/dma.c kernel/mm/frames.c kernel/mm/heap.c \
	kernel/time/timerq.c \
	kernel/loop.c kernel/loop_run.c
COLD_SRCS += kernel/main.c kernel/console.c kernel/panic.c kernel/cmdline.c kernel/config.c kernel/shell.c \
	kernel/power.c kernel/mm/mm_range.c kernel/time/timeline.c kernel/time/wallclock.c kernel/time/time.c kernel/random.c kernel/arch/apic.c
