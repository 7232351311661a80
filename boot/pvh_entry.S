/*
 * PVH entry (the x86 HVM direct boot ABI): the loader (QEMU's pvh option ROM
 * under SeaBIOS, qboot on microvm, Firecracker) jumps to pvh_start32 in
 * 32-bit protected mode, paging off, interrupts off, flat segments, %ebx the
 * physical address of struct hvm_start_info, and no stack. Here: clear .bss,
 * identity-map the first 4 GiB with 2 MiB pages, enter long mode and call
 * pvh_main (boot/pvh.c) on the kernel stack. The image is linked at its
 * physical address (linker/pvh.ld), so absolute addresses work before paging.
 */
#include "kernel/boot_info.h"

#define CR0_PE 0x00000001
#define CR0_PG 0x80000000
#define CR4_PAE 0x00000020
#define MSR_EFER 0xc0000080
#define EFER_LME 0x00000100
#define PG_P_W 0x003
#define PG_P_W_PS 0x083
#define STACK_BYTES ((BOOT_STACK_PAGES + 1) * 4096)

/* The ELF note the loader looks for: name "Xen", type PHYS32_ENTRY, and the
 * 32-bit entry point as the descriptor (8 bytes; QEMU reads a full word from
 * a 64-bit ELF). */
	.section .note.Xen, "a", @note
	.balign 4
	.long 4			/* name size: "Xen\0" */
	.long 8			/* descriptor size */
	.long 18		/* XEN_ELFNOTE_PHYS32_ENTRY */
	.asciz "Xen"
	.balign 4
	.quad pvh_start32
	.balign 4

	.section .text.pvh32, "ax"
	.code32
	.globl pvh_start32
	.hidden pvh_start32
pvh_start32:
	cli
	cld
	movl %ebx, %esi			/* hvm_start_info, kept across the setup */
	rdtsc
	movl %eax, pvh_entry_tsc
	movl %edx, pvh_entry_tsc + 4

	lgdt pvh_gdtr
	movl $0x10, %eax
	movl %eax, %ds
	movl %eax, %es
	movl %eax, %ss

	/* .bss holds the stack and the page tables; the loader may or may
	 * not have zeroed it. */
	movl $__bss_start, %edi
	movl $__bss_end, %ecx
	subl %edi, %ecx
	xorl %eax, %eax
	rep stosb

	/* PD entries: 2048 x 2 MiB, 0 .. 4 GiB. */
	movl $pvh_pd, %edi
	movl $PG_P_W_PS, %eax
	xorl %ecx, %ecx
1:	movl %eax, (%edi, %ecx, 8)
	addl $0x200000, %eax
	incl %ecx
	cmpl $2048, %ecx
	jb 1b
	/* PDPT[0..3] -> the four PDs; PML4[0] -> PDPT. */
	movl $pvh_pdpt, %edi
	movl $(pvh_pd + PG_P_W), %eax
	xorl %ecx, %ecx
2:	movl %eax, (%edi, %ecx, 8)
	addl $4096, %eax
	incl %ecx
	cmpl $4, %ecx
	jb 2b
	movl $(pvh_pdpt + PG_P_W), %eax
	movl %eax, pvh_pml4

	movl %cr4, %eax
	orl $CR4_PAE, %eax
	movl %eax, %cr4
	movl $pvh_pml4, %eax
	movl %eax, %cr3
	movl $MSR_EFER, %ecx
	rdmsr
	orl $EFER_LME, %eax
	wrmsr
	movl %cr0, %eax
	orl $(CR0_PG | CR0_PE), %eax
	movl %eax, %cr0
	ljmp $0x08, $pvh_start64

	.code64
pvh_start64:
	movl $0x10, %eax
	movl %eax, %ds
	movl %eax, %es
	movl %eax, %ss
	xorl %eax, %eax
	movl %eax, %fs
	movl %eax, %gs
	movq $(pvh_stack + STACK_BYTES), %rsp
	movl %esi, %edi			/* zero-extends: u64 start info address */
	xorl %ebp, %ebp
	call pvh_main
	ud2

	.section .rodata.pvh, "a"
	.balign 8
pvh_gdt:
	.quad 0
	.quad 0x00af9a000000ffff	/* 0x08: 64-bit code */
	.quad 0x00cf92000000ffff	/* 0x10: flat data */
pvh_gdtr:
	.word 3 * 8 - 1
	.long pvh_gdt

	.section .data.pvh, "aw"
	.balign 8
	.globl pvh_entry_tsc
	.hidden pvh_entry_tsc
pvh_entry_tsc:
	.quad 0

	.section .bss.pvh, "aw", @nobits
	.balign 4096
pvh_pml4:
	.skip 4096
pvh_pdpt:
	.skip 4096
pvh_pd:
	.skip 4 * 4096
	/* The kernel stack; its lowest page is the guard (unmapped by mm). */
	.globl pvh_stack
	.hidden pvh_stack
pvh_stack:
	.skip STACK_BYTES

	.section .note.GNU-stack, "", @progbits
