# kernel/: the command-line parser, the CMDLINE_PARAM linker set as
# kernel/config.c walks it (keys the test registers), the frame allocator,
# heap, MMIO ranges and the DMA seam with IOMMU drivers of its own (mm/),
# the timer queue (time/).
HOST_TESTS += test_cmdline test_config test_frames test_heap test_mm_range test_dma test_timerq
test_cmdline_USES := cmdline fmt
test_config_USES := config cmdline fmt
test_frames_USES := frames
test_heap_USES := heap
test_mm_range_USES := mm_range
test_dma_USES := dma
test_timerq_USES := timerq
# The wall clock: the provisional (firmware) clock kept apart, EFI_TIME.
HOST_TESTS += test_wallclock
test_wallclock_USES := wallclock
FUZZERS += fuzz_cmdline
fuzz_cmdline_USES := cmdline fmt
