/*
 * Per-instance seeds (boot/seed.h): found by their volume label on any
 * block device or file system the firmware drives, read before
 * ExitBootServices. ISO 9660 goes through EFI_DISK_IO (OVMF has no ISO 9660
 * file system driver) and boot/iso9660.c; FAT through the simple file system
 * protocol, as the ESP loader reads the ESP. The first seed found (block
 * devices first, in handle order) is read; others are only counted.
 */
#include <efi.h>

#include "boot/esp.h"
#include "boot/iso9660.h"
#include "boot/seed.h"
#include "lib/string.h"

static EFI_GUID blockio_guid = EFI_BLOCK_IO_PROTOCOL_GUID;
static EFI_GUID diskio_guid = EFI_DISK_IO_PROTOCOL_GUID;
static EFI_GUID sfs_guid = EFI_SIMPLE_FILE_SYSTEM_PROTOCOL_GUID;
static EFI_GUID label_guid = EFI_FILE_SYSTEM_VOLUME_LABEL_ID;
static EFI_GUID pciio_guid = EFI_PCI_IO_PROTOCOL_GUID;

/* Where each kind keeps its files (no pointers: nothing to relocate). */
static const struct seed_layout {
	char label[9];
	u8 kind;
	char user[32], meta[40], network[40], vendor[40];
} seed_layouts[] = {
	{ "cidata", BOOT_SEED_NOCLOUD, "user-data", "meta-data", "network-config", "vendor-data" },
	{ "config-2", BOOT_SEED_CONFIG_DRIVE, "openstack/latest/user_data", "openstack/latest/meta_data.json",
	  "openstack/latest/network_data.json", "openstack/latest/vendor_data.json" },
};

/* A seed's volume: ISO 9660 (iso) or FAT (root). */
struct seed_src {
	struct iso_vol *iso;
	EFI_FILE_HANDLE root;
};

struct seed_disk {
	EFI_DISK_IO *dio;
	u32 media;
};

static int seed_disk_read(void *ctx, u32 lba, u8 *buf)
{
	struct seed_disk *d = ctx;

	return d->dio->ReadDisk(d->dio, d->media, (u64)lba * ISO_SECTOR, ISO_SECTOR, buf) == EFI_SUCCESS ? 0 : -EIO;
}

static const struct seed_layout *seed_layout_of(const char *label)
{
	for (size_t k = 0; k < ARRAY_SIZE(seed_layouts); k++) {
		const char *want = seed_layouts[k].label;
		size_t i;

		for (i = 0; want[i]; i++) {
			char c = label[i] >= 'A' && label[i] <= 'Z' ? (char)(label[i] + 32) : label[i];

			if (c != want[i])
				break;
		}
		if (!want[i] && !label[i])
			return &seed_layouts[k];
	}
	return NULL;
}

/* "a/b" as the firmware's "\a\b", into out[n]; false if it does not fit. */
static bool seed_path16(const char *path, CHAR16 *out, size_t n)
{
	size_t i;

	out[0] = '\\';
	for (i = 0; path[i]; i++) {
		if (i + 2 >= n)
			return false;
		out[i + 1] = path[i] == '/' ? '\\' : (CHAR16)path[i];
	}
	out[i + 1] = 0;
	return true;
}

static EFI_FILE_HANDLE seed_open(struct seed_src *src, const char *path, EFI_STATUS *s)
{
	CHAR16 p16[48];
	EFI_FILE_HANDLE fh = NULL;

	*s = EFI_NOT_FOUND;
	if (seed_path16(path, p16, ARRAY_SIZE(p16)))
		*s = src->root->Open(src->root, &fh, p16, EFI_FILE_MODE_READ, 0);
	return *s == EFI_SUCCESS ? fh : NULL;
}

static bool seed_has(struct seed_src *src, const char *path)
{
	struct iso_file f;
	EFI_FILE_HANDLE fh;
	EFI_STATUS s;

	if (src->iso)
		return iso_lookup(src->iso, path, &f) == 0;
	fh = seed_open(src, path, &s);
	if (fh)
		fh->Close(fh);
	return fh != NULL;
}

/* path on the seed, whole, into pages of its own (cap bytes at most). */
static void seed_file(EFI_BOOT_SERVICES *bs, struct seed_src *src, const char *path, u32 cap,
		      struct boot_file *f)
{
	UINTN pages = (cap + 4095) / 4096;
	EFI_PHYSICAL_ADDRESS base = 0;
	EFI_FILE_HANDLE fh = NULL;
	struct iso_file isof;
	EFI_STATUS s = EFI_SUCCESS;
	int err = 0;
	u64 got = 0;

	esp_copy_str(f->path, sizeof f->path, path);
	f->cap = cap;
	f->state = BOOT_FILE_ABSENT;
	if (src->iso) {
		err = iso_lookup(src->iso, path, &isof);
		if (err == -ENOENT)
			return;
		if (!err && isof.len > cap) {
			f->state = BOOT_FILE_TOO_BIG;
			f->len = isof.len;
			return;
		}
	} else {
		fh = seed_open(src, path, &s);
		if (s == EFI_NOT_FOUND)
			return;
	}
	if (!err && s == EFI_SUCCESS &&
	    bs->AllocatePages(AllocateAnyPages, EfiLoaderData, pages, &base) != EFI_SUCCESS) {
		f->state = BOOT_FILE_NO_MEMORY;
		if (fh)
			fh->Close(fh);
		return;
	}
	if (!err && s == EFI_SUCCESS) {
		if (src->iso) {
			err = iso_read(src->iso, &isof, (u8 *)(UINTN)base, cap);
			got = err > 0 ? (u64)err : 0;
			err = err < 0 ? err : 0;
		} else {
			got = esp_read(fh, (u8 *)(UINTN)base, cap, &s);
		}
	}
	if (fh)
		fh->Close(fh);
	if (err || s != EFI_SUCCESS) {
		f->state = s == EFI_BAD_BUFFER_SIZE ? BOOT_FILE_TOO_BIG : BOOT_FILE_ERROR;
		f->len = s == EFI_BAD_BUFFER_SIZE ? (u64)cap + 1 : 0;
		f->status = err ? (u64)(s64)err : s;	/* an errno (negative) or an EFI status */
		if (base)
			bs->FreePages(base, pages);
		return;
	}
	/* The unused tail back to the firmware (at least one page kept: base
	 * stays valid). */
	if (got / 4096 + 1 < pages)
		bs->FreePages(base + (got / 4096 + 1) * 4096, pages - (got / 4096 + 1));
	f->state = BOOT_FILE_OK;
	f->base = base;
	f->len = got;
}

static void seed_take(EFI_BOOT_SERVICES *bs, struct seed_src *src, const struct seed_layout *l, const char *label,
		      u32 fs, struct boot_seed *sd)
{
	if (sd->found++)
		return;	/* only the first */
	sd->kind = l->kind;
	sd->fs = fs;
	esp_copy_str(sd->label, sizeof sd->label, label);
	seed_file(bs, src, l->user, BOOT_SEED_USER_MAX, &sd->user);
	seed_file(bs, src, l->meta, BOOT_SEED_META_MAX, &sd->meta);
	if (seed_has(src, l->network))
		sd->flags |= BOOT_SEED_HAS_NETWORK;
	if (seed_has(src, l->vendor))
		sd->flags |= BOOT_SEED_HAS_VENDOR;
}

/* ISO 9660 on whole block devices with media (partitions are FAT's). */
static void seed_iso(EFI_BOOT_SERVICES *bs, struct boot_seed *sd, u8 *sector)
{
	EFI_HANDLE *h = NULL;
	UINTN n = 0, i, seen = 0;

	if (bs->LocateHandleBuffer(ByProtocol, &blockio_guid, NULL, &n, &h) != EFI_SUCCESS)
		return;
	for (i = 0; i < n && seen < BOOT_SEED_MAX_DEVICES; i++) {
		EFI_BLOCK_IO *bio = NULL;
		struct seed_disk d = { 0 };
		struct iso_vol v = { .read = seed_disk_read, .ctx = &d, .buf = sector };
		const struct seed_layout *l;
		struct seed_src src = { .iso = &v };
		int err;

		if (bs->HandleProtocol(h[i], &blockio_guid, (void **)&bio) != EFI_SUCCESS || !bio || !bio->Media ||
		    !bio->Media->MediaPresent || bio->Media->LogicalPartition ||
		    bs->HandleProtocol(h[i], &diskio_guid, (void **)&d.dio) != EFI_SUCCESS || !d.dio)
			continue;
		seen++;
		sd->devices++;
		d.media = bio->Media->MediaId;
		err = iso_mount(&v);
		if (err || !(l = seed_layout_of(v.label)))
			continue;
		seed_take(bs, &src, l, v.label, BOOT_SEED_ISO9660, sd);
	}
	bs->FreePool(h);
}

/* FAT (any file system the firmware mounted) other than the ESP. */
static void seed_fat(EFI_BOOT_SERVICES *bs, EFI_HANDLE boot_dev, struct boot_seed *sd)
{
	EFI_HANDLE *h = NULL;
	UINTN n = 0, i, seen = 0;

	if (bs->LocateHandleBuffer(ByProtocol, &sfs_guid, NULL, &n, &h) != EFI_SUCCESS)
		return;
	for (i = 0; i < n && seen < BOOT_SEED_MAX_DEVICES; i++) {
		EFI_SIMPLE_FILE_SYSTEM_PROTOCOL *fs = NULL;
		struct seed_src src = { 0 };
		union {
			EFI_FILE_SYSTEM_VOLUME_LABEL info;
			u8 raw[SIZE_OF_EFI_FILE_SYSTEM_VOLUME_LABEL_INFO + 2 * 16];
		} lbl;
		UINTN size = sizeof lbl - sizeof(CHAR16);
		char label[16];
		const struct seed_layout *l;
		size_t k;

		if (h[i] == boot_dev || bs->HandleProtocol(h[i], &sfs_guid, (void **)&fs) != EFI_SUCCESS || !fs ||
		    fs->OpenVolume(fs, &src.root) != EFI_SUCCESS)
			continue;
		seen++;
		sd->devices++;
		memset(&lbl, 0, sizeof lbl);
		if (src.root->GetInfo(src.root, &label_guid, &size, &lbl) == EFI_SUCCESS) {
			/* Only ASCII labels can be ours; the firmware's may be unterminated. */
			for (k = 0; k < sizeof label - 1 && lbl.info.VolumeLabel[k] && lbl.info.VolumeLabel[k] < 0x7f; k++)
				label[k] = (char)lbl.info.VolumeLabel[k];
			label[k] = '\0';
			if ((l = seed_layout_of(label)))
				seed_take(bs, &src, l, label, BOOT_SEED_FAT, sd);
		}
		src.root->Close(src.root);
	}
	bs->FreePool(h);
}

/* An AHCI controller (PCI 01h/06h/01h) with nothing attached: every
 * implemented port's SATA status (PxSSTS.DET, AHCI 1.3.1 3.3.10) says no
 * device. Connecting one probes its ports (about 0.2 s under TCG), so an
 * idle one is left alone. Any doubt (a failed read, all-ones) connects. */
static bool seed_ahci_idle(EFI_PCI_IO_PROTOCOL *pci)
{
	u64 orig = 0;
	u32 pi = ~0u, ssts;
	bool idle = false;

	if (pci->Attributes(pci, EfiPciIoAttributeOperationGet, 0, &orig) != EFI_SUCCESS ||
	    pci->Attributes(pci, EfiPciIoAttributeOperationEnable, EFI_PCI_IO_ATTRIBUTE_MEMORY, NULL) != EFI_SUCCESS)
		return false;
	if (pci->Mem.Read(pci, EfiPciIoWidthUint32, 5, 0x0c, 1, &pi) == EFI_SUCCESS && pi != ~0u) {
		idle = true;
		for (u32 p = 0; p < 32 && idle; p++)
			if ((pi >> p & 1) &&
			    (pci->Mem.Read(pci, EfiPciIoWidthUint32, 5, 0x100 + p * 0x80 + 0x28, 1, &ssts) != EFI_SUCCESS ||
			     (ssts & 0xf) != 0))
				idle = false;
	}
	pci->Attributes(pci, EfiPciIoAttributeOperationSet, orig, NULL);
	return idle;
}

/* OVMF connects only the devices in QEMU's boot order (and libvirt gives
 * one to the boot disk): a seed disk or CD-ROM beside it has no driver yet.
 * Mass-storage controllers (PCI class 01h: virtio-blk, virtio-scsi, AHCI,
 * NVMe) are connected here, with their children; nothing else is, and no
 * AHCI controller with no device on any port. */
static void seed_connect_storage(EFI_BOOT_SERVICES *bs)
{
	EFI_HANDLE *h = NULL;
	UINTN n = 0, i;

	if (bs->LocateHandleBuffer(ByProtocol, &pciio_guid, NULL, &n, &h) != EFI_SUCCESS)
		return;
	for (i = 0; i < n && i < 4 * BOOT_SEED_MAX_DEVICES; i++) {
		EFI_PCI_IO_PROTOCOL *pci = NULL;
		u8 cc[3] = { 0 };	/* programming interface, subclass, class */

		if (bs->HandleProtocol(h[i], &pciio_guid, (void **)&pci) != EFI_SUCCESS || !pci ||
		    pci->Pci.Read(pci, EfiPciIoWidthUint8, 0x09, 3, cc) != EFI_SUCCESS || cc[2] != 0x01)
			continue;
		if (cc[1] == 0x06 && cc[0] == 0x01 && seed_ahci_idle(pci))
			continue;
		bs->ConnectController(h[i], NULL, NULL, TRUE);
	}
	bs->FreePool(h);
}

void seed_load(EFI_BOOT_SERVICES *bs, EFI_HANDLE boot_dev, struct boot_info *bi)
{
	u8 *sector = NULL;

	if (bs->AllocatePool(EfiLoaderData, ISO_SECTOR, (void **)&sector) != EFI_SUCCESS)
		return;
	seed_connect_storage(bs);
	seed_iso(bs, &bi->seed, sector);
	seed_fat(bs, boot_dev, &bi->seed);
	bs->FreePool(sector);
}
