# boot/: the PVH start info (pvh_info.c) and the UEFI image's RELR
# self-relocation (relr.c).
HOST_TESTS += test_pvh_info test_relr
test_pvh_info_USES := pvh_info
test_relr_USES := relr
