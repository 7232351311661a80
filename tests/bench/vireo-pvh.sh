# shellcheck shell=bash disable=SC2034
# Guest descriptor for the shared harness (../shared/bench/run.sh): vireo's
# PVH ELF booted with -kernel, no firmware of its own (SeaBIOS on q35, qboot
# on microvm), a static address on the command line. tests/bench/pvh_peer.sh
# sets the variables; the machine keeps QEMU's defaults (microvm: ACPI on,
# legacy virtio-mmio, the NIC found through the DSDT).
#   VIREO_ELF      the kernel (required)
#   VIREO_MACHINE  q35 | microvm (default microvm)
#   VIREO_MEM      -m in MiB (default 16)
[ -r "${VIREO_ELF:-}" ] || { echo "vireo-pvh: cannot read VIREO_ELF=${VIREO_ELF:-}" >&2; return 1; }
GUEST_MACHINE=${VIREO_MACHINE:-microvm}
GUEST_NAME=vireo-pvh-${GUEST_MACHINE%%,*}
case "${GUEST_MACHINE%%,*}" in
	microvm) GUEST_NIC_DEVICE=virtio-net-device ;;
	*) GUEST_NIC_DEVICE=virtio-net-pci ;;
esac
GUEST_PORT=80
GUEST_READY_MARKER='vireo: ready'
GUEST_MEM=${VIREO_MEM:-16}
GUEST_SMALL_BYTES=612
GUEST_LARGE_BYTES=65536
GUEST_STOP=acpi		# the power button: q35's SCI, microvm's GED
GUEST_ARGS=(-kernel "$VIREO_ELF" -append "ip=$GUEST_IP/$GUEST_PREFIX gw=$GUEST_HOST_IP")
