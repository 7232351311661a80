HOST_TESTS += test_http
test_http_SRCS := tests/host/runtime/http/test_http.c runtime/http/http.c runtime/site.c runtime/site_esp.c $(BUILD)/host/site_default.c
FUZZERS += fuzz_http
fuzz_http_SRCS := tests/fuzz/runtime/http/fuzz_http.c runtime/http/http.c

# The default site plus the benchmark's synthesized /64k.bin, as the image has it.
$(BUILD)/host/site_default.c: tools/mksite.py tests/host/http.mk $(SITE_DATE_STAMP) $(shell find runtime/default-site -type f 2>/dev/null)
	@mkdir -p $(dir $@)
	@$(if $(Q),echo "  MKSITE  $@")
	$(Q)/usr/bin/python3 tools/mksite.py runtime/default-site $@ --extra 64k.bin=65536
