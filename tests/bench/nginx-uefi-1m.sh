# A guest descriptor for the shared harness's run.sh, used by make bench-1m
# (tests/bench/bench_1m.sh): the nginx peer as the harness's
# guests/linux-nginx-uefi.sh boots it, from the UKI bench_1m.sh derived with
# /www/1m.bin added (NGINX_1M_EFI), and /1m.bin as the harness's large file.
# Sourced by run.sh, which exports BENCH_DIR (the harness).
# shellcheck shell=bash disable=SC1091,SC2034
UEFI_APP=${NGINX_1M_EFI:?set by tests/bench/bench_1m.sh}
UEFI_NAME=linux-nginx-uefi
UEFI_PORT=80
UEFI_MARKER=READY
UEFI_MEM=${UEFI_MEM:-256}
UEFI_STOP=acpi
UEFI_LARGE_BYTES=1048576
source "$BENCH_DIR/guests/uefi-app.sh" || return 1
GUEST_LARGE_PATH=/1m.bin
