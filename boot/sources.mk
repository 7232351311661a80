# boot/: the UEFI entry (efi_start, efi_main, the ESP loader esp: vireo.efi only), the PVH entry
# (pvh_*: vireo.elf only) and what both use (RELR relocation, fw_cfg).
# HOT_SRCS are built -O2, COLD_SRCS -Oz (the Makefile's "Hot and cold"); each
# file is named once, here.
COLD_SRCS += boot/efi_start.c boot/relr.c boot/efi_main.c boot/esp.c boot/fwcfg.c boot/iso9660.c boot/smbios.c boot/seed.c
EFI_ONLY := efi_start efi_main esp iso9660 smbios seed
PVH_SRCS := boot/pvh_entry.S boot/pvh.c boot/pvh_info.c boot/cmos_rtc.c
# The compressed UEFI image's stub (make ZIMAGE=1, the default): its own small
# PE around the kernel's, with efi_start.c and relr.c (Makefile, "Compressed
# image"); in no kernel image.
ZSTUB_SRCS := boot/zstub.c boot/lz.c boot/zpayload.S
