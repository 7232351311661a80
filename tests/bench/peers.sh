# shellcheck shell=bash
# peers.sh — sourced by tests/bench/bench.sh and pvh_peer.sh (not run on its
# own): the pieces both scripts share.
#   run CMD...   runs CMD in the background and waits for it, so that a TERM
#                to the script reaches CMD at once (the trap below)
#   bench_build_peers LOG PEER... -- FILE...
#                unless every FILE is readable, builds the shared harness's
#                PEERs in order ($harness/PEER/build.sh, which apt-installs
#                Debian packages: a few minutes), output to LOG; on a failure
#                prints LOG's tail and exits the script.
# Expects $harness and a log() function from the script that sources it.

child=""
trap '[[ -n $child ]] && kill -TERM "$child" 2>/dev/null; wait "$child" 2>/dev/null; exit 130' INT TERM HUP
run() {
	"$@" &
	child=$!
	wait "$child"
	local rc=$?
	child=""
	return $rc
}

bench_build_peers() {
	local logf=$1 peers=() f missing=0 p
	shift
	while (($#)) && [[ $1 != -- ]]; do
		peers+=("$1")
		shift
	done
	shift
	for f in "$@"; do
		[[ -r $f ]] || missing=1
	done
	((missing)) || return 0
	log "building the harness peers: ${peers[*]} (Debian packages; a few minutes)"
	: >"$logf"
	for p in "${peers[@]}"; do
		run "$harness/$p/build.sh" >>"$logf" 2>&1 || { tail -30 "$logf"; exit 1; }
	done
}
