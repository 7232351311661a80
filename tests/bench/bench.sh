#!/usr/bin/env bash
# bench.sh — `make bench`: vireo against nginx on a minimal Linux, both booted
# through OVMF under identical QEMU settings (TCG), one table and a JSON file.
#
#   1. builds what is missing: vireo.efi / vireo.img, vireo.efi without the
#      synthesized 64 KiB file (APP_EXTRA=, for its size), and the shared
#      harness's Linux and nginx peers (their build.sh apt-installs Debian
#      packages; outputs under build/bench, never in the harness's folder);
#   2. runs the shared harness (run.sh) with the nginx peer first (the ratio
#      baseline) and vireo: boot time, keep-alive wrk at c1/c32 for 612 B and
#      64 KiB, QEMU memory;
#   3. boots each again through tests/bench/extra.py, on the same descriptors
#      and QEMU options: wrk with `Connection: close`, host CPU per request,
#      idle host CPU; for vireo /metrics deltas (interrupts, polls), its boot
#      timeline and memory counters; and vireo once more with coalesce=off
#      for the coalescing comparison (UDP echo ping-pong and flood, wrk);
#   4. tests/bench/summary.py prints the table and writes
#      build/bench/summary.json.
# Raw outputs stay in build/bench/<stamp>/ (and build/bench/runs/ for run.sh).
#
# env: BENCH_REPS (harness boots per guest, default 3), BENCH_DURATION (wrk
# seconds per test, default 10), BENCH_EXTRA_REPS (extra boots per kind,
# default 2), BENCH_HARNESS (default ../shared/bench from the project root),
# BENCH_MEM (guest -m in MiB for BOTH guests, default 256: the nginx peer
# under OVMF hangs at 128 and needs 160, so vireo runs at the peer's size;
# passed to run.sh as --mem and to extra.py as --mem), BENCH_CONNS (the
# harness's keep-alive wrk connection counts, default "1 32"; issue 29's
# rows: BENCH_CONNS="1 32 256 1000 10000", about 2 x 2 x 3 x BENCH_DURATION
# s more per rep; the harness accepts up to 10,000; past 1,000 the nginx
# peer is the harness's with worker_connections 10240 and
# worker_rlimit_nofile 20480 (its own 1,024 would refuse the rest): its UKI
# derived into build/bench/peer-linux-nginx-conns/, booted through
# tests/bench/nginx-uefi-conns.sh).
# Needs root (network namespaces and tap devices; all traffic stays inside them).
set -uo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
cd "$root"
harness=${BENCH_HARNESS:-$root/../shared/bench}
harness=$(cd "$harness" 2>/dev/null && pwd) || { echo "bench: harness not found (BENCH_HARNESS)" >&2; exit 1; }
reps=${BENCH_REPS:-3} dur=${BENCH_DURATION:-10} xreps=${BENCH_EXTRA_REPS:-2} mem=${BENCH_MEM:-256}
[[ $mem =~ ^[0-9]+$ ]] || { echo "bench: BENCH_MEM must be MiB" >&2; exit 1; }
conns=${BENCH_CONNS:-1 32}
[[ $conns =~ ^[0-9]+( [0-9]+)*$ ]] || { echo "bench: BENCH_CONNS is connection counts, e.g. \"1 32 256\"" >&2; exit 1; }
out=$root/build/bench
stamp=$(date -u +%Y%m%dT%H%M%SZ)
dir=$out/$stamp
make=${MAKE:-make}
((EUID == 0)) || { echo "bench: needs root (network namespaces, tap devices)" >&2; exit 1; }
for t in wrk curl ip busybox mkfs.vfat mcopy qemu-system-x86_64; do
	command -v "$t" >/dev/null || { echo "bench: missing $t (make deps-test; the peers' build.sh)" >&2; exit 1; }
done
mkdir -p "$dir"
t_start=$(date +%s)
log() { echo "[bench $(date +%H:%M:%S)] $*" >&2; }

# run (children in the background, so that a TERM reaches them at once) and
# bench_build_peers: shared with pvh_peer.sh.
# shellcheck source=tests/bench/peers.sh
. "$root/tests/bench/peers.sh"

# ---- 1. builds
log "building vireo without the 64 KiB benchmark file (for its size), then as served"
run $make -s APP_EXTRA= all >"$dir/build-noextra.log" 2>&1 || { cat "$dir/build-noextra.log"; exit 1; }
cp build/vireo.efi "$dir/vireo-noextra.efi"
${CC:-cc} -O2 -Wall -pthread -o "$out/udpstream" tests/bench/udpstream.c || { echo "bench: udpstream.c did not build" >&2; exit 1; }
run $make -s all image >"$dir/build.log" 2>&1 || { cat "$dir/build.log"; exit 1; }
export BENCH_OUT=$out
bench_build_peers "$dir/peer-build.log" peer-linux peer-linux-nginx -- \
	"$out/peer-linux/linux.efi" "$out/peer-linux-nginx/linux.efi"

# vireo as the harness's README quick start boots it, at the peer's -m
export UEFI_APP=$root/build/vireo.efi UEFI_NAME=vireo UEFI_MARKER='vireo: ready' UEFI_DHCP=1 UEFI_MEM=$mem
peer_desc=$harness/guests/linux-nginx-uefi.sh
vireo_desc=$harness/guests/uefi-app.sh
# more connections than the peer's worker_connections (1,024, less the
# listening sockets and the probes) hold: a copy with room for 10,240
maxc=$(tr ' ' '\n' <<<"$conns" | sort -n | tail -1)
if ((maxc > 1000)); then
	pc=$out/peer-linux-nginx-conns
	rm -rf "$pc" && mkdir -p "$pc/root/etc/nginx"
	sed -e 's/^\( *worker_connections\) 1024;.*/\1 10240;/' -e 's/^worker_processes 1;$/&\nworker_rlimit_nofile 20480;/' \
		"$harness/peer-linux-nginx/nginx.conf" >"$pc/root/etc/nginx/nginx.conf.in"
	grep -q 'worker_connections 10240;' "$pc/root/etc/nginx/nginx.conf.in" && grep -q '^worker_rlimit_nofile 20480;' "$pc/root/etc/nginx/nginx.conf.in" ||
		{ echo "bench: the harness's nginx.conf changed; cannot raise worker_connections" >&2; exit 1; }
	(cd "$pc/root" && printf 'etc\netc/nginx\netc/nginx/nginx.conf.in\n' | cpio -o -H newc -R 0:0 --quiet | gzip -n) >"$pc/extra.cpio.gz" ||
		{ echo "bench: cpio failed" >&2; exit 1; }
	bench_derive_uki "$out/peer-linux-nginx" "$pc" "$pc/extra.cpio.gz" || exit 1
	export NGINX_CONNS_EFI=$pc/linux.efi
	peer_desc=$root/tests/bench/nginx-uefi-conns.sh
	log "nginx peer with worker_connections 10240 (BENCH_CONNS up to $maxc): $pc/linux.efi"
fi

# ---- 2. the shared harness, nginx first (ratio baseline)
log "harness: $reps rep(s) x 2 guests at -m $mem, wrk ${dur} s per test"
run bash "$harness/run.sh" --reps "$reps" --duration "$dur" --mem "$mem" --conns "$conns" --tag make-bench --results "$dir/harness.jsonl" \
	"$peer_desc" "$vireo_desc" >"$dir/harness.txt" 2> >(tee "$dir/harness.log" >&2)
hrc=$?
((hrc == 0)) || log "harness: some boots failed (exit $hrc, see $dir/harness.log)"

# ---- 3. extra boots, interleaved per repetition
xrc=0
for ((i = 1; i <= xreps; i++)); do
	for role in peer vireo vireo-off; do
		# echo is off by default; the UDP figures measure the data path, so
		# the rate limit is lifted to 1,000,000 datagrams/s (docs/appliance.md)
		desc=$vireo_desc cmdline="echo=tcp,udp echo.udp_rate=1000000"
		[[ $role == peer ]] && desc=$peer_desc cmdline=""
		[[ $role == vireo-off ]] && cmdline="$cmdline coalesce=off"
		run python3 "$root/tests/bench/extra.py" --desc "$desc" --role "$role" --cmdline "$cmdline" --rep "$i" \
			--duration "$dur" --mem "$mem" --rundir "$dir/extra/$role-$i" --results "$dir/extra.jsonl" 2> >(tee -a "$dir/extra.log" >&2) ||
			{ xrc=1; log "extra boot $role $i failed (see $dir/extra.log)"; }
	done
done

# ---- 4. the table
elapsed=$(($(date +%s) - t_start))
BENCH_DIR=$harness run python3 "$root/tests/bench/summary.py" --harness "$dir/harness.jsonl" --extra "$dir/extra.jsonl" \
	--out "$dir/summary.json" --elapsed "$elapsed" --conns "$conns" \
	--meta "reps=$reps" --meta "extra_reps=$xreps" --meta "duration_s=$dur" --meta "mem_mib=$mem" --meta "conns=$conns" --meta "rev=$(git rev-parse --short=12 HEAD)" \
	--size "EFI application (vireo.efi; peer: UKI linux.efi)=build/vireo.efi:$out/peer-linux-nginx/linux.efi" \
	--size "vireo.efi without the 64 KiB file (APP_EXTRA=)=$dir/vireo-noextra.efi" \
	--size "boot disk, allocated (vireo.img; peer: esp.img)=build/vireo.img:$out/peer-linux-nginx/esp.img@alloc" |
	tee "$dir/summary.txt"
src=${PIPESTATUS[0]}	# non-zero also when the guests ran at different -m
cp "$dir/summary.json" "$out/summary.json"
echo
echo "make bench: $((elapsed / 60)) min $((elapsed % 60)) s; raw outputs in $dir, JSON in $out/summary.json"
((hrc == 0 && xrc == 0 && src == 0))
