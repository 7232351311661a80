/* The compressed kernel (boot/zimage.h), in the stub's .rodata; ZPAYLOAD is
 * its file (Makefile, make ZIMAGE=1). */
	.section .rodata.zpayload, "a"
	.balign 8
	.globl zpayload
	.hidden zpayload
zpayload:
	.incbin ZPAYLOAD
	.globl zpayload_end
	.hidden zpayload_end
zpayload_end:
	.section .note.GNU-stack, "", @progbits
