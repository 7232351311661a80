#!/usr/bin/env bash
# fetch-mbedtls.sh [BUILD] — fetch Debian forky's mbedtls source package
# (mbedTLS 3.6 LTS, pinned below; docs/https.md#mbedtls-version-and-advisories
# says why this version and what to do when it leaves the archive), verify it and unpack it with Debian's
# patches applied into BUILD/mbedtls-src/mbedtls. BUILD defaults to "build".
# Invoked by net/tls/mbedtls.mk, only for builds with TLS. The fetch, the trust
# chain and the stamp are net/debsrc.sh's (shared with net/port/fetch-lwip.sh).
# vireo's own patches (net/tls/patches/, applied last) are kept to what
# the config header (net/tls/mbedtls_config.h), the _ALT hooks and the
# platform glue (net/tls/tls_port.c) cannot do: the TLS 1.3 server's cipher
# suite order, and a hook for the whole Montgomery ladder (X25519).
set -euo pipefail

DEB_SOURCE=mbedtls
DEB_VERSION=3.6.7-3
DEB_SUITE=forky
DEB_DSC_SHA256=a468f939a098d45c5a6f64ac91a5bb41ff188d5562edbcb37aaed59f767df25f
KEYRING=${LWIP_DEBIAN_KEYRING:-/usr/share/keyrings/debian-archive-keyring.gpg}

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
DEB_DIR=mbedtls-src
DEB_TREE=mbedtls
DEB_CHECK=(library/ssl_tls.c include/mbedtls/ssl.h include/mbedtls/build_info.h)
DEB_PATCHDIR=$here/patches
DEB_MIRROR=${LWIP_DEBIAN_MIRROR:-}
DEB_MIRROR_VAR=LWIP_DEBIAN_MIRROR
DEB_LABEL=mbedTLS
DEB_TOOL=fetch-mbedtls
DEB_SAY="MBEDTLS"
DEB_PIN_WHERE="DEB_SUITE, DEB_VERSION and DEB_DSC_SHA256 in net/tls/fetch-mbedtls.sh"
DEB_PIN_NEXT="review the new version's advisories, re-base net/tls/patches/ and update docs/https.md's advisory table; make check-docs checks they agree"

# shellcheck source=net/debsrc.sh
. "$here/../debsrc.sh"
debsrc_run "${1:-build}"
