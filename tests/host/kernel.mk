HOST_TESTS += test_parse test_fmt test_cmdline test_frames test_timerq test_heap test_mm_range
test_parse_SRCS := tests/host/test_parse.c lib/parse.c
test_fmt_SRCS := tests/host/test_fmt.c lib/fmt.c
test_cmdline_SRCS := tests/host/test_cmdline.c kernel/cmdline.c lib/fmt.c
# The CMDLINE_PARAM linker set as kernel/config.c walks it (keys the test registers).
HOST_TESTS += test_params
test_params_SRCS := tests/host/test_params.c kernel/config.c kernel/cmdline.c lib/fmt.c
test_frames_SRCS := tests/host/test_frames.c kernel/mm/frames.c
test_timerq_SRCS := tests/host/test_timerq.c kernel/time/timerq.c
test_heap_SRCS := tests/host/test_heap.c kernel/mm/heap.c
FUZZERS += fuzz_cmdline
fuzz_cmdline_SRCS := tests/fuzz/fuzz_cmdline.c kernel/cmdline.c lib/fmt.c
test_mm_range_SRCS := tests/host/test_mm_range.c kernel/mm/mm_range.c
