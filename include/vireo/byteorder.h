/*
 * vireo's application API: loads and stores at any alignment, for formats
 * read byte by byte: little-endian (virtio headers, ACPI tables, ChaCha20)
 * and big-endian (network byte order: DNS, IP and TCP headers). The kernel
 * uses the same (lib/byteorder.h).
 */
#ifndef VIREO_API_BYTEORDER_H
#define VIREO_API_BYTEORDER_H

#include "vireo/types.h"

static inline u16 get_le16(const u8 *p)
{
	return (u16)(p[0] | (p[1] << 8));
}

static inline u32 get_le32(const u8 *p)
{
	return (u32)p[0] | (u32)p[1] << 8 | (u32)p[2] << 16 | (u32)p[3] << 24;
}

static inline u64 get_le64(const u8 *p)
{
	return (u64)get_le32(p) | (u64)get_le32(p + 4) << 32;
}

static inline void put_le16(u8 *p, u16 v)
{
	p[0] = (u8)v;
	p[1] = (u8)(v >> 8);
}

static inline void put_le32(u8 *p, u32 v)
{
	p[0] = (u8)v;
	p[1] = (u8)(v >> 8);
	p[2] = (u8)(v >> 16);
	p[3] = (u8)(v >> 24);
}

static inline void put_le64(u8 *p, u64 v)
{
	put_le32(p, (u32)v);
	put_le32(p + 4, (u32)(v >> 32));
}

static inline u16 get_be16(const u8 *p)
{
	return (u16)(p[0] << 8 | p[1]);
}

static inline u32 get_be32(const u8 *p)
{
	return (u32)p[0] << 24 | (u32)p[1] << 16 | (u32)p[2] << 8 | p[3];
}

static inline void put_be16(u8 *p, u16 v)
{
	p[0] = (u8)(v >> 8);
	p[1] = (u8)v;
}

static inline void put_be32(u8 *p, u32 v)
{
	put_be16(p, (u16)(v >> 16));
	put_be16(p + 2, (u16)v);
}

#endif
