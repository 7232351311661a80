# A guest descriptor for the shared harness's run.sh, used by make bench-tls
# (tests/bench/bench_tls.sh): the harness's own guests/uefi-app.sh (vireo's
# .efi on an ESP, booted through OVMF; UEFI_* as documented there) plus a
# vireo command line given through fw_cfg (opt/vireo/cmdline, which
# boot/efi_main.c reads when the firmware passes no LoadOptions), from
# VIREO_CMDLINE; none when that is empty. Sourced by run.sh, which exports
# BENCH_DIR (the harness).
# shellcheck disable=SC1091
source "$BENCH_DIR/guests/uefi-app.sh" || return 1
if [ -n "${VIREO_CMDLINE:-}" ]; then
  GUEST_ARGS+=(-fw_cfg "name=opt/vireo/cmdline,string=$VIREO_CMDLINE")
fi
