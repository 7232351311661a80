HOST_TESTS += test_parse test_fmt test_cmdline test_frames test_timerq test_heap test_mm_range
test_parse_SRCS := tests/host/lib/test_parse.c lib/parse.c
test_fmt_SRCS := tests/host/lib/test_fmt.c lib/fmt.c
test_cmdline_SRCS := tests/host/kernel/test_cmdline.c kernel/cmdline.c lib/fmt.c
# The CMDLINE_PARAM linker set as kernel/config.c walks it (keys the test registers).
HOST_TESTS += test_config
test_config_SRCS := tests/host/kernel/test_config.c kernel/config.c kernel/cmdline.c lib/fmt.c
test_frames_SRCS := tests/host/kernel/mm/test_frames.c kernel/mm/frames.c
test_timerq_SRCS := tests/host/kernel/time/test_timerq.c kernel/time/timerq.c
test_heap_SRCS := tests/host/kernel/mm/test_heap.c kernel/mm/heap.c
FUZZERS += fuzz_cmdline
fuzz_cmdline_SRCS := tests/fuzz/kernel/fuzz_cmdline.c kernel/cmdline.c lib/fmt.c
test_mm_range_SRCS := tests/host/kernel/mm/test_mm_range.c kernel/mm/mm_range.c
