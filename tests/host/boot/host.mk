# boot/: the PVH start info (pvh_info.c), the CMOS RTC's decoding (cmos_rtc.c), the UEFI image's RELR
# self-relocation (relr.c), the compressed image's decoder (lz.c) and
# encoder (tools/zpack.c), and the seed readers: ISO 9660 (iso9660.c,
# against volumes the real tools make: iso_fixtures.sh) and SMBIOS (smbios.c).
HOST_TESTS += test_pvh_info test_relr test_lz test_iso9660 test_smbios test_cmos_rtc
test_pvh_info_USES := pvh_info
test_relr_USES := relr
test_lz_USES := lz
test_lz_SRCS := tools/zpack.c
$(BUILD)/host/test_lz: HOST_CFLAGS += -DZPACK_NO_MAIN
test_iso9660_USES := iso9660
test_smbios_USES := smbios
test_cmos_rtc_USES := cmos_rtc wallclock
ISO_FIXTURES := $(BUILD)/host/iso-fixtures
$(ISO_FIXTURES)/stamp: tests/host/boot/iso_fixtures.sh
	@echo "  ISO     $(ISO_FIXTURES)/ (genisoimage, xorriso)"
	$(Q)tests/host/boot/iso_fixtures.sh $(ISO_FIXTURES)
$(BUILD)/host/test_iso9660: $(ISO_FIXTURES)/stamp
$(BUILD)/host/test_iso9660: HOST_CFLAGS += -DISO_FIXTURES='"$(abspath $(ISO_FIXTURES))"'
FUZZERS += fuzz_iso9660
fuzz_iso9660_USES := iso9660
FUZZERS += fuzz_smbios
fuzz_smbios_USES := smbios
