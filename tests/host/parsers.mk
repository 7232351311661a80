HOST_TESTS += test_acpi test_pci
test_acpi_SRCS := tests/host/test_acpi.c drivers/acpi_tables.c
test_pci_SRCS := tests/host/test_pci.c drivers/pci_parse.c drivers/virtio_pci_caps.c
FUZZERS += fuzz_acpi
fuzz_acpi_SRCS := tests/fuzz/fuzz_acpi.c drivers/acpi_tables.c
