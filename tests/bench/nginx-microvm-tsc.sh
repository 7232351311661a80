# shellcheck shell=bash disable=SC2034
# Guest descriptor: the shared harness's nginx peer on microvm
# (guests/linux-nginx-microvm.sh) with one kernel argument more,
# tsc_early_khz=PEER_TSC_KHZ. Under TCG on QEMU 7.2 microvm Debian's 6.1
# kernel otherwise stops after "tsc: Unable to calibrate against PIT / No
# reference (HPET/PMTIMER) available" (microvm has no port-0x61 gate, no
# HPET, and its hardware-reduced ACPI no PM timer) and never prints READY.
# Under TCG the guest's TSC runs at the host's rate, which is what
# tests/bench/pvh_peer.sh passes (the host's "cpu MHz").
# shellcheck disable=SC1091
source "$BENCH_DIR/guests/linux-nginx-microvm.sh" || return 1
[[ ${PEER_TSC_KHZ:-} =~ ^[0-9]+$ ]] || { echo "nginx-microvm-tsc: PEER_TSC_KHZ unset" >&2; return 1; }
GUEST_NAME=linux-nginx-microvm
for _i in "${!GUEST_ARGS[@]}"; do
	if [[ ${GUEST_ARGS[$_i]} == -append ]]; then
		GUEST_ARGS[_i + 1]+=" tsc_early_khz=$PEER_TSC_KHZ"
	fi
done
true
