# A guest descriptor for the shared harness's run.sh, used by make bench
# (tests/bench/bench.sh) when BENCH_CONNS asks for more than 1,000
# connections: the nginx peer as the harness's guests/linux-nginx-uefi.sh
# boots it, from the UKI bench.sh derived with worker_connections 10240 and
# worker_rlimit_nofile 20480 (NGINX_CONNS_EFI; the harness's has 1,024).
# Sourced by run.sh, which exports BENCH_DIR (the harness).
# shellcheck shell=bash disable=SC1091,SC2034
UEFI_APP=${NGINX_CONNS_EFI:?set by tests/bench/bench.sh}
UEFI_NAME=linux-nginx-uefi
UEFI_PORT=80
UEFI_TLS_PORT=443
UEFI_MARKER=READY
UEFI_MEM=${UEFI_MEM:-256}
UEFI_STOP=acpi
source "$BENCH_DIR/guests/uefi-app.sh" || return 1
