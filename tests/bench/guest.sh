#!/usr/bin/env bash
# guest.sh DESCRIPTOR RUNDIR — read one of the shared harness's guest
# descriptors the way its run.sh does (same defaults, same variables), run
# its guest_prepare hook, and print the guest as one JSON object on stdout.
# tests/bench/extra.py uses it to boot a guest exactly as the harness would,
# for the measurements the harness does not make.
# Needs BENCH_DIR (the harness folder) and BENCH_OUT in the environment.
set -uo pipefail
desc=$1 rundir=$2
: "${BENCH_DIR:?}" "${BENCH_OUT:?}"
export BENCH_DIR BENCH_OUT BENCH_RUNDIR=$rundir
mkdir -p "$rundir"
# run.sh's defaults
GUEST_NAME="" GUEST_PORT=80 GUEST_READY_MARKER=READY GUEST_MEM=128
GUEST_SMALL_PATH=/index.html GUEST_LARGE_PATH=/64k.bin
GUEST_SMALL_BYTES="" GUEST_LARGE_BYTES=""
GUEST_IP=10.0.2.15 GUEST_HOST_IP=10.0.2.2 GUEST_PREFIX=24 GUEST_DHCP=0
GUEST_MAC=52:54:00:12:34:56 GUEST_NIC_OPTS="romfile=" GUEST_STOP=quit GUEST_STOP_TIMEOUT=15
GUEST_ARGS=() GUEST_CLEANUP_FILES=""
# shellcheck disable=SC1090
source "$desc" >&2 || { echo "guest.sh: descriptor $desc failed" >&2; exit 1; }
[[ -n $GUEST_NAME && ${#GUEST_ARGS[@]} -gt 0 ]] || { echo "guest.sh: $desc: no GUEST_NAME/GUEST_ARGS" >&2; exit 1; }
if declare -F guest_prepare >/dev/null; then
	guest_prepare >&2 || { echo "guest.sh: guest_prepare failed" >&2; exit 1; }
fi
{
	for v in GUEST_NAME GUEST_PORT GUEST_READY_MARKER GUEST_MEM GUEST_SMALL_PATH GUEST_LARGE_PATH \
		GUEST_IP GUEST_HOST_IP GUEST_PREFIX GUEST_DHCP GUEST_MAC GUEST_NIC_OPTS GUEST_STOP \
		GUEST_STOP_TIMEOUT GUEST_CLEANUP_FILES; do
		printf '%s\0%s\0' "$v" "${!v}"
	done
	printf 'GUEST_ARGS\0'
	printf '%s\0' "${GUEST_ARGS[@]}"
} | python3 -c '
import json, sys
f = sys.stdin.buffer.read().decode().split("\0")[:-1]
i = f.index("GUEST_ARGS")
d = dict(zip(f[0:i:2], f[1:i:2]))
d["GUEST_ARGS"] = f[i + 1:]
print(json.dumps(d))'
