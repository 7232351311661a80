#!/bin/sh
# make bench-hs-cost's comparison: hs_cost (tests/bench/hs_cost.c) built
# twice for the host, BASE (every mbedTLS file -O2, frame pointers kept) and
# IMAGE (the image's flags per file: net/tls/mbedtls.mk's MBEDTLS_COLD at COLD_OPT,
# no frame pointers), run alternately REPS times; the best of each figure,
# and IMAGE's over BASE's (above 1: the image's flags are slower).
# Usage: hs_cost_cmp.sh BASE IMAGE [REPS]
set -eu
base=$1 image=$2 reps=${3:-5}
out=$(mktemp)
trap 'rm -f "$out"' EXIT
i=0
while [ "$i" -lt "$reps" ]; do
	"$base" | sed 's/^/base|/' >>"$out"
	"$image" | sed 's/^/image|/' >>"$out"
	i=$((i + 1))
done
echo "load: $(cut -d' ' -f1-3 /proc/loadavg); best of $reps runs each"
awk -F'|' '
	{ split($2, kv, ": "); v = kv[2] + 0; k = kv[1]
	  if (!(k in seen)) { seen[k] = 1; order[++n] = k }
	  key = $1 SUBSEP k; if (!(key in best) || v < best[key]) best[key] = v }
	END { printf "%-48s %9s %9s %7s\n", "", "-O2 (us)", "image", "ratio"
	      for (i = 1; i <= n; i++) { k = order[i]; b = best["base" SUBSEP k]; m = best["image" SUBSEP k]
		printf "%-48s %9.0f %9.0f %7.2f\n", k, b, m, b ? m / b : 0 } }' "$out"
