/* x86 port I/O, MSRs, control registers and the few privileged instructions. */
#ifndef VIREO_IO_H
#define VIREO_IO_H

#include "lib/types.h"
#include <arch.h>

static inline void outb(u16 port, u8 v) { __asm__ __volatile__("outb %0, %1" :: "a"(v), "Nd"(port)); }
static inline void outw(u16 port, u16 v) { __asm__ __volatile__("outw %0, %1" :: "a"(v), "Nd"(port)); }
static inline void outl(u16 port, u32 v) { __asm__ __volatile__("outl %0, %1" :: "a"(v), "Nd"(port)); }
static inline u8 inb(u16 port) { u8 v; __asm__ __volatile__("inb %1, %0" : "=a"(v) : "Nd"(port)); return v; }
static inline u16 inw(u16 port) { u16 v; __asm__ __volatile__("inw %1, %0" : "=a"(v) : "Nd"(port)); return v; }
static inline u32 inl(u16 port) { u32 v; __asm__ __volatile__("inl %1, %0" : "=a"(v) : "Nd"(port)); return v; }

static inline u64 rdtsc(void)
{
	u32 lo, hi;

	__asm__ __volatile__("rdtsc" : "=a"(lo), "=d"(hi));
	return (u64)hi << 32 | lo;
}

static inline u64 rdmsr(u32 msr)
{
	u32 lo, hi;

	__asm__ __volatile__("rdmsr" : "=a"(lo), "=d"(hi) : "c"(msr));
	return (u64)hi << 32 | lo;
}

static inline void wrmsr(u32 msr, u64 v)
{
	__asm__ __volatile__("wrmsr" :: "c"(msr), "a"((u32)v), "d"((u32)(v >> 32)));
}

static inline void cpuid(u32 leaf, u32 sub, u32 *a, u32 *b, u32 *c, u32 *d)
{
	__asm__ __volatile__("cpuid" : "=a"(*a), "=b"(*b), "=c"(*c), "=d"(*d) : "a"(leaf), "c"(sub));
}

static inline u64 read_cr0(void) { u64 v; __asm__ __volatile__("mov %%cr0, %0" : "=r"(v)); return v; }
static inline u64 read_cr2(void) { u64 v; __asm__ __volatile__("mov %%cr2, %0" : "=r"(v)); return v; }
static inline u64 read_cr3(void) { u64 v; __asm__ __volatile__("mov %%cr3, %0" : "=r"(v)); return v; }
static inline u64 read_cr4(void) { u64 v; __asm__ __volatile__("mov %%cr4, %0" : "=r"(v)); return v; }
static inline void write_cr0(u64 v) { __asm__ __volatile__("mov %0, %%cr0" :: "r"(v) : "memory"); }
static inline void write_cr3(u64 v) { __asm__ __volatile__("mov %0, %%cr3" :: "r"(v) : "memory"); }
static inline void write_cr4(u64 v) { __asm__ __volatile__("mov %0, %%cr4" :: "r"(v) : "memory"); }
static inline void invlpg(u64 va) { __asm__ __volatile__("invlpg (%0)" :: "r"(va) : "memory"); }

static inline void cli(void) { __asm__ __volatile__("cli" ::: "memory"); }
static inline void sti(void) { __asm__ __volatile__("sti" ::: "memory"); }
static inline void pause(void) { __asm__ __volatile__("pause"); }
/* sti takes effect after the next instruction, so no interrupt can slip in
 * between the caller's last check and the hlt. */
static inline void sti_hlt(void) { __asm__ __volatile__("sti; hlt" ::: "memory"); }

/* read_rflags(), irq_save() and irq_restore() are in <arch.h>. */

static inline u32 mmio_r32(u64 addr) { return *(volatile u32 *)addr; }
static inline void mmio_w32(u64 addr, u32 v) { *(volatile u32 *)addr = v; }
static inline u16 mmio_r16(u64 addr) { return *(volatile u16 *)addr; }
static inline void mmio_w16(u64 addr, u16 v) { *(volatile u16 *)addr = v; }
static inline u8 mmio_r8(u64 addr) { return *(volatile u8 *)addr; }
static inline void mmio_w8(u64 addr, u8 v) { *(volatile u8 *)addr = v; }
static inline u64 mmio_r64(u64 addr) { return *(volatile u64 *)addr; }
static inline void mmio_w64(u64 addr, u64 v) { *(volatile u64 *)addr = v; }

/* A w-byte access (4, 2, else 1) at off into the MMIO window of len bytes at
 * base, as device config windows are read: -ERANGE where it would leave the
 * window (off and w come from drivers, len from the device). */
static inline int mmio_window_read(u64 base, u32 len, u32 off, void *buf, u32 w)
{
	if (off > len || w > len - off)
		return -ERANGE;
	if (w == 4)
		*(u32 *)buf = mmio_r32(base + off);
	else if (w == 2)
		*(u16 *)buf = mmio_r16(base + off);
	else
		*(u8 *)buf = mmio_r8(base + off);
	return 0;
}

static inline int mmio_window_write(u64 base, u32 len, u32 off, const void *buf, u32 w)
{
	if (off > len || w > len - off)
		return -ERANGE;
	if (w == 4)
		mmio_w32(base + off, *(const u32 *)buf);
	else if (w == 2)
		mmio_w16(base + off, *(const u16 *)buf);
	else
		mmio_w8(base + off, *(const u8 *)buf);
	return 0;
}

#define MSR_EFER 0xC0000080
#define MSR_APIC_BASE 0x1B
#define EFER_NXE (1u << 11)
#define CR0_WP (1u << 16)

#endif
