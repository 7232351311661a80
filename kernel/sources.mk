# kernel/: arch/ (entry, traps, APIC and interrupts), mm/ (page tables,
# frames, heap, MMIO ranges, the DMA seam), time/ (clocks, timer queue, wall clock, boot
# timeline) and the rest (console, panic, event loop, command line and
# configuration, shell, random generator, power-off). Cold: set-up and
# configuration, the console and panic paths, the shell.
HOT_SRCS += kernel/arch/entry.S kernel/arch/trap.c kernel/arch/apic.c \
	kernel/mm/mm.c kernel/mm/dma.c kernel/mm/frames.c kernel/mm/heap.c \
	kernel/time/time.c kernel/time/timerq.c \
	kernel/loop.c kernel/loop_run.c kernel/random.c
COLD_SRCS += kernel/main.c kernel/console.c kernel/panic.c kernel/cmdline.c kernel/config.c kernel/shell.c \
	kernel/power.c kernel/mm/mm_range.c kernel/time/timeline.c kernel/time/wallclock.c
