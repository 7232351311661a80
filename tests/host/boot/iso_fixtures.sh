#!/usr/bin/env bash
# iso_fixtures.sh OUTDIR — the ISO 9660 seeds test_iso9660 reads, made by the
# tools the clouds use, with their default options (docs/appliance.md,
# "Per-instance seeds"):
#   cidata-localds.iso  cloud-localds (genisoimage -volid cidata -joliet -rock)
#   config2-nova.iso    OpenStack nova's config drive (genisoimage -ldots
#                       -allow-lowercase -allow-multidot -l -J -r -V config-2)
#   cidata-rr.iso       Rock Ridge only (genisoimage -R, as Proxmox makes it)
#   cidata-joliet.iso   Joliet only (genisoimage -J)
#   cidata-xorriso.iso  xorriso -as mkisofs -J -R
#   cidata-plain.iso    neither (plain ISO 9660 level 1 names)
# and the expected contents beside them (user-data, meta-data).
set -euo pipefail
out=$(realpath -m "$1")
rm -rf "$out"
mkdir -p "$out/nocloud" "$out/config2/openstack/latest" "$out/config2/ec2/latest"
printf 'http=8081\n# a comment\nip = 10.0.0.5/24\n' >"$out/nocloud/user-data"
printf 'instance-id: iid-local01\nlocal-hostname: vireo-1\n' >"$out/nocloud/meta-data"
head -c 5000 /dev/zero | tr '\0' 'x' >"$out/nocloud/big-file"
cp "$out/nocloud/user-data" "$out/config2/openstack/latest/user_data"
printf '{"uuid": "d8e02d56-2648-49a3-bf97-6be8f1204f38", "name": "vireo-1"}\n' \
	>"$out/config2/openstack/latest/meta_data.json"
printf '{"links": [], "networks": [], "services": []}\n' >"$out/config2/openstack/latest/network_data.json"
printf 'instance-id: i-1\n' >"$out/config2/ec2/latest/meta-data.json"
cd "$out/nocloud"
q=(-quiet -input-charset utf-8)
# cloud-localds's own line (cloud-image-utils), so no dependency on the script
genisoimage "${q[@]}" -output ../cidata-localds.iso -volid cidata -joliet -rock user-data meta-data big-file
genisoimage "${q[@]}" -output ../cidata-rr.iso -iso-level 3 -R -V cidata user-data meta-data
genisoimage "${q[@]}" -output ../cidata-joliet.iso -J -V cidata user-data meta-data
genisoimage "${q[@]}" -output ../cidata-plain.iso -V cidata user-data meta-data
xorriso -as mkisofs -quiet -o ../cidata-xorriso.iso -J -R -V cidata user-data meta-data 2>/dev/null
cd ../config2
genisoimage "${q[@]}" -output ../config2-nova.iso -ldots -allow-lowercase -allow-multidot -l \
	-publisher "OpenStack Compute" -J -r -V config-2 . 2>/dev/null  # it warns about -l and lowercase
touch "$out/stamp"
