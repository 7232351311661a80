# lwIP: fetched from Debian (net/port/fetch-lwip.sh), built freestanding into
# $(BUILD)/lwip/liblwip.a. Included by the top-level Makefile.
#
# For the kernel:
#   LWIP_LIB        the archive to link
#   LWIP_CFLAGS     include paths for code that includes lwIP headers
#   LWIP_PORT_SRCS  vireo's port files (NET_PORT, net/sources.mk)
#   LWIP_STAMP      exists once the source is unpacked (order-only prerequisite
#                   for anything that includes lwIP headers)
# Targets: $(LWIP_LIB), lwip-fetch, lwip-check (link check, sizes).

LWIP_SRCDIR := $(BUILD)/lwip-src/lwip
LWIP_STAMP  := $(BUILD)/lwip-src/stamp
LWIP_LIB    := $(BUILD)/lwip/liblwip.a

# net/port/ holds lwipopts.h, lwip_port.h and arch/cc.h, net/port/include
# the few libc headers lwIP's core includes.
LWIP_CFLAGS := -Inet/port -Inet/port/include -I$(LWIP_SRCDIR)/src/include

LWIP_PORT_SRCS := $(call src,$(NET_PORT))

# The runtime lwIP serves (RUNTIME_CORE, runtime/sources.mk): lwip-check
# compiles it with the kernel's flags and links it with lwIP alone, plus a
# site table generated from runtime/default-site.
RUNTIME_APP_SRCS := $(call src,$(RUNTIME_CORE))

# lwIP's core, IPv4, IPv6 and Ethernet, relative to src/ (the pinned release's
# src/Filelists.mk COREFILES, CORE4FILES, CORE6FILES and netif/ethernet.c).
# Listed rather than globbed: the tree does not exist before the first fetch.
LWIP_SRCS := \
	core/init.c core/def.c core/dns.c core/inet_chksum.c core/ip.c \
	core/mem.c core/memp.c core/netif.c core/pbuf.c core/raw.c core/stats.c \
	core/sys.c core/altcp.c core/altcp_alloc.c core/altcp_tcp.c core/tcp.c \
	core/tcp_in.c core/tcp_out.c core/timeouts.c core/udp.c \
	core/ipv4/acd.c core/ipv4/autoip.c core/ipv4/dhcp.c core/ipv4/etharp.c \
	core/ipv4/icmp.c core/ipv4/igmp.c core/ipv4/ip4_frag.c core/ipv4/ip4.c \
	core/ipv4/ip4_addr.c \
	core/ipv6/dhcp6.c core/ipv6/ethip6.c core/ipv6/icmp6.c core/ipv6/inet6.c \
	core/ipv6/ip6.c core/ipv6/ip6_addr.c core/ipv6/ip6_frag.c core/ipv6/mld6.c \
	core/ipv6/nd6.c \
	netif/ethernet.c
LWIP_OBJS := $(patsubst %.c,$(BUILD)/lwip/%.o,$(LWIP_SRCS))

# lwIP's own sources: the kernel's flags unchanged (2.2.1 builds clean under
# -Wall -Wextra -Werror with them, so nothing is relaxed; should a newer
# compiler complain, add the specific -Wno-* here, for lwIP only), plus
# -nostdinc with GCC's freestanding headers only, so nothing from the host's
# libc can slip in: what lwIP needs of libc is in net/port/include.
LWIP_GCC_INC := $(shell $(CC) -print-file-name=include)
LWIP_LIB_CFLAGS := $(KCFLAGS) -nostdinc -isystem $(LWIP_GCC_INC) $(LWIP_CFLAGS)

.PHONY: lwip-fetch lwip-check

lwip-fetch: $(LWIP_STAMP)

# The script is idempotent and quick when the pinned tree is already there;
# editing it (a new pin) or a patch in net/port/patches (the directory itself
# for added or removed ones) re-runs it, which unpacks afresh, and every
# lwIP object, kernel and host, is rebuilt from the patched tree.
$(LWIP_STAMP): net/port/fetch-lwip.sh net/debsrc.sh net/port/patches $(wildcard net/port/patches/*.patch)
	$(Q)net/port/fetch-lwip.sh $(BUILD)

# lwIP's sources appear when the stamp is made; this rule only orders that.
$(LWIP_SRCDIR)/src/%.c: | $(LWIP_STAMP) ;

# lwIP's cold files are built for size (COLD_OPT, -Oz), like the kernel's
# COLD_SRCS: set-up,
# DHCP, DNS, MLD, ICMP, reassembly, statistics, address parsing, IPv6
# neighbour discovery and UDP (DHCP, DNS, SNTP, syslog, the apps' UDP
# services: -Os since issue 29's buffer sets and HTTPS sizing needed 2 KiB of
# the images). TCP, IP, ARP and Ethernet keep -O2.
LWIP_COLD := core/init.c core/dns.c core/stats.c core/netif.c core/raw.c \
	core/ipv4/dhcp.c core/ipv4/autoip.c core/ipv4/acd.c core/ipv4/igmp.c core/ipv4/icmp.c \
	core/ipv4/ip4_frag.c core/ipv6/dhcp6.c core/ipv6/mld6.c core/ipv6/icmp6.c core/ipv6/ip6_frag.c core/ipv6/nd6.c core/ipv4/ip4_addr.c core/ipv6/ip6_addr.c core/udp.c \
	core/ipv6/inet6.c
$(patsubst %.c,$(BUILD)/lwip/%.o,$(filter $(LWIP_COLD),$(LWIP_SRCS))): LWIP_LIB_CFLAGS += $(COLD_OPT)
# The per-segment path keeps -O2 whatever HOT_OPT says (the Makefile's HOT_O2).
LWIP_HOT_O2 := core/tcp_in.c core/tcp_out.c core/ipv4/ip4.c core/ipv4/etharp.c netif/ethernet.c \
	core/pbuf.c core/inet_chksum.c
$(patsubst %.c,$(BUILD)/lwip/%.o,$(filter $(LWIP_HOT_O2),$(LWIP_SRCS))): LWIP_LIB_CFLAGS += -O2

$(LWIP_OBJS): $(BUILD)/lwip/%.o: $(LWIP_SRCDIR)/src/%.c $(LWIP_STAMP)
	@mkdir -p $(dir $@)
	@$(if $(Q),echo "  CC      lwip/$*.c")
	$(Q)$(CC) $(LWIP_LIB_CFLAGS) -c $< -o $@

$(LWIP_LIB): $(LWIP_OBJS)
	@$(if $(Q),echo "  AR      $@")
	$(Q)rm -f $@
	$(Q)$(AR) rcsD $@ $(LWIP_OBJS)

# Port files built by the kernel's own rule see lwIP's headers too, and wait
# for the fetch.
$(BUILD)/k/net/%.o $(BUILD)/k/runtime/%.o: KCFLAGS += $(LWIP_CFLAGS)
$(patsubst %.c,$(BUILD)/k/%.o,$(LWIP_PORT_SRCS)): | $(LWIP_STAMP)

# ---- lwip-check: does lwIP plus the port link against the kernel alone? ----
# Compiles the port files with the kernel's flags (-Werror kept), links them
# with every member of liblwip.a into one relocatable object and fails if it
# needs any symbol outside LWIP_KERNEL_SYMS, the kernel API lwIP may use
# (_GLOBAL_OFFSET_TABLE_ is the linker's own, referenced by -fpic code).
# (metrics_*: the /metrics writer and registry the port, receive accounting
# and the runtime write through, lib/metrics.h; outbuf_*: the text buffer,
# lib/outbuf.h; parse_dec: lib/parse.h; cmdline_parse_ipv4: PROXY v1
# addresses and allow-lists, kernel/cmdline.h; random_bytes, random_u64:
# the apps' randomness and the connection table's hash key, kernel/random.h; timer_*/work_*: the
# loop's timers and work items the app API runs on, kernel/loop.h;
# siphash_key_from_bytes: the handshake buckets' key, lib/crypto/siphash.h;
# wallclock_* (wallclock_best too): Date and Last-Modified; __start/__stop_vireo_*: the apps' and
# metrics' linker sets; dhcp_set_ntp_servers: lwIP's DHCP option 42 hook,
# net/clients/sntp.c; mm_get_stats: the apps' resolver's cache sized from
# memory, and resolv_servers_list: its servers, dns= and a lease's,
# net/clients/resolv.c, runtime/resolve.c.)
LWIP_KERNEL_SYMS := _GLOBAL_OFFSET_TABLE_ memcpy memmove memset memcmp strlen strnlen strcmp strncmp \
	kprintf ksnprintf kvsnprintf panic time_ns random_u32 siphash24 siphash_key_from_bytes page_alloc page_free \
	page_alloc_raw kmalloc kzalloc kfree metrics_buf_init metrics_family metrics_sample metrics_sample1 \
	metrics_sample_s64 metrics_sample_fixed metrics_simple metrics_write_all \
	outbuf_mem outbuf_put outbuf_str outbuf_u64 parse_dec cmdline_parse_ipv4 random_bytes random_u64 \
	timer_init timer_start timer_stop work_init work_queue work_cancel \
	wallclock_now wallclock_best wallclock_http_date wallclock_parse_http_date \
	__start_vireo_apps __stop_vireo_apps __start_vireo_metrics __stop_vireo_metrics dhcp_set_ntp_servers \
	mm_get_stats resolv_servers_list
LWIP_CHECK_OBJS := $(patsubst %.c,$(BUILD)/lwip/check/%.o,$(LWIP_PORT_SRCS) $(RUNTIME_APP_SRCS)) \
	$(BUILD)/lwip/check/site_default.o

$(filter-out %/site_default.o,$(LWIP_CHECK_OBJS)): $(BUILD)/lwip/check/%.o: %.c $(LWIP_STAMP)
	@mkdir -p $(dir $@)
	@$(if $(Q),echo "  CC      $<")
	$(Q)$(CC) $(KCFLAGS) $(LWIP_CFLAGS) -c $< -o $@

$(BUILD)/lwip/check/site_default.c: tools/mksite.py $(shell find runtime/default-site -type f 2>/dev/null)
	@mkdir -p $(dir $@)
	$(Q)/usr/bin/python3 tools/mksite.py runtime/default-site $@

$(BUILD)/lwip/check/site_default.o: $(BUILD)/lwip/check/site_default.c
	@$(if $(Q),echo "  CC      $<")
	$(Q)$(CC) $(KCFLAGS) -c $< -o $@

$(BUILD)/lwip/check.o: $(LWIP_LIB) $(LWIP_CHECK_OBJS)
	@$(if $(Q),echo "  LD      $@")
	$(Q)$(LD) -r -o $@ $(LWIP_CHECK_OBJS) --whole-archive $(LWIP_LIB) --no-whole-archive

lwip-check: $(BUILD)/lwip/check.o
	$(Q)set -e; \
	undef=$$(nm -u $< | awk '{ print $$2 }' | sort -u); \
	bad=$$(for s in $$undef; do case " $(LWIP_KERNEL_SYMS) " in *" $$s "*) ;; *) echo $$s ;; esac; done); \
	echo "  CHECK   lwIP + port + app need from the kernel: "$$undef; \
	if [ -n "$$bad" ]; then echo "lwip-check: unexpected undefined symbols:" $$bad >&2; exit 1; fi; \
	echo "  SIZE    $(LWIP_LIB): $$(stat -c %s $(LWIP_LIB)) bytes (archive, with debug info)"; \
	size -t $< | awk 'END { printf "  SIZE    lwIP + port + app code: text %d, data %d, bss %d bytes (before --gc-sections)\n", $$1, $$2, $$3 }'
