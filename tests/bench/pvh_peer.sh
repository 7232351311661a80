#!/usr/bin/env bash
# pvh_peer.sh — the second half of `make bench-pvh`: vireo's PVH ELF side by
# side with the nginx peer booted directly (-kernel, no firmware), through the
# shared harness (../shared/bench/run.sh), on q35 and on microvm, static
# address, tap networking in a namespace of the harness's own:
#   q35:     guests/linux-nginx.sh          vs vireo.elf (tests/bench/vireo-pvh.sh, q35)
#   microvm: guests/linux-nginx-microvm.sh, plus tsc_early_khz= (tests/bench/nginx-microvm-tsc.sh:
#            without it the peer does not boot on microvm under TCG)
#            vs vireo.elf (tests/bench/vireo-pvh.sh, microvm)
# Each guest at its own -m: the peer at its descriptor's 128 MiB, vireo at
# 16 MiB (BENCH_PVH_MEM). Both machines keep QEMU's defaults (microvm: ACPI
# on, legacy virtio-mmio) and stop through QMP system_powerdown.
# Then tests/bench/pvh_summary.py prints one table: QEMU start -> first HTTP
# 200, QEMU start -> ready marker, the guest's own entry -> ready (vireo's
# boot timeline; Linux's uptime at READY), 612 B and 64 KiB keep-alive wrk
# at c1 and c32, QEMU peak RSS.
#
# env: BENCH_REPS (boots per guest, default 3), BENCH_DURATION (wrk seconds
# per test, default 10), BENCH_HARNESS (default ../shared/bench),
# BENCH_PVH_MEM (vireo's -m, default 16), BENCH_BOOT_TIMEOUT (seconds a boot
# may take to its marker, default 180), PEER_TSC_KHZ (default: the host's
# "cpu MHz"), BENCH_PVH_MACHINES (default "q35 microvm"). Needs root.
set -uo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
cd "$root"
harness=${BENCH_HARNESS:-$root/../shared/bench}
harness=$(cd "$harness" 2>/dev/null && pwd) || { echo "bench-pvh: harness not found (BENCH_HARNESS)" >&2; exit 1; }
reps=${BENCH_REPS:-3} dur=${BENCH_DURATION:-10} mem=${BENCH_PVH_MEM:-16} boot_to=${BENCH_BOOT_TIMEOUT:-180}
[[ $reps =~ ^[0-9]+$ && $dur =~ ^[0-9]+$ && $mem =~ ^[0-9]+$ && $boot_to =~ ^[0-9]+$ ]] ||
	{ echo "bench-pvh: BENCH_REPS, BENCH_DURATION, BENCH_PVH_MEM, BENCH_BOOT_TIMEOUT are numbers" >&2; exit 1; }
((EUID == 0)) || { echo "bench-pvh: the side by side needs root (network namespaces, tap devices)" >&2; exit 1; }
for t in wrk curl ip qemu-system-x86_64; do
	command -v "$t" >/dev/null || { echo "bench-pvh: missing $t (make deps-test)" >&2; exit 1; }
done
[[ -r build/vireo.elf ]] || { echo "bench-pvh: build/vireo.elf missing (make elf)" >&2; exit 1; }
out=$root/build/bench
dir=$out/pvh-$(date -u +%Y%m%dT%H%M%SZ)
mkdir -p "$dir"
export BENCH_OUT=$out
log() { echo "[bench-pvh $(date +%H:%M:%S)] $*" >&2; }

# shellcheck source=tests/bench/peers.sh
. "$root/tests/bench/peers.sh"
bench_build_peers "$dir/peer-build.log" peer-linux-nginx -- \
	"$out/peer-linux-nginx/vmlinuz" "$out/peer-linux-nginx/initrd.img"

# vireo through tests/bench/vireo-pvh.sh: static address, its own marker.
export VIREO_ELF=$root/build/vireo.elf VIREO_MEM=$mem
# The nginx peer on microvm needs its TSC rate given (tests/bench/nginx-microvm-tsc.sh):
# under TCG that is the host's.
khz=$(awk -F: '/^cpu MHz/ { printf "%d", $2 * 1000; exit }' /proc/cpuinfo)
export PEER_TSC_KHZ=${PEER_TSC_KHZ:-$khz}
rc=0
for m in ${BENCH_PVH_MACHINES:-q35 microvm}; do
	peer=$harness/guests/linux-nginx.sh
	[[ $m == microvm ]] && peer=$root/tests/bench/nginx-microvm-tsc.sh
	log "$m: $reps rep(s) x (nginx peer, vireo at -m $mem), wrk ${dur} s per test"
	VIREO_MACHINE=$m run bash "$harness/run.sh" --reps "$reps" --duration "$dur" --boot-timeout "$boot_to" \
		--tag bench-pvh --results "$dir/$m.jsonl" "$peer" "$root/tests/bench/vireo-pvh.sh" \
		>"$dir/$m.txt" 2>"$dir/$m.log" || { rc=1; tail -20 "$dir/$m.log" >&2; }
done
python3 tests/bench/pvh_summary.py "$dir"/*.jsonl | tee "$dir/summary.txt"
log "raw results in $dir"
exit $rc
