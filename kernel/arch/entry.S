/*
 * Interrupt and exception entry. Stub n sits at isr_stubs + 16*n, so the IDT
 * needs no table of addresses (and no relocations). Each stub pushes a zero
 * error code where the CPU does not, then its vector, and joins isr_common,
 * which saves the registers as struct trap_frame (kernel/arch/irq.h).
 */
	.section .text.entry, "ax"
	.code64
	.altmacro

.macro isr n
	.balign 16
	.if (\n == 8 || (\n >= 10 && \n <= 14) || \n == 17 || \n == 21 || \n == 29 || \n == 30)
	.else
	pushq $0
	.endif
	pushq $\n
	jmp isr_common
.endm

	.balign 16
	.globl isr_stubs
	.hidden isr_stubs
isr_stubs:
	.set vec, 0
	.rept 256
	isr %vec
	.set vec, vec + 1
	.endr

isr_common:
	cld
	pushq %rax
	pushq %rbx
	pushq %rcx
	pushq %rdx
	pushq %rsi
	pushq %rdi
	pushq %rbp
	pushq %r8
	pushq %r9
	pushq %r10
	pushq %r11
	pushq %r12
	pushq %r13
	pushq %r14
	pushq %r15
	movq %rsp, %rdi
	movq %rsp, %rbx			/* callee-saved: restores the frame pointer */
	andq $-16, %rsp			/* ABI stack alignment for the C handler */
	call trap_dispatch
	movq %rbx, %rsp
	popq %r15
	popq %r14
	popq %r13
	popq %r12
	popq %r11
	popq %r10
	popq %r9
	popq %r8
	popq %rbp
	popq %rdi
	popq %rsi
	popq %rdx
	popq %rcx
	popq %rbx
	popq %rax
	addq $16, %rsp			/* vector, error code */
	iretq

/* void gdt_load(const void *gdtr, u16 code_sel, u16 data_sel, u16 tss_sel) */
	.globl gdt_load
	.hidden gdt_load
gdt_load:
	lgdt (%rdi)
	movw %dx, %ds
	movw %dx, %es
	movw %dx, %ss
	xorl %eax, %eax
	movw %ax, %fs
	movw %ax, %gs
	ltr %cx
	/* Reload CS with a far return to the next instruction. */
	leaq 1f(%rip), %rax
	pushq %rsi
	pushq %rax
	lretq
1:	ret

	.section .note.GNU-stack, "", @progbits
