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
#   bench_derive_uki PEER OUT ARCHIVE
#                writes OUT/linux.efi (and OUT/initrd.img): the UKI of the
#                harness's peer in directory PEER with the gzip'd cpio
#                ARCHIVE appended to its initrd.img (the kernel unpacks
#                concatenated archives in order, so ARCHIVE's files win),
#                rebuilt the way the harness's build.sh builds it
#                (systemd-stub sections, 2 MiB aligned); 1 on a failure.
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

bench_derive_uki() {
	local peer=$1 o=$2 archive=$3 stub=/usr/lib/systemd/boot/efi/linuxx64.efi.stub end
	[[ -r $stub ]] || { echo "bench: $stub missing (the harness's peer build installs systemd-boot-efi)" >&2; return 1; }
	mkdir -p "$o"
	cat "$peer/initrd.img" "$archive" >"$o/initrd.img" || return 1
	end=$(objdump -h "$stub" | awk 'NF==7 && $1 ~ /^[0-9]+$/ {print $3, $4}' |
		while read -r size vma; do echo $((0x$size + 0x$vma)); done | sort -n | tail -1)
	_up() { echo $((($1 + 2097151) / 2097152 * 2097152)); }
	local o_osrel o_cmdline o_initrd o_linux
	o_osrel=$(_up "$end")
	o_cmdline=$(_up $((o_osrel + $(stat -c %s "$peer/os-release"))))
	o_initrd=$(_up $((o_cmdline + $(stat -c %s "$peer/cmdline.txt"))))
	o_linux=$(_up $((o_initrd + $(stat -c %s "$o/initrd.img"))))
	objcopy \
		--add-section .osrel="$peer/os-release" --change-section-vma .osrel="$(printf 0x%x "$o_osrel")" \
		--add-section .cmdline="$peer/cmdline.txt" --change-section-vma .cmdline="$(printf 0x%x "$o_cmdline")" \
		--add-section .initrd="$o/initrd.img" --change-section-vma .initrd="$(printf 0x%x "$o_initrd")" \
		--add-section .linux="$peer/vmlinuz" --change-section-vma .linux="$(printf 0x%x "$o_linux")" \
		"$stub" "$o/linux.efi" || { echo "bench: objcopy failed" >&2; return 1; }
}
