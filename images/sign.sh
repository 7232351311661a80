#!/usr/bin/env bash
# sign.sh KEY CERT IN OUT — sign a UEFI binary for Secure Boot with sbsign
# (Debian's sbsigntool) and check the result with sbverify.
#
# KEY is a PEM private key, CERT its PEM certificate; the firmware must trust
# CERT (its db, or a KEK/PK-signed db entry). If KEY is encrypted, give its
# passphrase in KEY_PASS: a decrypted copy is made in a private temporary file
# and removed afterwards (sbsign itself can only ask on a terminal).
# Signatures carry no time stamp, so the same key signs byte-identically.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
# shellcheck source=images/lib.sh
. "$here/lib.sh"
(($# == 4)) || { echo "usage: [KEY_PASS=...] sign.sh KEY CERT IN OUT" >&2; exit 2; }
key=$1 cert=$2 in=$3 out=$4
for f in "$key" "$cert" "$in"; do
	[[ -r $f ]] || { echo "sign.sh: $f: not readable" >&2; exit 1; }
done
command -v sbsign >/dev/null || { echo "sign.sh: sbsign missing (apt-get install sbsigntool)" >&2; exit 1; }
mktmp

if [[ -n ${KEY_PASS:-} ]]; then
	(umask 077; openssl pkey -in "$key" -passin env:KEY_PASS -out "$tmp/key.pem")
	key=$tmp/key.pem
fi
# sbsign warns about data after the last PE section (GNU-EFI binaries carry
# some); it is covered by the signature all the same.
sbsign --key "$key" --cert "$cert" --output "$tmp/out.efi" "$in" 2>"$tmp/log" ||
	{ cat "$tmp/log" >&2; exit 1; }
sbverify --cert "$cert" "$tmp/out.efi" >/dev/null 2>"$tmp/log" ||
	{ cat "$tmp/log" >&2; echo "sign.sh: $out does not verify against $cert" >&2; exit 1; }
mv "$tmp/out.efi" "$out"
report SIGNED "$out" "$(openssl x509 -in "$cert" -noout -subject -nameopt oneline | sed 's/^subject= *//')"
