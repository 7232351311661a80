/* SMBIOS type 11 (OEM strings) as a virtual machine manager sets them
 * (QEMU's -smbios type=11,value=..., libvirt's <oemStrings>), read for the
 * credentials systemd's convention names (smbios-type-11(7)):
 *
 *	io.systemd.credential:vireo.cmdline=http=8080 ip=10.0.0.5/24
 *	io.systemd.credential.binary:vireo.cmdline=aHR0cD04MDgw	(Base64)
 *
 * Pure (host-tested, fuzzed); boot/efi_main.c finds the entry point in the
 * firmware's configuration table and hands the table to smbios_collect().
 */
#ifndef VIREO_SMBIOS_H
#define VIREO_SMBIOS_H

#include "kernel/boot_info.h"
#include "lib/types.h"

#define SMBIOS_TABLE_MAX (64u * 1024)	/* more is not read (QEMU's are under 1 KiB) */
#define SMBIOS_CRED "io.systemd.credential:"
#define SMBIOS_CRED_BINARY "io.systemd.credential.binary:"
#define SMBIOS_CRED_NAME "vireo.cmdline"

/* The structure table an entry point names: "_SM3_" (SMBIOS 3, 64-bit
 * address, the table's maximum size) or "_SM_" with its "_DMI_" part
 * (2.1). ep holds avail bytes. 0 with *addr and *len (cut to
 * SMBIOS_TABLE_MAX), or -EINVAL (no anchor, a bad length or checksum). */
int smbios_entry(const u8 *ep, size_t avail, u64 *addr, u32 *len);

/* Walks the structure table (len bytes) and fills out: every type 11
 * string counted, each vireo.cmdline credential's value appended to
 * out->cmdline (words separated by a space; Base64 decoded for the binary
 * form), others counted. Stops at the end-of-table structure (type 127),
 * the end of len, or damage (out->damaged). Reads nothing outside table. */
void smbios_collect(const u8 *table, size_t len, struct boot_smbios *out);

/* Base64 (RFC 4648, padding optional, no whitespace) of in[n] into
 * out[room]: the decoded length, or -EINVAL (a character outside the
 * alphabet, a bad length or padding), -EOVERFLOW (room too small). */
int smbios_base64(const char *in, size_t n, u8 *out, size_t room);

#endif
