# drivers/: acpi/, pci/, iommu/ (Intel VT-d), virtio/ (bus, core, ring, PCI
# and MMIO transports) and one folder per virtio device. Hot: the ring,
# virtio-net's data path and its coalescing policy. Cold: table parsers and
# scans run once, device set-up, negotiation and control (the bus, the core's
# life cycle and the PCI transport, -Os since issue 29's keep-alive list and
# lwIP's parked PCBs: their per-frame part is one notify write and an
# interrupt's dispatch), the console and rng drivers, the MMIO transport
# (microVM), VT-d (its per-buffer map/unmap is IOTLB-bound).
HOT_SRCS += drivers/virtio/virtq.c \
	drivers/virtio/net/virtio_net.c drivers/virtio/net/vnet_hdr.c drivers/virtio/net/vnet_gso.c \
	drivers/virtio/net/coalesce.c
COLD_SRCS += drivers/virtio/virtio.c drivers/virtio/virtio_core.c drivers/virtio/virtio_pci.c drivers/acpi/acpi_tables.c drivers/acpi/aml_s5.c drivers/acpi/acpi.c \
	drivers/pci/pci_parse.c drivers/pci/pci.c \
	drivers/iommu/vtd_pt.c drivers/iommu/vtd_policy.c drivers/iommu/vtd.c drivers/iommu/vtd_irte.c drivers/iommu/vtd_ir.c \
	drivers/virtio/virtio_pci_caps.c \
	drivers/virtio/virtio_mmio_parse.c drivers/virtio/virtio_mmio.c \
	drivers/virtio/net/vnet_ctrl.c drivers/virtio/net/vnet_features.c drivers/virtio/console/virtio_console.c drivers/virtio/rng/virtio_rng.c \
	drivers/virtio/blk/virtio_blk.c
