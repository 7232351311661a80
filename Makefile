# vireo — one plain Makefile. `make help` lists the targets.
#
# Kernel objects are built freestanding (GNU-EFI for headers) and linked into a
# PE32+ UEFI application. Pure code (rings, parsers, allocators) is also built
# for the host under ASan/UBSan by the rules near the end.

VERSION := 0.1.0
BUILD   := build

ifneq ($(V),1)
Q := @
endif

CC      := gcc
LD      := ld
OBJCOPY := objcopy
OBJDUMP := objdump
HOST_CC := gcc
# Debian's interpreter, where python3-pytest is installed (not a pyenv shim).
PYTHON  := /usr/bin/python3
# Parallel jobs for the builds make test does before its suites (one per core).
JOBS    ?= $(shell nproc 2>/dev/null || echo 2)
.DEFAULT_GOAL := all
FUZZ_CC := clang

EFI_INC   := /usr/include/efi

# Reproducible builds: timestamps come from the last commit.
SOURCE_DATE_EPOCH ?= $(shell git log -1 --format=%ct 2>/dev/null || echo 0)
export SOURCE_DATE_EPOCH
GIT_REV := $(shell git rev-parse --short=12 HEAD 2>/dev/null || echo unknown)

# Hot code's optimization (the per-packet and per-request path: "Hot and
# cold" below).
HOT_OPT ?= -O2
# Kernel C flags. -fpic because GNU-EFI images relocate themselves at load
# time; hidden visibility keeps that from costing a GOT load per global.
KCFLAGS := -std=gnu11 $(HOT_OPT) -g -Wall -Wextra -Werror -Wno-unused-parameter \
	-ffreestanding -fno-builtin -fno-stack-protector -fno-stack-check \
	-fpic -fvisibility=hidden -fshort-wchar -mno-red-zone \
	-mno-mmx -mno-sse -mno-sse2 -mno-avx -mgeneral-regs-only \
	-fno-omit-frame-pointer -mno-omit-leaf-frame-pointer -fno-strict-aliasing \
	-fno-asynchronous-unwind-tables -ffunction-sections -fdata-sections \
	-fdebug-prefix-map=$(CURDIR)=. \
	-DVIREO_VERSION='"$(VERSION)"' -DVIREO_REV='"$(GIT_REV)"' \
	-I. -Iinclude -Ikernel/arch -I$(BUILD)/gen -MMD -MP
# TLS (the TLS block below): on by default for the appliance, apps/site, so
# `make` and `make run` serve HTTPS (issue 33); other apps are built without
# it unless they ask (make APP=apps/NAME TLS=1), and TLS=0 builds the small
# plain-HTTP image (docs/https.md). With TLS, lwIP is built with altcp
# (net/port/lwipopts.h) and its altcp_tls.h includes mbedTLS's headers
# (net/tls/mbedtls.mk).
TLS ?= $(if $(filter apps/site apps/site/,$(or $(APP),apps/site)),1,0)
ifeq ($(TLS),1)
KCFLAGS += -DVIREO_TLS=1 -I$(BUILD)/mbedtls-src/mbedtls/include \
	'-DMBEDTLS_CONFIG_FILE="net/tls/mbedtls_config.h"'
endif
# Only boot/ sees GNU-EFI headers.
# Cold code's optimization (COLD_SRCS, lwIP's and mbedTLS's cold files,
# the image's own apps; "Hot and cold" below): -Oz, GCC's smallest (it
# trades instructions for bytes where -Os would not): 5,632 B of the
# default image over -Os (issue 33's room for the store, docs/benchmarks.md).
COLD_OPT := -Oz
BOOT_CFLAGS := -I$(EFI_INC) -I$(EFI_INC)/x86_64 -DGNU_EFI_USE_MS_ABI -DEFI_FUNCTION_WRAPPER=0
KASFLAGS := -I. -MMD -MP -g
KLDFLAGS := -nostdlib -znocombreloc -shared -Bsymbolic --no-undefined \
	--build-id=none --gc-sections -T linker/vireo.ld

# ---- the sources: each named once, in its folder's sources.mk ------------
# Every subsystem lists its own files, in the layering order (docs/
# architecture.md) that is also the link order: HOT_SRCS are built -O2,
# COLD_SRCS -Oz (below). A test, a fuzzer or a group names a source by its
# file name alone, $(call src,NAME ...), so a path is written once.
SUBSYSTEMS := lib boot kernel drivers debug net storage runtime
HOT_SRCS :=
COLD_SRCS :=
include $(addsuffix /sources.mk,$(SUBSYSTEMS))
# (TLS_SRCS and MBEDTLS_ALT_SRCS come from net/tls/mbedtls.mk, read below.)
ALL_SRCS = $(HOT_SRCS) $(COLD_SRCS) $(PVH_SRCS) $(ZSTUB_SRCS) $(TLS_SRCS) $(MBEDTLS_ALT_SRCS)
src = $(foreach n,$(1),$(or $(filter %/$(n).c %/$(n).S,$(ALL_SRCS)),$(error no source $(n).c in any sources.mk)))

# ---- the appliance: make APP=apps/NAME (docs/apps.md) ----------------------
# The app's C files (apps/NAME/*.c) are linked with the runtime above. Its
# apps/NAME/app.mk, if any, may add APP_SRCS, APP_CFLAGS, APP_ROOT and
# APP_EXTRA. The default app's outputs are $(BUILD)/vireo.*; any other's go
# to $(BUILD)/apps/NAME/ (objects are shared: the runtime's are the same for
# every app, the app's own live under $(BUILD)/k/apps/NAME/).
APP ?= apps/site
override APP := $(patsubst %/,%,$(APP))
APP_NAME := $(notdir $(APP))
ifeq ($(APP),apps/site)
OUT := $(BUILD)
else
OUT := $(BUILD)/apps/$(APP_NAME)
endif
APP_SRCS := $(wildcard $(APP)/*.c)
APP_CFLAGS :=
# app.mk sees APP, APP_NAME and OUT (for generated sources: a rule making
# $(OUT)/x.c and APP_SRCS += $(OUT)/x.c).
-include $(APP)/app.mk
ifeq ($(strip $(APP_SRCS)),)
$(error APP=$(APP): no C files there; the apps are $(notdir $(patsubst %/,%,$(wildcard apps/*/))))
endif
# Every image also carries vireo's own apps, IMAGE_APPS (docs/apps.md): they
# are apps on the same API, linked after APP (their init runs after its, so
# APP's services take a port first), and being vireo's their keys are the
# appliance's (docs/appliance.md, make params) and their metrics keep the
# vireo_ names (VIREO_BUILTIN, include/vireo/app.h).
IMAGE_APPS := apps/echo
IMAGE_APP_SRCS := $(foreach a,$(filter-out $(APP),$(IMAGE_APPS)),$(wildcard $(a)/*.c))
APP_SRCS += $(IMAGE_APP_SRCS)
APP_OBJS := $(patsubst %,$(BUILD)/k/%.o,$(basename $(APP_SRCS)))
# An app is sealed (docs/apps.md): its files are built with the app API's
# include path and its own folder only, not the tree's (-I., -Ikernel/arch,
# lwIP's, mbedTLS's), so an app that includes kernel/, lib/ or runtime/
# does not compile. APP_CFLAGS (app.mk) come last.
APP_KCFLAGS = $(filter-out -I% '-DMBEDTLS_CONFIG_FILE=%,$(KCFLAGS)) -Iinclude -I$(APP_DIR) $(APP_CFLAGS)
$(APP_OBJS): APP_DIR := $(APP)
$(foreach a,$(IMAGE_APPS),$(eval $(patsubst %,$(BUILD)/k/%.o,$(basename $(wildcard $(a)/*.c))): APP_DIR := $(a)))
# (Cold, as the TCP/UDP services under them are: COLD_OPT.)
$(foreach a,$(IMAGE_APPS),$(eval $(patsubst %,$(BUILD)/k/%.o,$(basename $(wildcard $(a)/*.c))): APP_CFLAGS := $(COLD_OPT)))

# ---- storage: linked into the apps that use it ---------------------------
# The block path (drivers/virtio/blk/, storage/: the block layer and the
# store, runtime/store_api.c: the store's side of the app API; with TLS the
# keeping of keys, certificates and ACME state) is linked with STORAGE=1:
# the default image (apps/site with TLS) has it (issue 33: keys and
# certificates kept across restarts), so does an app that keeps data (its
# app.mk sets it: apps/kv); other apps and `make TLS=0` carry none of it
# unless asked (STORAGE=1), and STORAGE=0 leaves it out of the site. An app
# calling vireo_store_*() without it does not link (undefined reference).
STORAGE ?= $(if $(filter apps/site apps/site/,$(or $(APP),apps/site)),$(TLS),0)
# (tools/cmdline_table.py --no-storage names the same paths.)
STORAGE_PATHS := drivers/virtio/blk/% storage/% runtime/store_api.c runtime/acme_state.c runtime/keep_rec.c runtime/acme_ari.c
SRCS := $(HOT_SRCS) $(COLD_SRCS)
ifneq ($(STORAGE),1)
SRCS := $(filter-out $(STORAGE_PATHS),$(SRCS))
endif
# The objects are the same either way, but two; the link follows the choice.
STORAGE_STAMP := $(OUT)/storage-link.$(STORAGE)
$(STORAGE_STAMP):
	@mkdir -p $(dir $@)
	$(Q)rm -f $(OUT)/storage-link.* && touch $@
# The two: the ACME client and its protocol machine take up what the store
# kept (an order cut short, renewal information: docs/https.md "Kept on the
# store") only with STORAGE=1 (-DVIREO_ACME_KEEP), so an image without
# the store carries none of those bytes. The stamp, in BUILD as the objects are,
# rebuilds them when the choice changes (a few seconds).
ACME_KEEP_OBJS := $(BUILD)/k/runtime/acme.o $(BUILD)/k/net/acme/acme_client.o
ACME_KEEP_STAMP := $(BUILD)/acme-keep.$(STORAGE)
$(ACME_KEEP_STAMP):
	@mkdir -p $(dir $@)
	$(Q)rm -f $(BUILD)/acme-keep.* && touch $@
$(ACME_KEEP_OBJS): $(ACME_KEEP_STAMP)
ifeq ($(STORAGE),1)
$(ACME_KEEP_OBJS): KCFLAGS += -DVIREO_ACME_KEEP=1
endif
OBJS := $(patsubst %,$(BUILD)/k/%.o,$(basename $(SRCS))) $(APP_OBJS) $(OUT)/site_data.o
# Hot and cold: each sources.mk puts a file in HOT_SRCS or COLD_SRCS. Cold
# code is built for size (COLD_OPT, -Oz, after -O2 wins): boot, ACPI and PCI scans,
# device set-up, configuration, the shell, SNTP/DNS/syslog, the /metrics text,
# the boot-time metadata fetch, VT-d (its per-buffer map/unmap is IOTLB-bound),
# the apps' TCP/UDP services, the MMIO transport (microVM), all of debug/.
# Set-up functions inside the hot files are marked __cold (lib/types.h).
# The per-packet and per-request path (virtqueues, virtio-net, traps, the
# server and its parse/outbuf helpers, the allocators, lwIP's TCP/IP) keeps
# -O2; net/port/lwip.mk does the same for lwIP's cold files.
$(patsubst %.c,$(BUILD)/k/%.o,$(COLD_SRCS)): KCFLAGS += $(COLD_OPT)
# HOT_OPT (-O2) builds every other kernel and lwIP file; HOT_O2 (and lwIP's
# LWIP_HOT_O2) names the ones that keep -O2 whatever HOT_OPT says: the
# virtqueues and virtio-net, the HTTP parser and server, the string
# functions. `make HOT_OPT=-Os` is issue 33's measurement of the rest at -Os
# (docs/benchmarks.md, Image budget); mbedTLS's hot files stay -O2 either way.
HOT_O2 := drivers/virtio/virtq.c drivers/virtio/net/virtio_net.c \
	runtime/http/http.c runtime/http/server.c runtime/http/exchange.c lib/string.c
$(patsubst %.c,$(BUILD)/k/%.o,$(HOT_O2)): KCFLAGS += -O2
# No code is padded to 16-byte boundaries (functions, loops, jump targets),
# -O2 code and lwIP's included: 13 KB of the image. Under TCG, which
# translates blocks wherever they lie, it costs nothing (docs/benchmarks.md).
KCFLAGS += -falign-functions=1 -falign-jumps=1 -falign-labels=1 -falign-loops=1

# lwIP (fetched, never committed) and the rules for code that uses it.
include net/port/lwip.mk
$(patsubst %.c,$(BUILD)/k/%.o,$(filter net/% runtime/%,$(SRCS))): | $(LWIP_STAMP)

# ---- TLS (net/tls/mbedtls.mk, docs/https.md) ------------------------------
# TLS is set at the top (on for apps/site). The stamp's name holds the
# choice, so switching rebuilds every object (-DVIREO_TLS=1 in KCFLAGS).
TLS_BUILD_STAMP := $(BUILD)/tls-build.$(TLS)
$(TLS_BUILD_STAMP):
	@mkdir -p $(dir $@)
	$(Q)rm -f $(BUILD)/tls-build.* && touch $@
# Every object: TLS=1 changes lwIP's options (LWIP_ALTCP) and KCFLAGS.
$(OBJS) $(LWIP_OBJS): $(TLS_BUILD_STAMP)
# The same for COLD_OPT: a new one rebuilds the objects (a build dir made
# with another one would not otherwise match a fresh clone's image).
COLD_STAMP := $(BUILD)/cold-opt.$(shell printf '%s' '$(COLD_OPT)' | sha1sum | cut -c1-12)
$(COLD_STAMP):
	@mkdir -p $(dir $@)
	$(Q)rm -f $(BUILD)/cold-opt.* && touch $@
$(OBJS) $(LWIP_OBJS): $(COLD_STAMP)
# The rules are always read (the host tests build mbedTLS too); only TLS=1
# links it into the image.
include net/tls/mbedtls.mk
MBEDTLS_LINK :=
ifeq ($(TLS),1)
MBEDTLS_LINK := $(MBEDTLS_LIB)
OBJS += $(TLS_OBJS)
$(OBJS) $(LWIP_OBJS): | $(MBEDTLS_STAMP)
endif
$(TLS_OBJS) $(MBEDTLS_OBJS) $(MBEDTLS_ALT_OBJS) $(MBEDTLS_LIB): $(COLD_STAMP)
# ---- end TLS ---------------------------------------------------------------

# The files baked into the image (vireo/files.h; the static site serves them):
# APP_ROOT's files as rodata, each compressible one with its NAME.gz made here
# (mksite.py --gzip --brotli: served to clients taking gzip or br), plus APP_EXTRA synthesized files (NAME=SIZE; the
# benchmark's 64 KiB file, for the static site only), generated at boot. An app's
# own apps/NAME/site/ is its APP_ROOT when it has one.
APP_ROOT  ?= $(if $(wildcard $(APP)/site),$(APP)/site,runtime/default-site)
APP_EXTRA ?= $(if $(filter apps/site,$(APP)),64k.bin=65536)
# The linker's cap on the EFI image: 1 MiB for code and the site, plus the
# synthesized files' sizes (a benchmark or test build's 1 MiB or 16 MiB body).
# linker/vireo.ld's .bss guard: 160 KiB with the store linked, else 128 KiB.
BSS_CAP := $(if $(filter 1,$(STORAGE)),163840,131072)
IMAGE_CAP := $(shell echo '$(APP_EXTRA)' | tr ' ' '\n' | awk -F= '{ s += $$2 } END { print s + 1048576 }')
APP_STAMP := $(OUT)/app-root.$(shell printf '%s %s' '$(APP_ROOT)' '$(APP_EXTRA)' | sha1sum | cut -c1-12)
$(APP_STAMP):
	@mkdir -p $(dir $@)
	$(Q)rm -f $(OUT)/app-root.* && touch $@
# The site's Last-Modified is SOURCE_DATE_EPOCH (mksite.py): a new commit
# regenerates the site tables (the kernel's and the host tests').
SITE_DATE_STAMP := $(BUILD)/site-date.$(SOURCE_DATE_EPOCH)
$(SITE_DATE_STAMP):
	@mkdir -p $(dir $@)
	$(Q)rm -f $(BUILD)/site-date.* && touch $@
# The boot banner names the commit (-DVIREO_REV, kernel/main.c): a new
# commit rebuilds main.o, so a worktree's image says what it was built from
# and matches a fresh clone's byte for byte (test_images).
REV_STAMP := $(BUILD)/rev.$(GIT_REV)
$(REV_STAMP):
	@mkdir -p $(dir $@)
	$(Q)rm -f $(BUILD)/rev.* && touch $@
$(BUILD)/k/kernel/main.o: $(REV_STAMP)
$(OUT)/site_data.c: tools/mksite.py $(APP_STAMP) $(SITE_DATE_STAMP) $(shell find $(APP_ROOT) -type f 2>/dev/null)
	@$(if $(Q),echo "  MKSITE  $(APP_ROOT)")
	$(Q)$(PYTHON) tools/mksite.py --gzip --brotli $(APP_ROOT) $@ $(addprefix --extra ,$(APP_EXTRA))
# The Content-Type table (runtime/http/mime.c includes it): generated from
# Debian's media-types (/etc/mime.types) by tools/mkmime.py, never typed by
# hand; mksite.py reads the same table. A prerequisite of mime.c itself, so
# it exists before anything compiles mime.c (the kernel, the host tests).
MIME_TYPES := /etc/mime.types
MIME_H := $(BUILD)/gen/mime_table.h
$(MIME_H): tools/mkmime.py $(MIME_TYPES)
	@mkdir -p $(dir $@)
	@$(if $(Q),echo "  MKMIME  $@")
	$(Q)$(PYTHON) tools/mkmime.py --types $(MIME_TYPES) $@
runtime/http/mime.c: $(MIME_H)
$(OUT)/site_data.c: tools/mkmime.py $(MIME_TYPES)
$(OUT)/site_data.o: $(OUT)/site_data.c
	@$(if $(Q),echo "  CC      $<")
	$(Q)$(CC) $(KCFLAGS) -c $< -o $@

EFI   := $(OUT)/vireo.efi
ELF   := $(OUT)/vireo.so
IMAGE := $(OUT)/vireo.img
PVH   := $(OUT)/vireo.elf

.PHONY: all image run test test-host test-qemu fuzz fuzz-smoke deps help clean bench-boot bench \
	test-matrix test-matrix-quick test-hostile soak test-capacity check-docs check-layers bench-attacks bench-upload bench-tls bench-hs-cost bench-1m bench-kv params \
	bench-iommu bench-migration qemu-current test-qemu-current
all: $(EFI) $(PVH)

$(BUILD)/k/boot/%.o: boot/%.c
	@mkdir -p $(dir $@)
	@$(if $(Q),echo "  CC      $<")
	$(Q)$(CC) $(KCFLAGS) $(BOOT_CFLAGS) -c $< -o $@

$(BUILD)/k/%.o: %.c
	@mkdir -p $(dir $@)
	@$(if $(Q),echo "  CC      $<")
	$(Q)$(CC) $(KCFLAGS) -c $< -o $@

$(BUILD)/k/%.o: %.S
	@mkdir -p $(dir $@)
	@$(if $(Q),echo "  AS      $<")
	$(Q)$(CC) $(KCFLAGS) $(KASFLAGS) -c $< -o $@

$(APP_OBJS): $(BUILD)/k/%.o: %.c
	@mkdir -p $(dir $@)
	@$(if $(Q),echo "  CC      $<")
	$(Q)$(CC) $(APP_KCFLAGS) -c $< -o $@

$(ELF): $(OBJS) $(LWIP_LIB) $(MBEDTLS_LINK) linker/vireo.ld $(STORAGE_STAMP)
	@mkdir -p $(dir $@)
	@$(if $(Q),echo "  LD      $@")
	$(Q)$(LD) $(KLDFLAGS) -z pack-relative-relocs --defsym=__image_cap=$(IMAGE_CAP) --defsym=__bss_cap=$(BSS_CAP) $(OBJS) $(LWIP_LIB) $(MBEDTLS_LINK) -o $@

# --subsystem 10 = EFI application. Section list matches linker/vireo.ld:
# the image relocates itself from its RELR table (boot/efi_start.c, in
# .rodata), so .dynamic, .dynsym and .dynstr stay out of the PE.
# --strip-all: the PE's COFF symbol table (~44 KB) is never loaded; debuggers
# read vireo.so.
# The image budgets (docs/benchmarks.md, Image budget), two for each image
# of the site. What ships, $(EFI) (compressed: ZIMAGE below): the default
# image (the static site with TLS, the TLS client, ACME and the store)
# within 640 KiB (issue 33's budget), TLS=0 within 360 KiB. The kernel's
# own PE, $(EFI_RAW) (what is loaded: its pages stay the kernel's), within
# the bounds it had before compression: 704 KiB with TLS and the store
# (640 KiB with TLS alone, STORAGE=0), 360 KiB with TLS=0. Other apps'
# images have none. Credentials an operator bakes in (TLS_CERT=, TLS_KEY=,
# TLS_CA=) are their bytes, not the image's: the budgets grow by their
# files' sizes. A build over a budget fails; IMAGE_BUDGET=0 and
# KERNEL_BUDGET=0 turn them off.
TLS_BAKED_BYTES = $(if $(TLS_CERT)$(TLS_KEY)$(TLS_CA),$(shell cat $(TLS_CERT) $(TLS_KEY) $(TLS_CA) | wc -c),0)
ifeq ($(APP),apps/site)
IMAGE_BUDGET ?= $(if $(filter 1,$(TLS)),$(shell echo $$((655360 + $(TLS_BAKED_BYTES)))),368640)
KERNEL_BUDGET ?= $(if $(filter 1,$(TLS)),$(shell echo $$((655360 + $(if $(filter 1,$(STORAGE)),65536,0) + $(TLS_BAKED_BYTES)))),368640)
endif
IMAGE_BUDGET ?= 0
KERNEL_BUDGET ?= 0
# The linker sets (vireo_<set> sections, include/vireo/linkset.h) lie right
# after .data, inside the data pages: their bytes, .data's and the alignment
# between them, dumped at once, become the PE's .data, so the PE keeps one
# data section (a PE section each would cost file alignment and break its
# section alignment). Any other allocated section would be lost: the build
# stops on one.
EFI_SECTIONS := \.hash|\.gnu\.hash|\.text|\.reloc|\.rodata|\.data|vireo_[a-z0-9_]+|\.bss|\.dynamic|\.dynsym|\.rela|\.dynstr
# ELF -> PE32+: the recipe for the kernel's PE and the stub's.
define to_pe
	$(Q)extra=$$($(OBJDUMP) -h $< | awk 'NR > 5 && NF >= 7 { name = $$2 } /ALLOC/ { print name }' | \
		grep -vxE '$(EFI_SECTIONS)' || true); \
		if [ -n "$$extra" ]; then echo "$<: sections the PE would lose: $$extra" >&2; exit 1; fi
	$(Q)$(OBJCOPY) -O binary -j .data -j 'vireo_*' $< $@.data
	$(Q)$(OBJCOPY) -j .text -j .rodata -j .data -j .bss -j .reloc --update-section .data=$@.data \
		--strip-all --target efi-app-x86_64 --subsystem=10 $< $@
	$(Q)rm -f $@.data
endef

# ---- Compressed image (ZIMAGE=1, the default) -----------------------------
# $(EFI) is a small stub PE (boot/zstub.c) carrying the kernel's PE
# ($(EFI_RAW)) laid out as in memory and compressed (tools/zpack.c, the
# format of boot/lz.h): the stub decodes it into pages of its own and calls
# its entry, which relocates itself as when the firmware loads it. What
# ships is about 65% of the kernel's PE (docs/benchmarks.md, Image budget);
# decoding costs ~2 ms natively. ZIMAGE=0 makes $(EFI) the kernel's PE
# itself (the budget then applies to it).
ZIMAGE ?= 1
EFI_RAW := $(OUT)/vireo-kernel.efi
ZPACK := $(BUILD)/tools/zpack
ZSTUB_OBJS := $(patsubst %,$(BUILD)/k/boot/%.o,efi_start relr zstub lz)
$(ZPACK): tools/zpack.c boot/lz.c boot/lz.h boot/zimage.h lib/types.h
	@mkdir -p $(dir $@)
	@$(if $(Q),echo "  HOSTCC  $@")
	$(Q)$(CC) -O2 -Wall -Wextra -Werror -I. -Iinclude tools/zpack.c boot/lz.c -o $@
$(OUT)/vireo.z: $(EFI_RAW) $(ZPACK)
	$(Q)$(ZPACK) $< $@
$(OUT)/zpayload.o: boot/zpayload.S $(OUT)/vireo.z
	$(Q)$(CC) $(KASFLAGS) -DZPAYLOAD='"$(abspath $(OUT)/vireo.z)"' -c $< -o $@
# The stub has no relocation at all (linker/vireo.ld's .rela check holds it
# to that, and ld fails on -z pack-relative-relocs with nothing to pack).
$(OUT)/vireo-stub.so: $(ZSTUB_OBJS) $(OUT)/zpayload.o linker/vireo.ld
	@$(if $(Q),echo "  LD      $@")
	$(Q)$(LD) $(KLDFLAGS) --defsym=__image_cap=$(IMAGE_CAP) --defsym=__bss_cap=0 $(ZSTUB_OBJS) $(OUT)/zpayload.o -o $@

# $(call budget,WHAT,BYTES): the target's size against a budget.
define budget
	$(Q)s=$$(stat -c %s $@); if [ "$(2)" != 0 ] && [ $$s -gt $(2) ]; then \
		echo "error: $@ is $$s bytes, over $(1) of $(2) (docs/benchmarks.md," \
			"Image budget; $(1)=0 builds it anyway)" >&2; rm -f $@; exit 1; fi
endef
ifeq ($(ZIMAGE),1)
$(EFI_RAW): $(ELF)
	@$(if $(Q),echo "  OBJCOPY $@")
	$(to_pe)
	$(call budget,KERNEL_BUDGET,$(KERNEL_BUDGET))
$(EFI): $(OUT)/vireo-stub.so
	@$(if $(Q),echo "  OBJCOPY $@")
	$(to_pe)
	@echo "  EFI     $@ ($$(stat -c %s $@) bytes; the kernel's PE $$(stat -c %s $(EFI_RAW)))"
	$(call budget,IMAGE_BUDGET,$(IMAGE_BUDGET))
else
$(EFI): $(ELF)
	@$(if $(Q),echo "  OBJCOPY $@")
	$(to_pe)
	@echo "  EFI     $@ ($$(stat -c %s $@) bytes, not compressed)"
	$(call budget,KERNEL_BUDGET,$(KERNEL_BUDGET))
endif

# ---- PVH ELF (PVH_SRCS, boot/sources.mk; linker/pvh.ld) ------------------
# The same kernel objects, with the PVH entry instead of efi_main, linked at
# its load address as build/vireo.elf for `qemu-system-x86_64 -kernel`
# (SeaBIOS on q35/pc, qboot on microvm) and other PVH loaders.
PVH_OBJS := $(filter-out $(patsubst %,$(BUILD)/k/boot/%.o,$(EFI_ONLY)),$(OBJS)) \
	$(patsubst %,$(BUILD)/k/%.o,$(basename $(PVH_SRCS)))
.PHONY: elf
elf: $(PVH)
$(BUILD)/k/boot/%.o: boot/%.S
	@mkdir -p $(dir $@)
	@$(if $(Q),echo "  AS      $<")
	$(Q)$(CC) $(KCFLAGS) $(KASFLAGS) -c $< -o $@
$(PVH): $(PVH_OBJS) $(LWIP_LIB) $(MBEDTLS_LINK) linker/pvh.ld $(STORAGE_STAMP)
	@mkdir -p $(dir $@)
	@$(if $(Q),echo "  LD      $@")
	$(Q)$(LD) -nostdlib -static -z noexecstack -z max-page-size=4096 --build-id=none --gc-sections \
		--no-undefined -T linker/pvh.ld $(PVH_OBJS) $(LWIP_LIB) $(MBEDTLS_LINK) -o $@
	@echo "  ELF     $@ ($$(stat -c %s $@) bytes)"
# tests/qemu/test_pvh.py boots it.
test-qemu: $(PVH)
# The appliance on QEMU microvm (no PCI, no ACPI, virtio-mmio), like `make run`.
.PHONY: run-microvm bench-pvh
run-microvm: deps-run $(PVH)
	images/qemu.sh --microvm --kernel $(PVH) --mem $(MEM) --cmdline "$(CMDLINE)" \
		$(if $(PORT),--port $(PORT) --guest-port $(HTTP_PORT)) \
		$(if $(and $(PORT),$(filter 1,$(TLS))),--tls-port $(TLS_PORT) --guest-tls-port $(HTTPS_PORT)) $(QEMU_OPTS)
# QEMU start -> first HTTP 200: OVMF vs -kernel on q35, pc and microvm (printed);
# then, as root, side by side with the nginx peer booted with -kernel on q35 and
# microvm through the shared harness (tests/bench/pvh_peer.sh; BENCH_REPS,
# BENCH_DURATION, BENCH_HARNESS, BENCH_PVH_MEM).
bench-pvh: deps-test $(IMAGE) $(PVH)
	$(Q)$(PYTHON) tests/bench/pvh_boot.py
	$(Q)tests/bench/pvh_peer.sh

image: $(IMAGE)
# CFG=FILE: the image's ESP also holds FILE as EFI/vireo/vireo.cfg (the
# configuration file, docs/appliance.md), e.g. make run APP=apps/proxy
# CFG=my.cfg with proxy.upstream= in it. The stamp remakes the image when
# CFG names another file or none.
CFG ?=
CFG_STAMP := $(OUT)/cfg.stamp
$(CFG_STAMP): FORCE
	$(Q)mkdir -p $(@D); echo '$(abspath $(CFG))' | cmp -s - $@ || echo '$(abspath $(CFG))' > $@
$(IMAGE): $(EFI) images/mkimage.sh $(CFG) $(CFG_STAMP)
	$(Q)images/mkimage.sh $(EFI) $@ $(CFG)
.PHONY: FORCE
FORCE:

# ---- running -------------------------------------------------------------
CMDLINE ?=
QEMU_OPTS ?=
MEM ?= 64
# PORT: host port forwarded to the appliance (PORT= for no NIC); HTTP_PORT:
# the guest's, if CMDLINE sets http=.
PORT ?= 8080
HTTP_PORT ?= $(or $(patsubst http=%,%,$(filter http=%,$(CMDLINE))),80)
# With TLS (the site's default): host port TLS_PORT (8443) to the guest's https= port too.
TLS_PORT ?= 8443
HTTPS_PORT ?= $(or $(patsubst https=%,%,$(filter https=%,$(CMDLINE))),443)
# An image with the store (STORAGE=1: the default site, apps/kv) runs with
# a data disk, DISK= or build/data.img (made blank the first time, kept
# after: the keys and certificates of the last run are there); DISK=none
# runs without one (the store then warns and keeps keys in memory).
RUN_DISK = $(if $(filter none,$(DISK)),,$(or $(DISK),$(if $(filter 1,$(STORAGE)),$(BUILD)/data.img)))
run: deps-run $(IMAGE)
	$(if $(RUN_DISK),$(Q)$(MAKE) -s disk DISK=$(RUN_DISK))
	images/qemu.sh --image $(IMAGE) --mem $(MEM) --cmdline "$(CMDLINE)" $(if $(RUN_DISK),--disk $(RUN_DISK)) \
		$(if $(PORT),--port $(PORT) --guest-port $(HTTP_PORT)) \
		$(if $(and $(PORT),$(filter 1,$(TLS))),--tls-port $(TLS_PORT) --guest-tls-port $(HTTPS_PORT)) \
		$(if $(PORT),$(APP_RUN_FWD)) $(QEMU_OPTS)

# A blank data disk for the store (docs/storage.md): DISK= names the file
# (default build/data.img), DISK_SIZE= its size; an existing file is kept.
DISK_SIZE ?= 64M
.PHONY: disk
disk:
	$(Q)f=$(or $(DISK),$(BUILD)/data.img); mkdir -p $$(dirname $$f); \
	if [ -e $$f ]; then echo "  DISK    $$f exists: kept (remove it for a blank one)"; \
	else truncate -s $(DISK_SIZE) $$f && echo "  DISK    $$f ($(DISK_SIZE), blank: formatted at first boot)"; fi

deps-run:
	$(Q)tools/deps.sh run

# ---- tests ---------------------------------------------------------------
HOST_CFLAGS := -std=gnu11 -O1 -g -Wall -Wextra -Werror -Wno-unused-parameter \
	-fsanitize=address,undefined -fno-sanitize-recover=all -fno-omit-frame-pointer \
	-Itests/host/shim -I. -Iinclude -I$(BUILD)/gen -MMD -MP -DHOST_TEST
HOST_LDLIBS := -lcmocka
HOST_TESTS :=
FUZZERS :=
LWIP_HOST_TESTS :=
# Image builders keep their rules beside their code.
-include $(sort $(wildcard images/*.mk))
# Host tests and fuzzers mirror the tree (docs/testing.md): the test of F/x.c
# is tests/host/F/test_x.c, its fuzzer tests/fuzz/F/fuzz_x.c; an app's are in
# apps/NAME/tests/. A test's own file is found by its name. The host.mk files
# (tests/host/**/host.mk, apps/NAME/host.mk whichever APP is built) add names
# to HOST_TESTS or FUZZERS and, for each, NAME_USES (the tree's sources it
# links, by file name: see src above), NAME_SRCS (anything else: harness files,
# generated sources, archives), NAME_LDFLAGS; a name in LWIP_HOST_TESTS is
# built over the host's lwIP. The shared groups come first: the host's lwIP
# (tests/host/lwip/), the simulated devices (tests/host/simdev/), the runtime
# over lwIP (tests/host/runtime/).
TEST_FILES := $(shell find tests/host tests/fuzz apps -name 'test_*.c' -o -name 'fuzz_*.c')
test_file = $(or $(filter %/$(1).c,$(TEST_FILES)),$(error $(1): no $(1).c in tests/ or apps/NAME/tests/))
# Names are unique: a source's file name in the tree, a test's everywhere.
dups = $(sort $(foreach n,$(1),$(if $(word 2,$(filter $(n),$(1))),$(n))))
$(if $(call dups,$(notdir $(basename $(ALL_SRCS)))),$(error two sources named $(call dups,$(notdir $(basename $(ALL_SRCS))))))
$(if $(call dups,$(notdir $(TEST_FILES))),$(error two tests named $(call dups,$(notdir $(TEST_FILES)))))
HOST_GROUPS := tests/host/lwip/host.mk tests/host/simdev/host.mk tests/host/runtime/host.mk
include $(HOST_GROUPS) $(filter-out $(HOST_GROUPS),$(sort $(shell find tests/host -name host.mk)))
-include $(sort $(wildcard apps/*/host.mk))
$(addprefix $(BUILD)/host/,$(LWIP_HOST_TESTS)): HOST_CFLAGS += $(LWIP_HOST_INC)
$(addprefix $(BUILD)/host/,$(LWIP_HOST_TESTS)): | $(LWIP_STAMP)

# Every host test and fuzzer links the one host kernel shim (hostk, with the
# real kernel/loop.c and kernel/time/timerq.c its event loop runs on) and the
# toolkit's pure part (lib/parse.c, lib/outbuf.c, lib/metrics.c: any layer
# may export to /metrics; libc stands in for lib/string.c) ahead of its own
# sources.
HOST_SHIM_SRCS := tests/host/shim/hostk.c $(call src,loop timerq parse outbuf metrics)
host_srcs = $(HOST_SHIM_SRCS) $(filter-out $(HOST_SHIM_SRCS),$(call test_file,$(1)) $(call src,$($(1)_USES)) $($(1)_SRCS))
# (Only the sources and archives go to the compiler: the .d files make every
# header a prerequisite too, and some of lwIP's and mbedTLS's refuse to be
# compiled on their own.)
define host_test_rule
$(BUILD)/host/$(1): $$(call host_srcs,$(1))
	@mkdir -p $$(dir $$@)
	@$$(if $$(Q),echo "  HOSTCC  $$@")
	$$(Q)$$(HOST_CC) $$(HOST_CFLAGS) -MF $$@.d $$(filter %.c %.a,$$(call host_srcs,$(1))) -o $$@ $$($(1)_LDFLAGS) $$(HOST_LDLIBS)
endef
$(foreach t,$(HOST_TESTS),$(eval $(call host_test_rule,$(t))))

FUZZ_CFLAGS := -g -O1 -fsanitize=fuzzer,address,undefined -Itests/host/shim -I. -Iinclude -I$(BUILD)/gen -DHOST_TEST -DFUZZ
define fuzz_rule
$(BUILD)/fuzz/$(1): $$(call host_srcs,$(1))
	@mkdir -p $$(dir $$@)
	@$$(if $$(Q),echo "  FUZZCC  $$@")
	$$(Q)$$(FUZZ_CC) $$(FUZZ_CFLAGS) $$^ -o $$@ $$($(1)_LDFLAGS)
endef
$(foreach f,$(FUZZERS),$(eval $(call fuzz_rule,$(f))))

FUZZ_RUNS ?= 20000
# fuzz_virtio_net probes a whole device per input (about 50 executions a
# second under ASan, against thousands for the parsers): its smoke run is
# FUZZ_RUNS_DEVICE, so it takes about as long as the rest together; make
# fuzz gives it FUZZ_TIME like every target.
FUZZ_RUNS_DEVICE ?= 4000
FUZZ_DEVICE := fuzz_virtio_net
FUZZ_TIME ?= 300
# The binaries run JOBS at a time, each one's output printed whole when it
# ends (a failure's lines stay together); every one runs, and any failure
# fails the target. (test_store alone takes about a minute: the longest
# start first, HOST_TESTS_FIRST, so that no one of them runs alone at the
# end while the other cores wait; each test's line gives its seconds.)
HOST_TESTS_FIRST := test_store test_virtio_net test_server test_mbedtls_config test_patches
test-host: deps-test check-docs check-layers $(addprefix $(BUILD)/host/,$(HOST_TESTS))
	$(Q)printf '%s\n' $(foreach t,$(HOST_TESTS_FIRST),$(filter $(t),$(HOST_TESTS))) $(filter-out $(HOST_TESTS_FIRST),$(HOST_TESTS)) | xargs -P $(JOBS) -I{} sh -c 's=$$(date +%s); out=$$($(BUILD)/host/{} 2>&1); rc=$$?; \
		printf "  TEST    %s (%s s)\n%s\n" {} $$(( $$(date +%s) - s )) "$$out"; [ $$rc = 0 ] || { echo "  FAIL    {} (exit $$rc)"; exit 1; }'

# Every relative link in README.md, docs/ and net/README.md resolves (a file,
# and a heading for a #fragment), docs/appliance.md's command-line table
# is the one the sources' CMDLINE_PARAMs make, and the mbedTLS pin, its
# patches and docs/https.md's advisory table agree (with the check's own
# self-test: each kind of disagreement is caught); under a second, so part
# of test-host.
check-docs:
	$(Q)$(PYTHON) tests/host/check_docs.py .
	$(Q)$(PYTHON) tools/cmdline_table.py --check docs/appliance.md
	$(Q)$(PYTHON) tools/check_mbedtls_pin.py . && $(PYTHON) tools/check_mbedtls_pin.py . --self-test >/dev/null

# Every #include points down the stack (tools/layers.py: the rule, and the
# known exceptions with the issue item that removes each); the script's
# self-test first proves it fails on planted violations. Part of test-host.
check-layers:
	$(Q)$(PYTHON) tools/layers.py --self-test
	$(Q)$(PYTHON) tools/layers.py

# Both start from the committed seeds (tests/fuzz/corpus/<target>/, an app's
# in apps/NAME/tests/corpus/<target>/, written by tests/fuzz/make_corpus.py) next to the working corpus; libFuzzer adds new
# inputs to the first directory only, so the seeds stay as committed.
# The smoke runs go JOBS at a time (each is one process on one core), the
# device fuzzer first as it is the longest; each prints its line when it
# ends, a failure with its log's last 40 lines. Every one runs; any failure
# fails the target.
fuzz-smoke: deps-test $(addprefix $(BUILD)/fuzz/,$(FUZZERS))
	$(Q)printf '%s\n' $(filter $(FUZZ_DEVICE),$(FUZZERS)) $(filter-out $(FUZZ_DEVICE),$(FUZZERS)) | \
		xargs -P $(JOBS) -I{} sh -c 'f={}; runs=$(FUZZ_RUNS); \
		case " $(FUZZ_DEVICE) " in *" $$f "*) runs=$(FUZZ_RUNS_DEVICE);; esac; \
		mkdir -p $(BUILD)/fuzz/corpus-$$f; \
		seeds=$$(ls -d tests/fuzz/corpus/$$f apps/*/tests/corpus/$$f 2>/dev/null | head -1); \
		if $(BUILD)/fuzz/$$f -runs=$$runs -seed=1 $(BUILD)/fuzz/corpus-$$f $$seeds 2>$(BUILD)/fuzz/$$f.log; \
		then echo "  FUZZ    $$f ($$runs runs)"; \
		else echo "  FUZZ    $$f ($$runs runs)"; tail -40 $(BUILD)/fuzz/$$f.log; echo "  FAIL    $$f"; exit 1; fi'

fuzz: deps-test $(addprefix $(BUILD)/fuzz/,$(FUZZERS))
	$(Q)set -e; for f in $(FUZZERS); do echo "  FUZZ    $$f ($(FUZZ_TIME) s)"; \
		mkdir -p $(BUILD)/fuzz/corpus-$$f; \
		seeds=$$(ls -d tests/fuzz/corpus/$$f apps/*/tests/corpus/$$f 2>/dev/null | head -1); \
		$(BUILD)/fuzz/$$f -max_total_time=$(FUZZ_TIME) $(BUILD)/fuzz/corpus-$$f $$seeds; done

# --durations: the ten slowest tests close each run, so a run's time can
# be attributed from its log alone.
# tools/fetch-pebble.sh: Debian forky's pebble 2.10 under $(BUILD)/pebble-forky
# (renewal information; test_acme.py's ARI test), fetched once like lwIP.
# Two pytest processes run side by side: a TCG guest keeps one core busy
# while it runs and none while it waits, so one after another they left
# the machine's second core mostly idle (make test used 0.7 of its 2 cores;
# docs/testing.md, Run times). Shard A is every file that runs make itself
# (test_tls.py builds build/tls-image/, the files importing its make() build
# there too, test_images.py runs make images and make sign in the tree), so
# no two makes ever share a build directory; shard B is every other file,
# new ones included. B prints as it goes, A's output whole once both end;
# each records its own root-only skips (rootskip.py), and either failing
# fails the target.
QEMU_SHARD_A := $(sort $(shell grep -l -e '^from test_tls import' -e '"make"' tests/qemu/test_*.py 2>/dev/null))
QEMU_PYTEST := $(PYTHON) -m pytest -q -ra --durations=10
test-qemu: deps-test $(IMAGE)
	$(Q)tools/fetch-pebble.sh $(BUILD)
	@echo "  QEMU    tests/qemu (ACME against pebble $$(dpkg-query -W -f='$${Version}' pebble 2>/dev/null || echo none), Debian 12's, and $$(cut -d' ' -f1 $(BUILD)/pebble-forky/stamp), forky's)"
	@echo "  QEMU    shard A, beside the rest (printed when both end): $(notdir $(QEMU_SHARD_A))"
	$(Q)log=$(BUILD)/test-qemu-shard-a.log; \
	$(QEMU_PYTEST) -p no:cacheprovider $(QEMU_SHARD_A) >$$log 2>&1 & a=$$!; \
	trap 'kill $$a 2>/dev/null' INT TERM; \
	$(QEMU_PYTEST) $(addprefix --ignore=,$(QEMU_SHARD_A)) tests/qemu; b=$$?; \
	wait $$a; a=$$?; echo "  QEMU    shard A ($(notdir $(QEMU_SHARD_A))):"; cat $$log; \
	[ $$a = 0 ] && [ $$b = 0 ]
# N instances behind HAProxy in a namespace (tests/fleet/fleet.py); the test
# powers one off and kills another under requests (not part of make test).
N ?= 3
.PHONY: fleet test-fleet
fleet: deps-test $(PVH)
	$(Q)$(PYTHON) tests/fleet/fleet.py --n $(N)
test-fleet: deps-test $(PVH)
	$(Q)$(PYTHON) -m pytest -q -ra -s tests/fleet

# Every app's own QEMU tests (apps/NAME/tests/test_*.py; the static site's
# are tests/qemu and tests/matrix): the app's image and PVH ELF (make
# APP=apps/NAME image elf; the ELF is one more link), then pytest on its
# tests, which boot them (apps/conftest.py).
APP_TEST_DIRS := $(sort $(dir $(wildcard apps/*/tests/test_*.py)))
.PHONY: test-apps
test-apps: deps-test
	$(Q)set -e; for t in $(APP_TEST_DIRS); do a=$${t%/tests/}; echo "  APP     $$a"; \
		$(MAKE) --no-print-directory -j$(JOBS) APP=$$a image elf; \
		$(PYTHON) -m pytest -q -ra --durations=5 $$t; done

# docs/deploy.md's libvirt path run as written (tests/deploy/: virt-install
# of the qcow2, SMBIOS configuration, virsh shutdown and start; libvirtd is
# started by the test if it is not running). Not part of make test: about a
# minute, plus libvirt's packages the first time. Needs root.
.PHONY: test-deploy
test-deploy: $(QCOW2)
	$(Q)tools/deps.sh deploy
	$(Q)$(PYTHON) -m pytest -q -ra tests/deploy

# Chromium and Firefox ESR render a site with ES modules, a WOFF2 font, a
# seekable WebM and images from the ESP of an image copy (tests/browsers/),
# over HTTP and over HTTPS (a TLS=1 image in build/tls-image/, built by the
# test as tests/qemu/test_tls.py builds it). Not part of make test: the
# browsers are ~300 MB to install (tools/deps.sh browsers); about 75 s, plus
# ~3 min the first time for the TLS image.
.PHONY: test-browsers
test-browsers: $(IMAGE)
	$(Q)tools/deps.sh browsers
	$(Q)$(PYTHON) -m pytest -q -ra tests/browsers

# tests/matrix: the appliance over a tap device in a namespace of its own,
# in every virtio-net/machine configuration, under hostile input and faults.
# Markers pick the suites: quick (part of make test), hostile, soak.
MATRIX_PYTEST := $(PYTHON) -m pytest -q -ra tests/matrix
test-matrix-quick: deps-test $(IMAGE)
	$(Q)$(MATRIX_PYTEST) --durations=5 -m quick

test-matrix: deps-test $(IMAGE)
	$(Q)$(MATRIX_PYTEST) -m "not soak and not capacity"

test-hostile: deps-test $(IMAGE)
	$(Q)$(MATRIX_PYTEST) -m hostile

soak: deps-test $(IMAGE)
	$(Q)$(MATRIX_PYTEST) -s -m soak

# 20,000 idle keep-alive connections (the HTTP table is sized from memory,
# net/port/netmem.h) from 4 addresses held 60 s at -m 256, then the whole
# HTTPS table (net/tls/tlsmem.h).
test-capacity: deps-test $(IMAGE)
	$(Q)$(MATRIX_PYTEST) -s -m capacity

# QEMU 10.0 from Debian trixie's source package, x86_64-softmmu only, built
# once and cached outside the clone (tools/qemu-current.sh says where), and
# the features QEMU 7.2 lacks proven against it (tests/matrix/
# test_qemu_current.py; part of test-matrix when that QEMU is present).
qemu-current:
	$(Q)tools/deps.sh qemu-current
	$(Q)tools/qemu-current.sh

test-qemu-current: deps-test qemu-current $(IMAGE)
	$(Q)$(MATRIX_PYTEST) -m qemu_current

# make test: every suite. The tap tests and tests/matrix need root and
# /dev/net/tun; where they are skipped the pytest run fails and so does make
# test, unless VIREO_SKIP_ROOT_TESTS=1 says a run without them is meant. The
# three pytest runs (the QEMU tests' two shards, the matrix) go ahead (-k)
# and record their root-only skips; the last line is tests/qemu/rootskip.py's
# verdict over all three.
# Everything the suites run is built first with one job per core (the
# suites themselves run one after another, test-qemu's two shards aside:
# they time QEMU boots), and each
# suite's wall time is printed ("  TIME    suite N s") so a slow run says
# where its minutes went.
ROOT_SKIPS := $(BUILD)/root-skips.txt
.PHONY: test-build
# (With the PVH ELF and the other images, images/images.mk, which test-qemu
# needs: built here JOBS at a time, not one by one at its start.)
test-build: $(addprefix $(BUILD)/host/,$(HOST_TESTS)) $(addprefix $(BUILD)/fuzz/,$(FUZZERS)) $(IMAGE) $(PVH)
test: deps-test
	$(Q)$(MAKE) --no-print-directory -j$(JOBS) test-build
	$(Q)rm -f $(ROOT_SKIPS); rc=0; \
	for t in test-host fuzz-smoke test-qemu test-matrix-quick test-apps; do s=$$(date +%s); \
		VIREO_ROOT_SKIPS=$(abspath $(ROOT_SKIPS)) $(MAKE) --no-print-directory $$t || rc=$$?; \
		echo "  TIME    $$t $$(( $$(date +%s) - s )) s"; \
		case $$t in test-host|fuzz-smoke) [ $$rc = 0 ] || exit $$rc;; esac; done; \
	$(PYTHON) tests/qemu/rootskip.py verdict $(ROOT_SKIPS) 3 $$rc

deps-test:
	$(Q)tools/deps.sh test

bench-boot: deps-test $(IMAGE)
	$(Q)tests/bench/boot.sh $(IMAGE) $(EFI)

# vireo vs. nginx on Linux through the shared harness (../shared/bench), plus
# vireo's own figures; table on stdout, JSON in build/bench/summary.json.
# BENCH_REPS (3), BENCH_DURATION (10 s), BENCH_EXTRA_REPS (2), BENCH_MEM
# (256 MiB, -m for both guests). Needs root.
bench: deps-test
	$(Q)MAKE="$(MAKE)" tests/bench/bench.sh

# A 1 MiB body side by side: vireo built with /1m.bin (build/bench-1m/) and
# the nginx peer with /www/1m.bin added to its initramfs, through the shared
# harness with /1m.bin as its large file (tests/bench/bench_1m.sh).
bench-1m: deps-test
	$(Q)MAKE="$(MAKE)" tests/bench/bench_1m.sh

# HTTPS side by side: vireo (make TLS=1, built into build/bench-tls/) and the
# nginx peer serving HTTPS, through the shared harness's run.sh --tls.
bench-tls: deps-test
	$(Q)MAKE="$(MAKE)" tests/bench/bench_tls.sh

# What a TLS handshake costs the server natively (tests/bench/hs_cost.c): its
# ECDHE and signature with the image's mbedTLS configuration, built for the
# host twice: every file -O2 with frame pointers (the baseline), and with the
# image's flags per file (net/tls/mbedtls.mk: MBEDTLS_COLD $(COLD_OPT), no frame
# pointers; -mgeneral-regs-only for both); tests/bench/hs_cost_cmp.sh runs
# them alternately and prints both and the ratio. runtime/http/hsgate.h's
# defaults come from it. About two minutes to build (all of mbedTLS twice),
# 10 s to run.
HS_CFLAGS = -std=gnu11 -w -I. -Iinclude -Itests/host/shim -I$(MBEDTLS_SRCDIR)/include -I$(MBEDTLS_SRCDIR)/library \
	'-DMBEDTLS_CONFIG_FILE="net/tls/mbedtls_config.h"' -DHOST_TEST -DTLS_FIX_DIR='""'
HS_LIB_CFLAGS = $(HS_CFLAGS) -mgeneral-regs-only -fno-asynchronous-unwind-tables
bench-hs-cost: $(MBEDTLS_STAMP)
	@rm -rf $(BUILD)/bench/hs-o2 $(BUILD)/bench/hs-image
	@mkdir -p $(BUILD)/bench/hs-o2 $(BUILD)/bench/hs-image
	$(Q)for f in $(MBEDTLS_ALT_SRCS) $(addprefix $(MBEDTLS_SRCDIR)/library/,$(MBEDTLS_SRCS)); do \
		b=$$(basename $$f .c); os=; case " $(MBEDTLS_COLD) " in *" $$b "*) os='$(COLD_OPT)';; esac; \
		$(HOST_CC) $(HS_LIB_CFLAGS) -O2 -fno-omit-frame-pointer -c $$f -o $(BUILD)/bench/hs-o2/$$b.o & \
		$(HOST_CC) $(HS_LIB_CFLAGS) -O2 $$os -fomit-frame-pointer -momit-leaf-frame-pointer -c $$f \
			-o $(BUILD)/bench/hs-image/$$b.o || exit 1; wait $$! || exit 1; done
	$(Q)for v in o2 image; do $(HOST_CC) $(HS_CFLAGS) -O2 tests/bench/hs_cost.c $(TLS_HOST) \
		$(BUILD)/bench/hs-$$v/*.o -o $(BUILD)/bench/hs_cost_$$v || exit 1; done
	$(Q)tests/bench/hs_cost_cmp.sh $(BUILD)/bench/hs_cost_o2 $(BUILD)/bench/hs_cost_image

# apps/kv: GET and PUT req/s at 1 and 32 connections (wrk over a tap in a
# namespace, one boot of make APP=apps/kv; tests/bench/kv.py). BENCH_DURATION
# (5 s per figure), BENCH_MEM (256). Needs root.
bench-kv: deps-test
	$(Q)$(MAKE) --no-print-directory APP=apps/kv image
	$(Q)$(PYTHON) tests/bench/kv.py --image $(BUILD)/apps/kv/vireo.img \
		--duration $(or $(BENCH_DURATION),5) --mem $(or $(BENCH_MEM),256)

# apps/kv killed with SIGKILL under PUT/DELETE load from several clients,
# VIREO_CRASH_TRIALS times (200) over one data disk, every key checked
# against a model of what the clients were told after each reboot, the
# recovery lines tallied (apps/kv/tests/crash_kill9.py; docs/storage.md).
# Boots the PVH ELF (about 1 s to serving): 8-12 minutes. Not part of
# make test (test_store_kill9.py's two trials are).
.PHONY: test-crash
test-crash: deps-test
	$(Q)$(MAKE) --no-print-directory APP=apps/kv elf
	$(Q)$(PYTHON) apps/kv/tests/crash_kill9.py --elf $(BUILD)/apps/kv/vireo.elf \
		--trials $(or $(VIREO_CRASH_TRIALS),200) $(if $(VIREO_CRASH_SEED),--seed $(VIREO_CRASH_SEED))

# Upload MB/s through TCP echo with receive TSO on and off (vnet.guest_tso),
# over a tap in a namespace; BENCH_REPS uploads (3) of BENCH_MIB MiB (16)
# per mode, each checked byte for byte; BENCH_MEM (256). Needs root.
bench-upload: deps-test $(IMAGE)
	$(Q)$(PYTHON) tests/bench/upload.py --reps $(or $(BENCH_REPS),3) --mib $(or $(BENCH_MIB),16) \
		--mem $(or $(BENCH_MEM),256)

# Serving with the NIC behind -device intel-iommu (iommu_platform=on,
# translation on, asserted from the log) in iommu=permissive and
# iommu=strict against no IOMMU, booted alternately BENCH_REPS times each
# (2); wrk BENCH_DURATION s (5) per figure: 612 B req/s at c1 and c32,
# 64 KiB MB/s at c32; medians and ratios.
# BENCH_MEM (256). Needs root (tests/bench/iommu.py).
bench-iommu: deps-test $(IMAGE)
	$(Q)$(PYTHON) tests/bench/iommu.py --reps $(or $(BENCH_REPS),2) --seconds $(or $(BENCH_DURATION),5) \
		--mem $(or $(BENCH_MEM),256)

# The device ceiling: frames/s the frame reflector (vnet.echo) sends back
# at 60, 590 and 1514 B, offered at rising rates from AF_PACKET on a tap
# (tests/bench/echo.py, tests/bench/echoflood.c); BENCH_DURATION s per step
# (3), BENCH_MEM (256). Table on stdout, JSON in build/bench/echo.json.
# About 1.5 minutes; needs root.
.PHONY: bench-echo
bench-echo: deps-test $(IMAGE)
	$(Q)$(PYTHON) tests/bench/echo.py --seconds $(or $(BENCH_DURATION),3) --mem $(or $(BENCH_MEM),256)

# BENCH_MIGRATIONS (5) live migrations back and forth between two QEMUs
# under a client load (tests/matrix/migrlib.py, as test_migration.py):
# downtime and total time min/median/max, failed requests.
# BENCH_MIGRATION_OPTS: --packed, --iommu. Needs root (tests/bench/migration.py).
bench-migration: deps-test $(IMAGE)
	$(Q)$(PYTHON) tests/bench/migration.py --count $(or $(BENCH_MIGRATIONS),5) $(BENCH_MIGRATION_OPTS)

# apps/dns against NSD and Knot DNS on Linux in the same QEMU, the same zone
# and clients: make APP=apps/dns image, the Linux peers (tests/bench/peer/
# build.sh nsd knot, the first time), then tests/bench/dns_bench.py: one
# query at a time and dnsperf with 32 in flight, BENCH_DURATION s each (5),
# BENCH_REPS rounds (1), -m BENCH_MEM (256); rate limiting off. Needs root.
.PHONY: bench-dns bench-peers
bench-dns: deps-test
	$(Q)$(MAKE) --no-print-directory APP=apps/dns image
	$(Q)$(PYTHON) tests/bench/dns_bench.py $(BUILD)/apps/dns/vireo.img --seconds $(or $(BENCH_DURATION),5) \
		--reps $(or $(BENCH_REPS),1) --mem $(or $(BENCH_MEM),256)
# Issue 31's figures: apps/kv's durable PUT/s (1 KiB values) and GET/s at 1
# and 32 clients with p50/p99 against Redis 7 (appendfsync always) and etcd
# 3.4 on Linux (the peers, built the first time), each booted with -kernel
# in the same QEMU, -m BENCH_MEM (256), the same data disk options
# (cache=none, an image in build/bench/store/); first the bare cost of a
# flush on this machine (tests/bench/store.py; docs/storage.md "Figures").
# BENCH_DURATION s a figure (10). About 4 minutes (and 2 to build the peers
# the first time). Needs root (the peers' apt).
.PHONY: bench-store
bench-store: deps-test
	$(Q)$(MAKE) --no-print-directory APP=apps/kv elf
	$(Q)for p in redis etcd; do [ -r $(BUILD)/bench/peer-$$p/initrd.img ] || tests/bench/peer/build.sh $$p || exit 1; done
	$(Q)$(PYTHON) tests/bench/store.py --elf $(BUILD)/apps/kv/vireo.elf --duration $(or $(BENCH_DURATION),10) \
		--mem $(or $(BENCH_MEM),256)
# Issue 31's recovery figure: for logs of BENCH_LOG_MIB (64 256 512 1024)
# MiB, made on the host by the store's own code (tests/bench/store_log.c,
# built like a host test but at -O2), apps/kv's PVH ELF boots on the disk
# (-m BENCH_MEM, cache=none): recovery time and bytes read from its console
# line, MiB/s, s per 100 MiB, time to the first answered GET, and every key
# read back and checked (tests/bench/recovery.py; docs/storage.md
# "Recovery time"). About a minute, and up to 1.2 GiB of disk at a time in
# build/bench/recovery/ (each image is removed after its boot).
STORE_LOG_SRCS := tests/bench/store_log.c $(HOST_SHIM_SRCS) \
	$(call src,store store_compact store_open blk index logfmt crc32c fmt)
$(BUILD)/bench/store_log: $(STORE_LOG_SRCS)
	@mkdir -p $(dir $@)
	@$(if $(Q),echo "  HOSTCC  $@")
	$(Q)$(HOST_CC) -std=gnu11 -O2 -g -Wall -Wextra -Werror -Wno-unused-parameter -Itests/host/shim -I. \
		-Iinclude -I$(BUILD)/gen -DHOST_TEST $(STORE_LOG_SRCS) -o $@
.PHONY: bench-recovery
bench-recovery: deps-test $(BUILD)/bench/store_log
	$(Q)$(MAKE) --no-print-directory APP=apps/kv elf
	$(Q)$(PYTHON) tests/bench/recovery.py --elf $(BUILD)/apps/kv/vireo.elf --tool $(BUILD)/bench/store_log \
		--mem $(or $(BENCH_MEM),256) --sizes "$(or $(BENCH_LOG_MIB),64 256 512 1024)"
# Issue 32's figures: apps/proxy (its PVH ELF) against nginx (proxy_pass,
# upstream keep-alive) and HAProxy (http-reuse always) on Linux (the peers,
# built the first time), each booted with -kernel in the same QEMU, -m
# BENCH_MEM (256), one CPU, on a tap in one namespace, all in front of one
# native nginx there: req/s and p99 at c1/c32 for 612 B and 64 KiB
# (tests/bench/proxy.py), BENCH_DURATION s a figure (5). About 3 minutes.
# Needs root.
.PHONY: bench-proxy
bench-proxy: deps-test
	$(Q)$(MAKE) --no-print-directory APP=apps/proxy elf
	$(Q)for p in nginx-proxy haproxy; do [ -r $(BUILD)/bench/peer-$$p/initrd.img ] || tests/bench/peer/build.sh $$p || exit 1; done
	$(Q)$(PYTHON) tests/bench/proxy.py --elf $(BUILD)/apps/proxy/vireo.elf --duration $(or $(BENCH_DURATION),5) \
		--mem $(or $(BENCH_MEM),256)
# Issue 33's figure: from QEMU's start to the first HTTPS answer verified
# against pebble's root with a certificate the appliance got for itself:
# vireo (a TLS=1 PVH ELF built into build/bench-acme/build with pebble's API
# root baked in, TLS_CA=) against Caddy (the peer, built the first time),
# each booted with -kernel in the same QEMU on a tap in one namespace,
# BENCH_REPS rounds (3), each against a fresh pebble with
# PEBBLE_VA_NOSLEEP=1 (tests/bench/acme.py). About 2 minutes once built.
# Needs root.
BENCH_ACME := $(BUILD)/bench-acme
.PHONY: bench-acme
bench-acme: deps-test
	$(Q)$(PYTHON) tests/bench/acme.py --ca-dir $(BENCH_ACME)/ca --make-ca
	$(Q)mkdir -p $(BENCH_ACME)/build && for t in lwip-src mbedtls-src apt; do \
		[ -e $(BENCH_ACME)/build/$$t ] || [ ! -d $(BUILD)/$$t ] || cp -a $(BUILD)/$$t $(BENCH_ACME)/build/; done
	$(Q)$(MAKE) --no-print-directory TLS=1 TLS_CA=$(BENCH_ACME)/ca/ca.pem BUILD=$(BENCH_ACME)/build elf
	$(Q)[ -r $(BUILD)/bench/peer-caddy/initrd.img ] || tests/bench/peer/build.sh caddy
	$(Q)$(PYTHON) tests/bench/acme.py --ca-dir $(BENCH_ACME)/ca --elf $(BENCH_ACME)/build/vireo.elf \
		--rounds $(or $(BENCH_REPS),3) --mem $(or $(BENCH_MEM),256)
# Every Linux peer tests/bench/peer/ has a fragment for (BENCH_PEERS, default
# all), built again into build/bench/peer-NAME/.
BENCH_PEERS ?= $(patsubst tests/bench/peer/%.sh,%,$(filter-out tests/bench/peer/build.sh,$(wildcard tests/bench/peer/*.sh)))
bench-peers:
	$(Q)tests/bench/peer/build.sh $(BENCH_PEERS)

# Each attack of issue 13 (and issue 29's handshake flood) against vireo and
# against the nginx peer (booted as `make bench` boots both), a legitimate
# client before, during and after: success rate and latency during the
# attack, time to full service after it; table on
# stdout, JSON in build/bench/attacks.json (docs/attacks.md). BENCH_MEM (256
# MiB, -m of both guests), BENCH_HARNESS (../shared/bench). Needs root.
bench-attacks: deps-test $(EFI)
	$(Q)$(PYTHON) tests/bench/attacks.py --mem $(or $(BENCH_MEM),256) \
		$(if $(BENCH_HARNESS),--harness $(BENCH_HARNESS))

clean:
	rm -rf $(BUILD)

# The docs' command-line tables (the image's keys, the apps'), from the
# registrations in the sources.
params:
	$(Q)$(PYTHON) tools/cmdline_table.py

help:
	@echo "vireo $(VERSION) targets:"
	@echo "  make            build $(EFI) (UEFI application) and $(PVH), HTTP and HTTPS, with the store"
	@echo "                  (compressed; fails over its size budget: 640 KiB, 360 KiB with TLS=0, and the"
	@echo "                  kernel's PE over 704 KiB, 360 KiB with TLS=0; IMAGE_BUDGET=0, KERNEL_BUDGET=0 skip;"
	@echo "                  ZIMAGE=0 ships the kernel's PE itself)"
	@echo "  make elf        build $(PVH) (PVH ELF: qemu-system-x86_64 -kernel, no firmware)"
	@echo "  make run-microvm  the appliance on QEMU microvm (PVH, virtio-mmio, no PCI/ACPI);"
	@echo "                  same PORT=, CMDLINE=, QEMU_OPTS=, MEM= as make run"
	@echo "  make image      build $(IMAGE) (GPT disk, ESP with EFI/BOOT/BOOTX64.EFI)"
	@echo "  make TLS=0      build without HTTPS (no mbedTLS); apps other than the site: TLS=1 for it"
	@echo "  make STORAGE=0  the site without the store (by default keys, certificates and ACME state are"
	@echo "                  kept on the data disk across restarts: docs/https.md)"
	@echo "  make TLS_CERT=chain.pem TLS_KEY=key.pem  HTTPS (mbedTLS 3.6, default) with this certificate/key"
	@echo "                  (else one generated at boot, for tls.names=; EFI/vireo/tls/cert.pem and"
	@echo "                  key.pem on the ESP win over both); https= port 443; TLS_CA=bundle.pem: the"
	@echo "                  TLS clients' trust anchors (EFI/vireo/tls/ca.pem on the ESP wins; none: refused)"
	@echo "                  (docs/https.md). make tls-check: what mbedTLS needs, its size"
	@echo "  make run        install QEMU/OVMF if missing, boot the appliance; http://localhost:8080/"
	@echo "                  (PORT=, CMDLINE=, QEMU_OPTS=, MEM=); with TLS also https://localhost:8443/ (TLS_PORT=);"
	@echo "                  DISK=file attaches a data disk (serial vireo-data; docs/storage.md); an image"
	@echo "                  with the store gets build/data.img (made blank once, then kept) unless DISK=none;"
	@echo "                  CFG=file puts it on the image's ESP as EFI/vireo/vireo.cfg (docs/appliance.md)"
	@echo "  make disk       a blank data disk, build/data.img or DISK= (DISK_SIZE=, default 64M); kept if it exists"
	@echo "  APP=apps/NAME   build (and run) that app instead of the static site (apps/site): any"
	@echo "                  target above, outputs in $(BUILD)/apps/NAME/; apps: $(notdir $(patsubst %/,%,$(wildcard apps/*/)))"
	@echo "                  (docs/apps.md; copy apps/template to start one)"
	@echo "  make test       install test deps if missing; host unit tests (ASan/UBSan),"
	@echo "                  fuzz smoke ($(FUZZ_RUNS) runs each), QEMU tests under OVMF, the"
	@echo "                  quick matrix subset, the apps (~26 min). Fails if root-only tests (tap, matrix)"
	@echo "                  were skipped (not root, no /dev/net/tun) unless VIREO_SKIP_ROOT_TESTS=1;"
	@echo "                  its last line says which"
	@echo "  make images     every image: GRUB disk, ISO, qcow2, GCE/Azure/AWS files (images/images.mk)"
	@echo "  make sign KEY=key.pem CERT=cert.pem   Secure Boot signed build/vireo-signed.img"
	@echo "  make test-host  host unit tests only (and make check-docs, check-layers)"
	@echo "  make check-docs every relative link in README.md, docs/, net/README.md resolves;"
	@echo "                  docs/appliance.md's command-line table matches the sources;"
	@echo "                  the mbedTLS pin, its patches and docs/https.md's advisory table agree"
	@echo "  make check-layers  every #include points down the stack (tools/layers.py; part of test-host)"
	@echo "  make test-qemu  QEMU tests only"
	@echo "  make test-apps  each app's image and its own QEMU tests (apps/NAME/tests/; part of make test)"
	@echo "  make fleet N=3  N instances behind HAProxy in a network namespace (health checks"
	@echo "                  on /healthz); prints the front address; Ctrl-C stops it"
	@echo "  make test-fleet 3 instances under requests through HAProxy: one powered off, one"
	@echo "                  killed, no request lost (~30 s; needs root; not in make test)"
	@echo "  make test-crash apps/kv killed with SIGKILL under PUT/DELETE load from 4 clients, 200 times"
	@echo "                  (VIREO_CRASH_TRIALS=), every acknowledged write checked after each reboot,"
	@echo "                  recovery tallied (8-12 min; not in make test; docs/storage.md)"
	@echo "  make test-deploy  docs/deploy.md's libvirt path: virt-install of the qcow2, SMBIOS"
	@echo "                  configuration, virsh shutdown and start (~1 min; root; not in make test)"
	@echo "  make test-browsers  Chromium and Firefox ESR headless render an ESP site with ES"
	@echo "                  modules, a WOFF2 font, a seekable WebM and images, over HTTP and"
	@echo "                  HTTPS (~75 s; the first time also installs the browsers, ~300 MB,"
	@echo "                  and builds the TLS image, ~3 min; not in make test)"
	@echo "  make test-matrix  the appliance in 25 virtio-net/machine configurations, TSO on"
	@echo "                  a wire and off, uploads with receive TSO on and off, DMA through VT-d,"
	@echo "                  live migration under load, the frame reflector under overload in 6"
	@echo "                  configurations, plus test-hostile (~14-16 min; needs root for a"
	@echo "                  netns with a tap)"
	@echo "  make test-matrix-quick  4 of those configurations, ab -k -c 32 on 3 boots,"
	@echo "                  TSO on a wire, uploads with receive TSO, a VT-d fault and recovery,"
	@echo "                  live migration (split, packed, the virtio.features= lock-down pair)"
	@echo "                  the reflector under overload (part of make test, ~4-5 min)"
	@echo "  make qemu-current  build QEMU 10.0 (Debian trixie's source, x86_64-softmmu only) once,"
	@echo "                  cached outside the clone (tools/qemu-current.sh --path prints where)"
	@echo "  make test-qemu-current  IN_ORDER (split, packed; net, rng, console) against QEMU 10.0's"
	@echo "                  devices (builds it first; needs root; not in make test)"
	@echo "  make test-hostile  malformed frames, SYN flood, receive-memory pinning, hostile"
	@echo "                  HTTP clients, link down/up and device reset under load, TIME_WAIT"
	@echo "                  reuse, ab -k -c 32 (~6 min when timed; see docs/testing.md)"
	@echo "  make soak       100,000 keep-alive requests at 64 connections, no memory growth"
	@echo "  make test-capacity  20,000 idle HTTP keep-alive connections, then the whole HTTPS table"
	@echo "                  of idle keep-alive connections from 4 addresses held 60 s (root)"
	@echo "  make fuzz-smoke every libFuzzer target for FUZZ_RUNS=$(FUZZ_RUNS) runs (part of make test)"
	@echo "  make fuzz       libFuzzer targets, FUZZ_TIME=$(FUZZ_TIME) s each"
	@echo "  make lwip-fetch, make lwip-check   fetch lwIP only; link check and sizes (net/README.md)"
	@echo "  make bench-pvh  QEMU start -> first HTTP 200: OVMF vs -kernel (q35, pc, microvm); then (root)"
	@echo "                  vireo's ELF vs the nginx peer booted with -kernel, q35 and microvm"
	@echo "  make bench-boot EFI size, efi_main->kernel ready, idle host CPU"
	@echo "  make bench      vireo vs. nginx on Linux (shared harness, TCG, tap): table + build/bench/summary.json"
	@echo "                  (BENCH_REPS=3 BENCH_DURATION=10 BENCH_EXTRA_REPS=2 BENCH_MEM=256, -m of both guests;"
	@echo "                  about 20 min; needs root)"
	@echo "  make bench-kv   apps/kv: GET/PUT req/s at c1 and c32 with wrk (BENCH_DURATION=5, needs root)"
	@echo "  make bench-tls  HTTPS: vireo (TLS=1) vs nginx serving HTTPS, shared harness --tls:"
	@echo "                  https req/s c1/c32, 64 KiB MB/s, handshakes/s (BENCH_REPS=1"
	@echo "                  BENCH_DURATION=5 BENCH_MEM=256; about 6 min; needs root)"
	@echo "  make bench-hs-cost  a TLS handshake's server crypto natively (ECDHE, signature),"
	@echo "                  vireo's mbedTLS configuration, the image's per-file flags against -O2"
	@echo "                  everywhere, with the ratio (about two minutes to build)"
	@echo "  make bench-1m   1 MiB body: vireo (APP_EXTRA with 1m.bin) vs nginx with /www/1m.bin"
	@echo "                  added, shared harness: 612 B req/s and 1 MiB MB/s at c1/c32"
	@echo "                  (BENCH_REPS=1 BENCH_DURATION=5 BENCH_MEM=256; needs root)"
	@echo "  make bench-upload  upload MB/s through TCP echo, receive TSO on and off (tap;"
	@echo "                  BENCH_REPS=3 BENCH_MIB=16 BENCH_MEM=256; about 2 min; needs root)"
	@echo "  make bench-dns  apps/dns vs NSD and Knot on Linux in the same QEMU: queries/s and p99, 1 and"
	@echo "                  32 in flight (ping-pong client, dnsperf; BENCH_DURATION=5 BENCH_REPS=1"
	@echo "                  BENCH_MEM=256; about 3 min, more the first time: the peers; needs root)"
	@echo "  make bench-proxy  apps/proxy vs nginx proxy_pass and HAProxy on Linux, one native nginx"
	@echo "                  behind each: req/s and p99 at c1/c32, 612 B and 64 KiB (BENCH_DURATION=5; ~3 min; root)"
	@echo "  make bench-acme  QEMU start -> first HTTPS answer verified with a certificate it got from"
	@echo "                  pebble (ACME): vireo (TLS=1 PVH) vs Caddy on Linux (BENCH_REPS=3; ~2 min; root)"
	@echo "  make bench-store  apps/kv on its data disk vs Redis 7 (appendfsync always) and etcd 3.4:"
	@echo "                  durable PUT/s (1 KiB) and GET/s at c1 and c32 with p50/p99, same QEMU and"
	@echo "                  disk options (cache=none), after the bare flush cost (BENCH_DURATION=10"
	@echo "                  BENCH_MEM=256; about 4 min; root for the peers' packages; docs/storage.md)"
	@echo "  make bench-recovery  apps/kv's store: recovery time for logs of 64, 256, 512 and 1024 MiB made"
	@echo "                  on the host by the store's own code, every key checked after each boot"
	@echo "                  (BENCH_LOG_MIB=\"64 256 512 1024\" BENCH_MEM=256; about 1 min; docs/storage.md)"
	@echo "  make bench-peers  the Linux benchmark peers (tests/bench/peer/build.sh: nsd, knot, redis, etcd)"
	@echo "  make bench-iommu  req/s (612 B c1, c32) and MB/s (64 KiB c32) with the NIC's DMA translated"
	@echo "                  by intel-iommu (iommu=strict, permissive) vs no IOMMU, alternated"
	@echo "                  (BENCH_REPS=2 BENCH_DURATION=5 BENCH_MEM=256; about 3 min; needs root)"
	@echo "  make bench-echo  the device ceiling: frames/s vnet.echo reflects at 60, 590, 1514 B,"
	@echo "                  offered at rising rates over a tap (BENCH_DURATION=3 BENCH_MEM=256;"
	@echo "                  about 1.5 min; needs root)"
	@echo "  make bench-migration  BENCH_MIGRATIONS=5 live migrations under load: downtime, total time,"
	@echo "                  failed requests (BENCH_MIGRATION_OPTS=--packed/--iommu; needs root)"
	@echo "  make bench-attacks  SYN flood, out-of-order pinning, fragment trains, slot hog, orphan"
	@echo "                  flood, TLS handshake flood from one /24 against vireo and the nginx peer:"
	@echo "                  legitimate success % and latency during each attack, time to full service"
	@echo "                  after it, handshakes/s; table + build/bench/attacks.json"
	@echo "                  (BENCH_MEM=256 BENCH_HARNESS=../shared/bench; about 18 min; needs root)"
	@echo "  make params     the command-line tables (Markdown) from the key registrations in"
	@echo "                  the sources: the image's, then every app's (tools/cmdline_table.py;"
	@echo "                  the shell's params prints the image's keys the same)"
	@echo "  make clean      remove $(BUILD)/"
	@echo "  V=1             show commands"

# A source or header named only by a stale dependency file (it has moved or
# gone) is no reason to stop: the rules above compile the sources they list,
# never what a .d file adds, and a listed file that is missing still fails
# in the compiler.
# (Built-in rules are off: with them, a missing apps/NAME/app.mk would be
# "made" from an app.mk.c through this rule.)
.SUFFIXES:
MAKEFLAGS += --no-builtin-rules
%.c %.h %.S:
	@:

# (Not searched: the fetched source trees, build/*-src (mbedTLS has a
# ChangeLog.d directory), and tests/qemu/test_tls.py's build/tls-image
# below the default build; -mindepth 1 so that build's own files are still
# read when it is $(BUILD): pruning its root left every header change
# unseen there, and an image of stale objects with mismatched layouts.)
-include $(shell find $(BUILD) -mindepth 1 \( -name '*-src' -o -name tls-image \) -prune -o -name '*.d' -type f -print 2>/dev/null)
