#!/usr/bin/env bash
# fetch-lwip.sh [BUILD] — fetch Debian trixie's lwip source package (pinned
# below), verify it and unpack it with Debian's patches applied into
# BUILD/lwip-src/lwip. BUILD defaults to "build". Invoked by net/port/lwip.mk.
# The fetch, the trust chain and the stamp are net/debsrc.sh's (shared with
# net/tls/fetch-mbedtls.sh). vireo's patches (net/port/patches/*.patch, -p1 against
# lwIP's top directory) are applied last; their contents are part of the stamp.
set -euo pipefail

DEB_SOURCE=lwip
DEB_VERSION=2.2.1+dfsg1-1+deb13u1
DEB_SUITE=trixie
DEB_DSC_SHA256=07ecb7122b2882a5265c6d1413947dd9a054d5ae25150b7042885d3f3d0b5aad
KEYRING=${LWIP_DEBIAN_KEYRING:-/usr/share/keyrings/debian-archive-keyring.gpg}

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
DEB_DIR=lwip-src
DEB_TREE=lwip
DEB_CHECK=(src/core/init.c src/include/lwip/init.h)
DEB_PATCHDIR=$here/patches
DEB_MIRROR=${LWIP_DEBIAN_MIRROR:-}
DEB_MIRROR_VAR=LWIP_DEBIAN_MIRROR
DEB_LABEL=lwIP
DEB_TOOL=fetch-lwip
DEB_SAY="LWIP   "
DEB_PIN_WHERE="DEB_VERSION and DEB_DSC_SHA256 in net/port/fetch-lwip.sh"

# shellcheck source=net/debsrc.sh
. "$here/../debsrc.sh"
debsrc_run "${1:-build}"
