# shellcheck shell=bash
# debsrc.sh — sourced, not run: fetch one pinned Debian source package,
# verify it and unpack it with Debian's patches (and vireo's own) applied.
# net/port/fetch-lwip.sh and net/tls/fetch-mbedtls.sh set the DEB_* variables below
# and call debsrc_run BUILD. debbin_fetch downloads one pinned binary
# package through the same kind of private apt configuration, for
# tools/fetch-pebble.sh and tools/qemu-current.sh.
#
#   DEB_SOURCE DEB_VERSION DEB_SUITE  the source package, pinned
#   DEB_DSC_SHA256   SHA256 of its .dsc
#   DEB_DIR          BUILD/<DEB_DIR> holds dl/, the tree and the stamp
#   DEB_TREE         the tree's directory name under BUILD/<DEB_DIR>
#   DEB_CHECK        array: paths the unpacked tree must hold (the first one
#                    also says "already unpacked" together with the stamp)
#   DEB_PATCHDIR     directory of -p1 patches applied last (may be empty)
#   DEB_MIRROR       archive URI override (empty: the machine's own mirror)
#   DEB_MIRROR_VAR   the environment variable a user sets for that
#   DEB_LABEL, DEB_TOOL, DEB_SAY, DEB_PIN_WHERE   names for messages
#   DEB_PIN_NEXT     optional: what else a re-pin involves (named when the
#                    pinned version is gone from the suite)
#   KEYRING          the Debian archive keyring
#
# Trust chain, outermost first:
#  1. apt fetches the suite's InRelease from the Debian archive mirror this
#     machine already uses and checks its OpenPGP signature against the
#     Debian archive keyring (signed-by= in the private sources list; no other
#     key is trusted).
#  2. apt checks the Sources index against the hashes in that InRelease, and
#     each downloaded file against the hashes in the Sources index.
#  3. This script checks the .dsc against DEB_DSC_SHA256 (pinned by the
#     caller, so a rebuild months later gets the same bytes or stops) and the
#     tarballs against the .dsc's Checksums-Sha256 field.
# Step 3 alone makes the result tamper-evident; 1-2 make sure what we pinned
# came from Debian in the first place.
#
# The machine's own apt state is never touched: sources list, lists, cache,
# status and preferences all live under BUILD/apt/ (shared by every package
# fetched this way, so two fetches must not run at once: the make rules order
# them), and only the mirror URI is read from the machine's configuration.
# The fetch is idempotent: a finished unpack is recorded in
# BUILD/<DEB_DIR>/stamp and kept; downloaded files are kept in
# BUILD/<DEB_DIR>/dl/ and reused without the network.

say() { echo "  $DEB_SAY $*"; }
die() { echo "$DEB_TOOL: $*" >&2; exit 1; }

# The Debian archive URI that serves this machine's own release (e.g. the
# bookworm main entry), from one-line .list files and deb822 .sources files.
mirror_uri() {
local codename sl sp f
# shellcheck disable=SC1091
codename=$(. /etc/os-release 2>/dev/null && echo "${VERSION_CODENAME:-}")
codename=${codename:-bookworm}
eval "$(apt-config shell sl Dir::Etc::sourcelist/f sp Dir::Etc::sourceparts/d)"
for f in "$sl" "$sp"*.list "$sp"*.sources; do
	[[ -f $f ]] || continue
	case $f in
	*.sources)
		awk -v suite="$codename" '
		function flush() {
			if (types ~ /(^| )deb(-src)?( |$)/ && (" " suites " ") ~ (" " suite " ") &&
			    (" " comps " ") ~ / main / && tolower(enabled) != "no" && uris != "") {
				split(uris, u, " "); print u[1]; found = 1; exit
			}
			types = suites = comps = uris = enabled = ""
		}
		/^[ \t]*#/ { next }
		/^[ \t]*$/ { flush(); next }
		{
			key = tolower($1); sub(/:$/, "", key); $1 = ""; sub(/^ +/, "")
			if (key == "types") types = $0
			else if (key == "uris") uris = $0
			else if (key == "suites") suites = $0
			else if (key == "components") comps = $0
			else if (key == "enabled") enabled = $0
		}
		END { if (!found) flush() }' "$f"
		;;
	*)
		# deb [options] URI SUITE COMPONENT...
		sed -e 's/#.*//' -e 's/\[[^]]*\]//' "$f" | awk -v suite="$codename" '
		($1 == "deb" || $1 == "deb-src") && $3 == suite {
			for (i = 4; i <= NF; i++) if ($i == "main") { print $2; exit }
		}'
		;;
	esac
done | head -n1
}

# DEB_APT: apt-get's options for a private configuration under APTDIR,
# with its state emptied (no installed packages). Everything apt reads or
# writes points there, except transport settings (proxies) that stay the
# machine's business.
deb_apt_opts() { # APTDIR
	local ab=$1
	mkdir -p "$ab/lists/partial" "$ab/cache/archives/partial" "$ab/state"
	: >"$ab/state/status"
	DEB_APT=(
		-o "Dir::Etc::sourcelist=$ab/sources.list"
		-o "Dir::Etc::sourceparts=-"
		-o "Dir::Etc::preferences=$ab/preferences"
		-o "Dir::Etc::preferencesparts=-"
		-o "Dir::Etc::trusted=$ab/trusted.gpg"
		-o "Dir::Etc::trustedparts=-"
		-o "Dir::State=$ab/state"
		-o "Dir::State::lists=$ab/lists"
		-o "Dir::State::status=$ab/state/status"
		-o "Dir::Cache=$ab/cache"
		-o "Acquire::Languages=none"
	)
}

# True if FILE exists and hashes to SHA256.
deb_sha_ok() { # FILE SHA256
	[[ -f $1 ]] && [[ "$(sha256sum "$1" | cut -d' ' -f1)" == "$2" ]]
}

# Downloads the binary package PACKAGE=VERSION (amd64, or "all") from
# SUITE's main component to DEB (apt's name for it: PACKAGE_VERSION_ARCH.deb;
# DEB's folder is emptied first) and checks it against SHA256; dies if any
# step fails. The trust chain is the source fetch's, with the suite's
# Packages index in place of Sources: InRelease against KEYRING, the index
# against InRelease, the .deb against the index (apt), then against the pin.
# The private apt configuration lives under APTDIR; the mirror is
# $DEB_MIRROR, else mirror_uri. Messages name DEB_TOOL, DEB_SAY,
# DEB_MIRROR_VAR and DEB_PIN_WHERE (where the version and SHA256 are pinned).
debbin_fetch() { # SUITE PACKAGE VERSION SHA256 DEB APTDIR
	local suite=$1 pkg=$2 ver=$3 sha=$4 deb=$5 ab=$6
	local dl uri now apt
	dl=$(dirname "$deb")
	uri=${DEB_MIRROR:-$(mirror_uri)}
	[[ -n $uri ]] || die "no Debian archive entry for this release's main component in the apt sources; set ${DEB_MIRROR_VAR:-LWIP_DEBIAN_MIRROR}=<archive URI>"
	[[ -r $KEYRING ]] || die "$KEYRING missing; install the Debian package debian-archive-keyring"
	rm -rf "$dl"
	mkdir -p "$dl"
	deb_apt_opts "$ab"
	apt=("${DEB_APT[@]}" -o "APT::Architecture=amd64" -o "APT::Architectures=amd64")
	echo "deb [signed-by=$KEYRING] $uri $suite main" >"$ab/sources.list"
	say "apt-get download $pkg=$ver ($suite main, binary index from $uri)"
	apt-get "${apt[@]}" -q=2 update --error-on=any >"$ab/update.log" 2>&1 ||
		{ sed 's/^/    /' "$ab/update.log" >&2; die "cannot fetch $suite's binary index from $uri (offline?)"; }
	# Run as root, apt downloads as _apt: let it write into the folder.
	((EUID != 0)) || ! id -u _apt >/dev/null 2>&1 || chown _apt "$dl"
	(cd "$dl" && apt-get "${apt[@]}" -q=2 download "$pkg=$ver") >"$ab/download.log" 2>&1 || {
		sed 's/^/    /' "$ab/download.log" >&2
		now=$(apt-cache "${apt[@]}" show "$pkg" 2>/dev/null | awk '/^Version:/ { print $2 }' | tr '\n' ' ')
		die "cannot download $pkg $ver from $suite (it has: ${now:-nothing}); re-pin ${DEB_PIN_WHERE:-its version and SHA256} after reviewing"
	}
	((EUID != 0)) || chown -R "$(id -u):$(id -g)" "$dl"
	deb_sha_ok "$deb" "$sha" || die "$(basename "$deb") does not match the pinned SHA256; refusing to use it"
}

debsrc_run() {
local build=${1:-build}
mkdir -p "$build"
build=$(cd "$build" && pwd)
top=$build/$DEB_DIR
dl=$top/dl
tree=$top/$DEB_TREE
stamp=$top/stamp
aptdir=$build/apt
dsc=${DEB_SOURCE}_${DEB_VERSION#*:}.dsc
# vireo's own changes, applied in name order after Debian's. Their
# contents are part of the stamp: editing, adding or removing a patch
# unpacks the tree afresh (from dl/, no network) and applies them all again.
patchdir=${DEB_PATCHDIR:-}
patches=()
if [[ -n $patchdir && -d $patchdir ]]; then
	shopt -s nullglob
	patches=("$patchdir"/*.patch)
	shopt -u nullglob
fi
patchsum=$(for f in "${patches[@]}"; do basename "$f"; cat "$f"; done | sha256sum | cut -c1-16)
want="$DEB_SOURCE $DEB_VERSION $DEB_DSC_SHA256 patches ${#patches[@]} $patchsum"


# Already unpacked from the pinned .dsc: refresh the stamp for make and stop.
if [[ -f $stamp && -e $tree/${DEB_CHECK[0]} && "$(cat "$stamp")" == "$want" ]]; then
	touch "$stamp"
	return 0
fi

for tool in apt-get dpkg-source sha256sum patch; do
	command -v "$tool" >/dev/null ||
		die "$tool not found; install the Debian packages apt, dpkg-dev and coreutils"
done

# The .dsc is good if it hashes to the pin and every file it lists is present
# and hashes to what it says.
verify_dl() {
	local sum rest
	[[ -f $dl/$dsc ]] || return 1
	read -r sum rest < <(sha256sum "$dl/$dsc")
	if [[ $sum != "$DEB_DSC_SHA256" ]]; then
		echo "$DEB_TOOL: $dsc has SHA256 $sum, pinned $DEB_DSC_SHA256" >&2
		return 2
	fi
	# Checksums-Sha256 lines: " <sha256> <size> <name>" until the next field.
	awk '/^Checksums-Sha256:/ { on = 1; next }
	     on && /^ / { print $1 "  " $3; next }
	     { on = 0 }' "$dl/$dsc" >"$dl/SHA256SUMS"
	[[ -s $dl/SHA256SUMS ]] || { echo "$DEB_TOOL: $dsc lists no SHA256 checksums" >&2; return 2; }
	(cd "$dl" && sha256sum --quiet --strict -c SHA256SUMS) >&2 || return 2
}

fetch() {
	local uri
	uri=${DEB_MIRROR:-$(mirror_uri)}
	[[ -n $uri ]] || die "no Debian archive entry for this release's main component in the apt sources; set $DEB_MIRROR_VAR=<archive URI>"
	[[ -r $KEYRING ]] || die "$KEYRING missing; install the Debian package debian-archive-keyring"

	local apt
	mkdir -p "$dl"
	deb_apt_opts "$aptdir"
	apt=("${DEB_APT[@]}" -o "APT::Get::Only-Source=true")
	echo "deb-src [signed-by=$KEYRING] $uri $DEB_SUITE main" >"$aptdir/sources.list"

	say "apt-get update ($DEB_SUITE main sources from $uri)"
	if ! apt-get "${apt[@]}" -q=2 update --error-on=any >"$aptdir/update.log" 2>&1; then
		sed 's/^/    /' "$aptdir/update.log" >&2
		if grep -q -e NO_PUBKEY -e EXPKEYSIG -e 'not signed' -e 'signatures were invalid' "$aptdir/update.log"; then
			die "the $DEB_SUITE Release file does not verify against $KEYRING; update the Debian package debian-archive-keyring"
		fi
		die "cannot fetch the $DEB_SUITE source index from $uri (offline, or $DEB_SUITE is no longer in the archive?). $DEB_LABEL's source is needed once: retry with the network up, or put $dsc and its tarballs into $dl/; if $DEB_SUITE is gone, re-pin $DEB_PIN_WHERE to a suite that ships it, after reviewing the change"
	fi

	# Run as root, apt downloads as the unprivileged _apt user: let it write
	# into dl/ for the download, then take the files back.
	local sandbox=
	if ((EUID == 0)) && id -u _apt >/dev/null 2>&1; then
		sandbox=_apt
		chown _apt "$dl"
	fi
	say "apt-get source $DEB_SOURCE=$DEB_VERSION"
	if ! (cd "$dl" && apt-get "${apt[@]}" -q=2 source --download-only \
		"$DEB_SOURCE=$DEB_VERSION") >"$aptdir/source.log" 2>&1; then
		sed 's/^/    /' "$aptdir/source.log" >&2
		local now
		now=$(apt-cache "${apt[@]}" showsrc "$DEB_SOURCE" 2>/dev/null | awk '/^Version:/ { print $2 }' | tr '\n' ' ')
		die "cannot download $DEB_SOURCE $DEB_VERSION from $DEB_SUITE (the suite now has: ${now:-nothing}); no other version is used in its place. If Debian replaced it, re-pin $DEB_PIN_WHERE after reviewing the change${DEB_PIN_NEXT:+ ($DEB_PIN_NEXT)}, or put $dsc and its tarballs (a copy kept from an earlier fetch) into $dl/"
	fi
	[[ -z $sandbox ]] || chown -R "$(id -u):$(id -g)" "$dl"
}

rc=0
verify_dl || rc=$?
if ((rc != 0)); then
	# A mismatching or partial download is discarded and fetched again once.
	rm -rf "$dl"
	fetch
	verify_dl || die "downloaded $dsc does not match the pinned SHA256 or its own checksums; refusing to use it"
fi
say "verified $dsc (SHA256 pinned) and its tarballs"

# dpkg-source unpacks the upstream tarball and applies debian/patches. Its own
# checksum and OpenPGP checks are skipped (--no-check): the checksums were
# verified above against the pinned .dsc, and the maintainer's key is in
# debian-keyring, which the pin makes unnecessary.
rm -rf "$tree" "$tree.tmp" "$stamp"
if ! dpkg-source --no-check --no-copy -x "$dl/$dsc" "$tree.tmp" >"$top/extract.log" 2>&1; then
	sed 's/^/    /' "$top/extract.log" >&2
	rm -rf "$tree.tmp"
	die "dpkg-source could not unpack $dsc"
fi
for f in "${DEB_CHECK[@]}"; do
	[[ -e $tree.tmp/$f ]] || { rm -rf "$tree.tmp"; die "$dsc unpacked without $DEB_LABEL's $f"; }
done
for f in "${patches[@]}"; do
	if ! patch -d "$tree.tmp" -p1 --forward --batch --no-backup-if-mismatch <"$f" >"$top/patch.log" 2>&1; then
		sed 's/^/    /' "$top/patch.log" >&2
		rm -rf "$tree.tmp"
		die "$(basename "$f") does not apply to $DEB_SOURCE $DEB_VERSION"
	fi
done
mv "$tree.tmp" "$tree"
echo "$want" >"$stamp"
local nseries
nseries=$(grep -c . "$tree/debian/patches/series" 2>/dev/null || true)
say "unpacked $DEB_SOURCE $DEB_VERSION into $tree (${nseries:-0} Debian patches, ${#patches[@]} of vireo's applied)"
}
