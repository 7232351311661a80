#!/usr/bin/env bash
# bench_tls.sh — `make bench-tls`: HTTPS side by side, vireo built with
# make TLS=1 against nginx on a minimal Linux serving HTTPS on 443, both
# booted through OVMF under the same QEMU (TCG) by the shared harness's
# `run.sh --tls`: first HTTPS 200, keep-alive wrk over HTTPS at c1/c32 for the
# 612 B and 64 KiB files, new TLS handshakes/s (Connection: close), the
# protocol, cipher and resumption each guest negotiated, QEMU memory. The
# harness prints the table with vireo/nginx ratios (nginx first: the
# baseline); raw files stay in build/bench-tls/<stamp>/.
#
# vireo's image is built into build/bench-tls/ (TLS=1, with the
# certificate it generates at boot; the harness does not verify
# certificates) so the default build is untouched.
#
# vireo boots with BENCH_VIREO_CMDLINE (through fw_cfg, the descriptor
# tests/bench/vireo-uefi-tls.sh), by default "https.handshakes=64
# https.handshakes_per_source=64" and the rates off (below): nginx has no handshake limit, and wrk
# opens all its connections at once from one address, which vireo's default
# per-source limit (8) would reset; 64 is the TLS connection bound, so the
# heap arithmetic is unchanged; and both handshake rates off
# (https.handshake_rate_per_prefix=0 https.handshake_rate=0): nginx has no
# rate limit either, and the handshakes/s figure measures capacity from one
# address, which the per-prefix bucket (30 a second) would cap. Set it empty
# for vireo's defaults.
#
# env: BENCH_REPS (boots per guest, default 1), BENCH_DURATION (wrk seconds
# per test, default 5), BENCH_MEM (-m of BOTH guests, default 256: the
# nginx peer under OVMF needs 160), BENCH_HARNESS (default ../shared/bench).
# Needs root (network namespaces and tap devices; traffic stays inside them).
set -uo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
cd "$root"
harness=${BENCH_HARNESS:-$root/../shared/bench}
harness=$(cd "$harness" 2>/dev/null && pwd) || { echo "bench-tls: harness not found (BENCH_HARNESS)" >&2; exit 1; }
reps=${BENCH_REPS:-1} dur=${BENCH_DURATION:-5} mem=${BENCH_MEM:-256}
[[ $reps =~ ^[0-9]+$ && $dur =~ ^[0-9]+$ && $mem =~ ^[0-9]+$ ]] ||
	{ echo "bench-tls: BENCH_REPS, BENCH_DURATION and BENCH_MEM must be numbers" >&2; exit 1; }
((EUID == 0)) || { echo "bench-tls: needs root (network namespaces, tap devices)" >&2; exit 1; }
make=${MAKE:-make}
out=$root/build/bench-tls
dir=$out/$(date -u +%Y%m%dT%H%M%SZ)
mkdir -p "$dir"
log() { echo "[bench-tls $(date +%H:%M:%S)] $*" >&2; }

log "building vireo with TLS=1 into $out"
$make -s TLS=1 BUILD=build/bench-tls/build all >"$dir/build.log" 2>&1 || { tail -30 "$dir/build.log"; exit 1; }
export BENCH_OUT=$root/build/bench
if [[ ! -r $BENCH_OUT/peer-linux/linux.efi || ! -r $BENCH_OUT/peer-linux-nginx/linux.efi ]]; then
	log "building the Linux and nginx peers (Debian packages; a few minutes)"
	"$harness/peer-linux/build.sh" >"$dir/peer-build.log" 2>&1 &&
		"$harness/peer-linux-nginx/build.sh" >>"$dir/peer-build.log" 2>&1 ||
		{ tail -30 "$dir/peer-build.log"; exit 1; }
fi

export UEFI_APP=$out/build/vireo.efi UEFI_NAME=vireo UEFI_MARKER='vireo: ready' UEFI_DHCP=1 UEFI_MEM=$mem UEFI_TLS_PORT=443
export VIREO_CMDLINE=${BENCH_VIREO_CMDLINE-https.handshakes=64 https.handshakes_per_source=64 https.handshake_rate_per_prefix=0 https.handshake_rate=0}
log "harness --tls: $reps rep(s) x 2 guests at -m $mem, wrk ${dur} s per test; vireo: ${VIREO_CMDLINE:-(defaults)}"
bash "$harness/run.sh" --tls --reps "$reps" --duration "$dur" --mem "$mem" --tag make-bench-tls \
	--results "$dir/harness.jsonl" "$harness/guests/linux-nginx-uefi.sh" "$root/tests/bench/vireo-uefi-tls.sh" \
	2> >(tee "$dir/harness.log" >&2) | tee "$dir/harness.txt"
rc=${PIPESTATUS[0]}
((rc == 0)) || log "harness: some boots failed (exit $rc, see $dir/harness.log)"
log "table in $dir/harness.txt"
exit "$rc"
