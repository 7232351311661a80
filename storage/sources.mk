# storage/: the block layer over virtio-blk and the log-structured store
# (docs/architecture.md, Storage). Linked only with STORAGE=1 (the
# Makefile's storage block: apps that keep data set it in their app.mk).
# Hot: the block layer and the index. Cold: the format's encoders and
# decoders (one CRC pass per batch dominates them), the virtio adapter, the
# record log (a thin layer of keys over the store), the store's open
# (superblocks, format, recovery's replay: once per boot; its CRC passes
# are lib/crc32c.c's, -O2).
HOT_SRCS += storage/blk.c storage/index.c storage/store.c storage/store_compact.c
COLD_SRCS += storage/logfmt.c storage/blk_virtio.c storage/disk.c storage/store_log.c storage/store_open.c
