/*
 * zpack IN.efi OUT.z: lays out a PE32+ image as the firmware's loader would
 * (headers and each section's raw bytes at their RVAs, zeros up to
 * SizeOfImage), drops the trailing zeros, compresses the rest in the
 * format of boot/lz.h and writes boot/zimage.h's header and the stream.
 * Checks its own output with the decoder the stub uses before writing.
 *
 * The encoder: greedy LZ77 over a 64 KiB window, candidates from hash
 * chains of 4-byte prefixes (the last ZP_DEPTH positions with the same
 * hash), one step of lazy matching (a match one byte on that is longer
 * wins). Deterministic: the same input always gives the same bytes.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "boot/lz.h"
#include "boot/zimage.h"

#define ZP_HASH_BITS 16
#define ZP_DEPTH 256

static const u8 *flat;
static u8 *out;
static size_t flat_len, out_len, out_cap;
static int32_t head[1 << ZP_HASH_BITS], *prevpos;

static void die(const char *what)
{
	fprintf(stderr, "zpack: %s\n", what);
	exit(1);
}

static u32 rd32(const u8 *p)
{
	return (u32)p[0] | (u32)p[1] << 8 | (u32)p[2] << 16 | (u32)p[3] << 24;
}

static void put(u8 b)
{
	if (out_len == out_cap)
		die("output overflows its buffer");
	out[out_len++] = b;
}

static void put_more(size_t n)
{
	while (n >= 255) {
		put(255);
		n -= 255;
	}
	put((u8)n);
}

static u32 hash4(size_t i)
{
	return (rd32(flat + i) * 2654435761u) >> (32 - ZP_HASH_BITS);
}

static void insert(size_t i)
{
	if (i + 4 > flat_len)
		return;
	u32 h = hash4(i);

	prevpos[i] = head[h];
	head[h] = (int32_t)i;
}

/* The longest match for position i among its chain: its length (0 if
 * under LZ_MIN_MATCH) and distance. */
static size_t longest(size_t i, size_t *dist)
{
	size_t best = 0, depth = 0;

	if (i + LZ_MIN_MATCH > flat_len)
		return 0;
	for (int32_t c = head[hash4(i)]; c >= 0 && depth < ZP_DEPTH; c = prevpos[c], depth++) {
		size_t j = (size_t)c, n = 0;

		if (i - j > LZ_WINDOW)
			break;
		while (i + n < flat_len && flat[j + n] == flat[i + n])
			n++;
		if (n > best) {
			best = n;
			*dist = i - j;
		}
	}
	return best >= LZ_MIN_MATCH ? best : 0;
}

static void sequence(const u8 *lit, size_t nlit, size_t mlen, size_t dist)
{
	size_t m = mlen ? mlen - LZ_MIN_MATCH : 0;

	put((u8)((nlit < 15 ? nlit : 15) << 4 | (m < 15 ? m : 15)));
	if (nlit >= 15)
		put_more(nlit - 15);
	for (size_t k = 0; k < nlit; k++)
		put(lit[k]);
	if (!mlen)
		return;
	put((u8)dist);
	put((u8)(dist >> 8));
	if (m >= 15)
		put_more(m - 15);
}

/* Compresses in[0, n) into a malloc'd stream (*len bytes); the host test
 * (tests/host/boot/test_lz.c, -DZPACK_NO_MAIN) calls it too. */
u8 *zpack_compress(const u8 *in, size_t n, size_t *len);
u8 *zpack_compress(const u8 *in, size_t n, size_t *len)
{
	size_t i = 0, anchor = 0;

	flat = in;
	flat_len = n;
	out_len = 0;
	memset(head, 0xff, sizeof head);
	free(prevpos);
	prevpos = malloc(flat_len * sizeof *prevpos + 1);
	out_cap = flat_len + flat_len / 255 + 64;
	out = malloc(out_cap);
	if (!prevpos || !out)
		die("out of memory");
	while (i < flat_len) {
		size_t d = 0, d2 = 0, n = longest(i, &d);

		if (!n) {
			insert(i++);
			continue;
		}
		insert(i);
		if (i + 1 < flat_len && longest(i + 1, &d2) > n) {
			i++;	/* lazy: the next byte starts a longer match */
			continue;
		}
		sequence(flat + anchor, i - anchor, n, d);
		for (size_t k = 1; k < n; k++)
			insert(i + k);
		i += n;
		anchor = i;
	}
	sequence(flat + anchor, flat_len - anchor, 0, 0);
	*len = out_len;
	return out;
}

#ifndef ZPACK_NO_MAIN

int main(int argc, char **argv)
{
	FILE *f;
	u8 *pe, *check, *img, *z;
	size_t img_len, z_len;
	long pe_len;
	u32 pe_off, nsec, opt_len, mem_size, entry, hdr_size;
	struct zimage_hdr h;

	if (argc != 3) {
		fprintf(stderr, "usage: zpack IN.efi OUT.z\n");
		return 2;
	}
	f = fopen(argv[1], "rb");
	if (!f || fseek(f, 0, SEEK_END) || (pe_len = ftell(f)) < 0x40 || fseek(f, 0, SEEK_SET))
		die("cannot read the input");
	pe = malloc((size_t)pe_len);
	if (!pe || fread(pe, 1, (size_t)pe_len, f) != (size_t)pe_len)
		die("cannot read the input");
	fclose(f);
	pe_off = rd32(pe + 0x3c);
	if (pe[0] != 'M' || pe[1] != 'Z' || pe_off > (u32)pe_len - 24 || memcmp(pe + pe_off, "PE\0\0", 4))
		die("not a PE image");
	nsec = pe[pe_off + 6] | pe[pe_off + 7] << 8;
	opt_len = pe[pe_off + 20] | pe[pe_off + 21] << 8;
	if (opt_len < 64 || pe_off + 24 + opt_len + 40 * nsec > (u32)pe_len ||
	    (pe[pe_off + 24] | pe[pe_off + 25] << 8) != 0x20b)
		die("not a PE32+ image");
	entry = rd32(pe + pe_off + 24 + 16);
	mem_size = rd32(pe + pe_off + 24 + 56);
	hdr_size = rd32(pe + pe_off + 24 + 60);
	if (hdr_size > (u32)pe_len || hdr_size > mem_size || entry >= mem_size)
		die("bad PE optional header");
	img = calloc(mem_size, 1);
	if (!img)
		die("out of memory");
	memcpy(img, pe, hdr_size);
	for (u32 s = 0; s < nsec; s++) {
		const u8 *sh = pe + pe_off + 24 + opt_len + 40 * s;
		u32 vsize = rd32(sh + 8), va = rd32(sh + 12), raw = rd32(sh + 16), at = rd32(sh + 20);
		u32 n = raw < vsize ? raw : vsize;

		if (va > mem_size || n > mem_size - va || at > (u32)pe_len || n > (u32)pe_len - at)
			die("a section lies outside the image");
		memcpy(img + va, pe + at, n);
	}
	img_len = mem_size;
	while (img_len && !img[img_len - 1])
		img_len--;
	z = zpack_compress(img, img_len, &z_len);
	check = malloc(img_len + 1);
	if (!check || lz_decode(check, img_len, z, z_len) || memcmp(check, img, img_len))
		die("the stream does not decode to its input");
	memset(&h, 0, sizeof h);
	memcpy(h.magic, ZIMAGE_MAGIC, sizeof ZIMAGE_MAGIC);
	h.raw_len = (u32)img_len;
	h.mem_size = mem_size;
	h.entry = entry;
	h.comp_len = (u32)z_len;
	f = fopen(argv[2], "wb");
	if (!f || fwrite(&h, sizeof h, 1, f) != 1 || fwrite(z, 1, z_len, f) != z_len || fclose(f))
		die("cannot write the output");
	printf("  ZPACK   %s (%zu of %u bytes loaded, %zu compressed)\n", argv[2], img_len, mem_size, z_len);
	return 0;
}
#endif
