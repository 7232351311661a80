# A guest descriptor for the shared harness's run.sh, used by make bench-1m
# (tests/bench/bench_1m.sh): vireo as make bench boots it (the harness's
# guests/uefi-app.sh, DHCP), from the build with /1m.bin (VIREO_1M_EFI), and
# /1m.bin as the harness's large file. Sourced by run.sh, which exports
# BENCH_DIR (the harness).
# shellcheck shell=bash disable=SC1091,SC2034
UEFI_APP=${VIREO_1M_EFI:?set by tests/bench/bench_1m.sh}
UEFI_NAME=vireo
UEFI_MARKER='vireo: ready'
UEFI_DHCP=1
UEFI_MEM=${UEFI_MEM:-256}
UEFI_LARGE_BYTES=1048576
source "$BENCH_DIR/guests/uefi-app.sh" || return 1
GUEST_LARGE_PATH=/1m.bin
