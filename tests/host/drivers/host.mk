# drivers/: ACPI tables and the AML scans, PCI config parsing (with the
# virtio PCI capabilities), VT-d page tables, policy and interrupt remapping formats, the virtqueue against fake_dev,
# the virtio-mmio parsers, virtio-net's header and control parsers and its
# coalescing policy. The drivers themselves run against the simulated device
# (tests/host/simdev/host.mk's SIMDEV_*): virtio-net, virtio-rng,
# virtio-console.
HOST_TESTS += test_acpi_tables test_aml_s5 test_pci_parse test_vtd_pt test_vtd_policy test_vtd_irte test_virtq test_virtio_mmio_parse
test_acpi_tables_USES := acpi_tables
test_aml_s5_USES := aml_s5
test_pci_parse_USES := pci_parse virtio_pci_caps
test_vtd_pt_USES := vtd_pt
test_vtd_policy_USES := vtd_policy
test_vtd_irte_USES := vtd_irte
test_virtq_USES := virtq dma virtq_fault
test_virtq_SRCS := $(FAKE_DEV)
test_virtio_mmio_parse_USES := virtio_mmio_parse aml_s5
FUZZERS += fuzz_acpi_tables fuzz_aml_s5 fuzz_virtq fuzz_virtio_mmio_parse
fuzz_acpi_tables_USES := acpi_tables
fuzz_aml_s5_USES := aml_s5
fuzz_virtq_USES := virtq dma
fuzz_virtio_mmio_parse_USES := virtio_mmio_parse aml_s5

HOST_TESTS += test_vnet_hdr test_coalesce
test_vnet_hdr_USES := vnet_hdr vnet_ctrl
test_coalesce_USES := coalesce
FUZZERS += fuzz_vnet_hdr
fuzz_vnet_hdr_USES := vnet_hdr

HOST_TESTS += test_virtio_net test_virtio_rng test_virtio_console
FUZZERS += fuzz_virtio_net
VNET_HOST_USES := $(SIMDEV_USES) vnet_hdr vnet_ctrl vnet_gso vnet_features coalesce vnet_echo virtio_selftest virtq_fault fmt
VNET_HOST_SRCS := $(call host_wrap,virtio_net) $(SIMDEV_SRCS) $(VNETDEV) tests/host/drivers/virtio/net/upper.c
test_virtio_net_USES := $(VNET_HOST_USES) rxmem
# lwIP for real pbufs on the receive buffers (the attacking device's test)
test_virtio_net_SRCS := $(VNET_HOST_SRCS) $(LWIP_HOST_LIB)
LWIP_HOST_TESTS += test_virtio_net
test_virtio_net_LDFLAGS := $(SIMDEV_LDFLAGS)
fuzz_virtio_net_USES := $(VNET_HOST_USES)
fuzz_virtio_net_SRCS := $(VNET_HOST_SRCS)
fuzz_virtio_net_LDFLAGS := $(SIMDEV_LDFLAGS)
test_virtio_rng_USES := $(SIMDEV_USES) virtio_rng
test_virtio_rng_SRCS := $(SIMDEV_SRCS)
test_virtio_rng_LDFLAGS := $(SIMDEV_LDFLAGS)
test_virtio_console_USES := $(SIMDEV_USES) virtio_console
test_virtio_console_SRCS := $(SIMDEV_SRCS)
test_virtio_console_LDFLAGS := $(SIMDEV_LDFLAGS)
# virtio-blk against the simulated virtio-blk device (simdev/blkdev.c).
HOST_TESTS += test_virtio_blk
test_virtio_blk_USES := $(SIMDEV_USES) fmt
test_virtio_blk_SRCS := $(call host_wrap,virtio_blk) $(SIMDEV_SRCS) tests/host/simdev/blkdev.c
test_virtio_blk_LDFLAGS := $(SIMDEV_LDFLAGS)
