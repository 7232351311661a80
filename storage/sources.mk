# storage/: the block layer over virtio-blk and the log-structured store
# (docs/architecture.md, Storage). Linked only with STORAGE=1 (the
# Makefile's storage block: apps that keep data set it in their app.mk).
HOT_SRCS +=
COLD_SRCS +=
