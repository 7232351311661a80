# The runtime's tests, and the runtime over the host's lwIP as the tests of
# code above it link it (RUNTIME_HOST_USES, RUNTIME_HOST_SRCS: with the
# static-site app, which serves the site).
RUNTIME_HOST_USES := $(RUNTIME_CORE) resolv fmt wallclock cmdline parse
SITE_APP := apps/site/site.c
RUNTIME_HOST_SRCS := $(LWIP_WIRE) $(SITE_APP) $(BUILD)/host/site_default.c $(LWIP_HOST_LIB)

# The default site plus the benchmark's synthesized /64k.bin, as the image has
# it; the server's test adds /256k.bin, a body past TCP_SND_BUF (bulk send
# grants).
$(BUILD)/host/site_default.c: tools/mksite.py tests/host/runtime/host.mk $(SITE_DATE_STAMP) $(shell find runtime/default-site -type f 2>/dev/null)
	@mkdir -p $(dir $@)
	@$(if $(Q),echo "  MKSITE  $@")
	$(Q)/usr/bin/python3 tools/mksite.py runtime/default-site $@ --extra 64k.bin=65536
$(BUILD)/host/site_server.c: tools/mksite.py tests/host/runtime/host.mk $(SITE_DATE_STAMP) $(shell find runtime/default-site -type f 2>/dev/null)
	@mkdir -p $(dir $@)
	@$(if $(Q),echo "  MKSITE  $@")
	$(Q)/usr/bin/python3 tools/mksite.py runtime/default-site $@ --extra 64k.bin=65536 --extra 256k.bin=262144

# The request parser and the site tables (baked and from the ESP).
HOST_TESTS += test_http
test_http_USES := http chunked mime range site site_esp wallclock
test_http_SRCS := $(BUILD)/host/site_default.c
FUZZERS += fuzz_http
fuzz_http_USES := http chunked mime range wallclock

# The server's buffer-set pool and send slots (runtime/http/slots.c).
HOST_TESTS += test_slots
test_slots_USES := slots

# Address allow-lists (metrics.allow=): the parser and the match.
HOST_TESTS += test_allow
LWIP_HOST_TESTS += test_allow
test_allow_USES := allow fmt cmdline parse

# The PROXY protocol's headers (proxy.trusted=).
HOST_TESTS += test_proxyproto
LWIP_HOST_TESTS += test_proxyproto
test_proxyproto_USES := proxyproto allow fmt cmdline parse

# The egress policy (egress.allow=): every refused range at its edges.
HOST_TESTS += test_egress
LWIP_HOST_TESTS += test_egress
test_egress_USES := egress allow fmt cmdline parse

# The HTTP server, metrics and echo against lwIP over an in-process netif.
HOST_TESTS += test_server
test_server_USES := $(RUNTIME_HOST_USES)
test_server_SRCS := $(filter-out $(BUILD)/host/site_default.c,$(RUNTIME_HOST_SRCS)) $(BUILD)/host/site_server.c

# The application API (include/vireo/): routes, bodies, streaming with
# back-pressure, finishing later, misuse, TCP and UDP services, metrics (its
# own apps, so not the static site).
HOST_TESTS += test_api
test_api_USES := $(RUNTIME_HOST_USES)
test_api_SRCS := $(filter-out $(SITE_APP),$(RUNTIME_HOST_SRCS))
LWIP_HOST_TESTS += test_server test_api

# The connection table's per-source index (runtime/conntab.c) against a
# plain recount, and at 20,000 connections.
HOST_TESTS += test_conntab
LWIP_HOST_TESTS += test_conntab
test_conntab_USES := conntab siphash

# The handshake rate buckets (runtime/http/hsrate.c): arithmetic, prefixes,
# the global bucket, the table's bound against a spray of prefixes.
HOST_TESTS += test_hsrate
test_hsrate_USES := hsrate siphash

# Upstream responses (the HTTP client's): heads, every framing, the chunked
# decoder, every split, malformed and oversized ones.
HOST_TESTS += test_response
test_response_USES := response chunked
FUZZERS += fuzz_response
fuzz_response_USES := response chunked

# The data disk's app API (vireo/store.h: keys and the record log) over the
# store on the model disk, with docs/apps.md's record-log example.
HOST_TESTS += test_store_api
test_store_api_USES := store_api store_log store store_compact store_open blk index logfmt crc32c fmt
test_store_api_SRCS := tests/host/storage/memdisk.c

# The records the runtime keeps on the store (runtime/keep_rec.c: TLS and
# ACME state): a round trip, and every malformed record refused with its
# reason (never read past its end), a record cut at every length too.
HOST_TESTS += test_keep_rec
test_keep_rec_USES := keep_rec

# RFC 9773's polling plan (runtime/acme_ari.c, make STORAGE=1): no URL
# reads the directory, a stale URL is re-read from it and never polled
# forever, Retry-After clamped.
HOST_TESTS += test_acme_ari
test_acme_ari_USES := acme_ari acme_renew wallclock
