#!/usr/bin/env bash
# mkcloud.sh FORMAT DISK OUT — the files VM platforms and clouds import, made
# from a vireo raw disk (build/vireo-grub.img: on a cloud there is no fw_cfg,
# so the command line has to come from GRUB's menu on the disk).
#   qcow2   OUT.qcow2  compressed qcow2 (libvirt, OpenStack, Proxmox, QEMU)
#   gce     OUT.tar.gz disk.raw in a GNU (oldgnu) sparse tar, gzipped: what
#                      `gcloud compute images create --source-uri` takes. GCE
#                      wants a whole number of GiB, so disk.raw is padded to
#                      1 GiB (a hole: the tarball stays small)
#   azure   OUT.vhd    fixed VHD; Azure takes an upload of at least 20 MiB and
#                      a whole number of MiB (plus the 512-byte footer), so the
#                      disk is padded to 20 MiB (sparse on the build host)
#   aws     OUT.vmdk   streamOptimized VMDK for `aws ec2 import-snapshot`
#                      (compressed, not padded: EBS rounds up to whole GiB)
# Where the disk grows, the backup GPT moves to the new end (sgdisk -e).
# Outputs are reproducible: qemu-img's time stamps and random ids are fixed by
# images/normalize.py; the tar member has a fixed owner, mode and time
# (images/gcetar.py) and gzip -n stores no name or time.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
# shellcheck source=images/lib.sh
. "$here/lib.sh"
(($# == 3)) || { echo "usage: mkcloud.sh qcow2|gce|azure|aws DISK OUT" >&2; exit 2; }
format=$1 disk=$2 out=$3
mktmp

# padded SIZE: a copy of the disk grown to SIZE bytes with the backup GPT at
# the new end; prints its path.
padded() {
	local p=$tmp/disk.raw
	cp --sparse=always "$disk" "$p"
	if (($1 > $(stat -c %s "$p"))); then
		truncate -s "$1" "$p"
		sgdisk -e "$p" >/dev/null
	fi
	echo "$p"
}

case $format in
qcow2)
	# -m 1: one coroutine. With several, compressed clusters are appended
	# in completion order, which varies with load: not reproducible.
	qemu-img convert -m 1 -f raw -O qcow2 -c "$disk" "$tmp/out"
	mv "$tmp/out" "$out"
	report QCOW2 "$out" "virtual $(human "$(stat -c %s "$disk")")"
	;;
gce)
	raw=$(padded $((1 << 30)))
	# GCE documents `tar --format=oldgnu -Sczf`. gcetar.py writes the same
	# bytes as GNU tar given --hole-detection=raw (holes found by content,
	# not by how this host's file system allocated the file) and fixed
	# owner, mode and time — but reads only the allocated parts of the 1 GiB.
	python3 "$here/gcetar.py" "$raw" "$tmp/disk.tar"
	gzip -9n <"$tmp/disk.tar" >"$tmp/out"
	mv "$tmp/out" "$out"
	report GCE "$out" "disk.raw 1 GiB, sparse"
	;;
azure)
	size=$(stat -c %s "$disk")
	min=$((20 * MiB))
	((size < min)) && size=$min
	size=$(((size + MiB - 1) / MiB * MiB))
	raw=$(padded "$size")
	qemu-img convert -m 1 -f raw -O vpc -o subformat=fixed,force_size "$raw" "$tmp/out.vhd"
	python3 "$here/normalize.py" vhd "$tmp/out.vhd"
	mv "$tmp/out.vhd" "$out"
	report AZURE "$out" "fixed VHD, virtual $(human "$size")"
	;;
aws)
	# The descriptor names the file it was written as: write it under its
	# final name.
	mkdir "$tmp/aws"
	qemu-img convert -m 1 -f raw -O vmdk -o subformat=streamOptimized "$disk" "$tmp/aws/${out##*/}"
	python3 "$here/normalize.py" vmdk "$tmp/aws/${out##*/}"
	mv "$tmp/aws/${out##*/}" "$out"
	report AWS "$out" "streamOptimized VMDK, virtual $(human "$(stat -c %s "$disk")")"
	;;
*)
	echo "mkcloud.sh: unknown format '$format' (qcow2, gce, azure, aws)" >&2
	exit 2
	;;
esac
