/* The ESP loader: the files and directories kernel/boot_info.h's BOOT_FILES
 * names, read before the firmware hands over. */
#ifndef VIREO_ESP_H
#define VIREO_ESP_H

#include <efi.h>

#include "kernel/boot_info.h"

/* Reads every entry of BOOT_FILES (the TLS ones only in a make TLS=1
 * build) from the file system of device, the volume vireo was loaded from,
 * into bi->files[]: each whole into EfiLoaderData pages of its own, or
 * refused (over its cap, and for a directory over its dir_max files
 * or with a bad name or path; unreadable; no memory) with nothing kept.
 * Bounds: at most cap bytes read per entry (plus, for a directory, its
 * dir_max-entry table; both scale with memory: boot_dir_caps), BOOT_DIR_DEPTH levels of recursion. */
void esp_load(EFI_BOOT_SERVICES *bs, EFI_HANDLE device, struct boot_info *bi);

/* Reads all of fh into buf[room]: the bytes read, *s EFI_SUCCESS; or, when
 * the file holds more than room (or firmware reported more than it was
 * asked for), EFI_BAD_BUFFER_SIZE (boot/seed.c reads a FAT seed with it). */
u64 esp_read(EFI_FILE_HANDLE fh, u8 *buf, u64 room, EFI_STATUS *s);

/* s into dst[n], cut to n - 1 bytes and NUL-terminated (boot/'s strings). */
void esp_copy_str(char *dst, size_t n, const char *s);

#endif
