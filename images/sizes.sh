#!/usr/bin/env bash
# sizes.sh FILE... — one line per image: its size and, for sparse files, what
# it really occupies. `make images` ends with it.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
# shellcheck source=images/lib.sh
. "$here/lib.sh"

for f; do
	report SIZE "$f"
done
