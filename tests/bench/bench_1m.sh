#!/usr/bin/env bash
# bench_1m.sh — `make bench-1m`: a 1 MiB body side by side, vireo against
# the nginx peer, both booted through OVMF by the shared harness's run.sh as
# make bench boots them, with the harness's "large" file set to /1m.bin:
# keep-alive wrk at c1 and c32 on /index.html (612 B) and /1m.bin, first
# 200, QEMU memory. The harness prints the table with vireo/nginx ratios
# (nginx first: the baseline); raw files stay in build/bench-1m/<stamp>/.
#
# Neither default image serves a 1 MiB file, so both are derived here:
#   vireo: built into build/bench-1m/build with APP_EXTRA="64k.bin=65536
#     1m.bin=1048576" (synthesized at boot, byte i is i % 251; issue 15:
#     the 1 MiB file exists only in the benchmark build);
#   nginx: the harness's peer (build/bench/peer-linux-nginx, built by its
#     own build.sh when missing) with a second initramfs archive appended
#     to its initrd.img, holding /www/1m.bin with the same bytes (the kernel
#     unpacks concatenated cpio archives in order), and its UKI rebuilt the
#     way the harness's build.sh builds it (systemd-stub sections, 2 MiB
#     aligned), into build/bench-1m/peer-linux-nginx-1m/. The harness itself
#     is read-only and untouched: its www-content.sh writes only the two
#     files every peer serves, and run.sh takes the large file's path from
#     the descriptor (GUEST_LARGE_PATH), which tests/bench/nginx-uefi-1m.sh
#     and tests/bench/vireo-uefi-1m.sh set.
#
# env: BENCH_REPS (boots per guest, default 1), BENCH_DURATION (wrk seconds
# per test, default 5), BENCH_MEM (-m of BOTH guests, default 256),
# BENCH_HARNESS (default ../shared/bench). Needs root (network namespaces and
# tap devices; traffic stays inside them).
set -uo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
cd "$root" || exit 1
harness=${BENCH_HARNESS:-$root/../shared/bench}
harness=$(cd "$harness" 2>/dev/null && pwd) || { echo "bench-1m: harness not found (BENCH_HARNESS)" >&2; exit 1; }
reps=${BENCH_REPS:-1} dur=${BENCH_DURATION:-5} mem=${BENCH_MEM:-256}
[[ $reps =~ ^[0-9]+$ && $dur =~ ^[0-9]+$ && $mem =~ ^[0-9]+$ ]] ||
	{ echo "bench-1m: BENCH_REPS, BENCH_DURATION and BENCH_MEM must be numbers" >&2; exit 1; }
((EUID == 0)) || { echo "bench-1m: needs root (network namespaces, tap devices)" >&2; exit 1; }
for t in cpio gzip objcopy objdump python3; do
	command -v "$t" >/dev/null || { echo "bench-1m: missing $t" >&2; exit 1; }
done
make=${MAKE:-make}
out=$root/build/bench-1m
dir=$out/$(date -u +%Y%m%dT%H%M%SZ)
mkdir -p "$dir"
log() { echo "[bench-1m $(date +%H:%M:%S)] $*" >&2; }
# shellcheck source=tests/bench/peers.sh
. "$root/tests/bench/peers.sh"

# ---- vireo with /1m.bin, in a build directory of its own
log "building vireo with /1m.bin into $out/build"
mkdir -p "$out/build"
for d in lwip-src apt; do
	[[ -d build/$d && ! -d $out/build/$d ]] && cp -a "build/$d" "$out/build/"
done
run $make -s BUILD=build/bench-1m/build APP_EXTRA="64k.bin=65536 1m.bin=1048576" all >"$dir/build.log" 2>&1 ||
	{ tail -30 "$dir/build.log"; exit 1; }

# ---- the nginx peer with /www/1m.bin
export BENCH_OUT=$root/build/bench
peer=$BENCH_OUT/peer-linux-nginx
bench_build_peers "$dir/peer-build.log" peer-linux peer-linux-nginx -- \
	"$BENCH_OUT/peer-linux/linux.efi" "$peer/linux.efi"
p1m=$out/peer-linux-nginx-1m
rm -rf "$p1m" && mkdir -p "$p1m/root/www"
python3 -c 'import sys; sys.stdout.buffer.write(bytes(i % 251 for i in range(1 << 20)))' >"$p1m/root/www/1m.bin"
(cd "$p1m/root" && printf 'www\nwww/1m.bin\n' | cpio -o -H newc -R 0:0 --quiet | gzip -n) >"$p1m/extra.cpio.gz" ||
	{ echo "bench-1m: cpio failed" >&2; exit 1; }
bench_derive_uki "$peer" "$p1m" "$p1m/extra.cpio.gz" || exit 1
rm -rf "$p1m/root"

# ---- the harness, nginx first (ratio baseline)
export UEFI_MEM=$mem VIREO_1M_EFI=$out/build/vireo.efi NGINX_1M_EFI=$p1m/linux.efi
log "harness: $reps rep(s) x 2 guests at -m $mem, wrk ${dur} s per test, large file /1m.bin"
run bash "$harness/run.sh" --reps "$reps" --duration "$dur" --mem "$mem" --tag make-bench-1m \
	--results "$dir/harness.jsonl" "$root/tests/bench/nginx-uefi-1m.sh" "$root/tests/bench/vireo-uefi-1m.sh" \
	> >(tee "$dir/harness.txt") 2> >(tee "$dir/harness.log" >&2)
rc=$?
((rc == 0)) || log "harness: some boots failed (exit $rc, see $dir/harness.log)"
log "table in $dir/harness.txt"
exit "$rc"
