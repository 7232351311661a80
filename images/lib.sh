# images/lib.sh — helpers the image scripts source (not run on its own).
# shellcheck shell=bash
#
# Everything here is made without root (mkfs.fat, mtools, sgdisk) and
# reproducibly: file and directory times are SOURCE_DATE_EPOCH (mtools honours
# it), the FAT volume id and the GPT GUIDs are fixed, files go in in the order
# given. FAT keeps local time, so the time zone is fixed too; file modes never
# reach an image (FAT has none, the ISO uses xorriso -r).

: "${SOURCE_DATE_EPOCH:=0}"
export SOURCE_DATE_EPOCH MTOOLS_SKIP_CHECK=1 TZ=UTC
MiB=$((1 << 20))

# The fixed identities of every vireo disk. The ESP's partition GUID is the
# same in every image: nothing looks it up, and it keeps images comparable.
DISK_GUID=76697265-6f00-4000-8000-000000000001
ESP_GUID=76697265-6f00-4000-8000-000000000002
FAT_VOLID=56495245	# "VIRE"

# mktmp: a private scratch directory removed on exit; sets $tmp.
mktmp() {
	tmp=$(mktemp -d "${TMPDIR:-/tmp}/vireo-img.XXXXXX")
	trap 'rm -rf "$tmp"' EXIT
}

# human BYTES: "3.0 MiB" / "85 KiB" for the size lines the builders print.
human() {
	local b=$1
	if ((b >= MiB)); then
		printf '%d.%d MiB' $((b / MiB)) $((b % MiB * 10 / MiB))
	else
		printf '%d KiB' $(((b + 1023) / 1024))
	fi
}

# report LABEL FILE [NOTE]: one "  LABEL   FILE (SIZE[; N allocated][, NOTE])"
# line: sparse files also say how much they really occupy.
report() {
	local label=$1 f=$2 note=${3:-} size used
	size=$(stat -c %s "$f")
	used=$(($(stat -c %b "$f") * $(stat -c %B "$f")))
	if ((used + 65536 < size)); then
		note="$(human "$used") allocated${note:+, $note}"
	fi
	printf '  %-7s %s (%s%s)\n' "$label" "$f" "$(human "$size")" "${note:+; $note}"
}

# esp_mib FILE...: whole MiB a FAT ESP needs for these files: their sizes
# rounded up to 4 KiB, plus 1 MiB for FAT metadata and slack, at least 2 MiB.
# mkfs.fat picks FAT12 at these sizes. The UEFI spec asks for FAT32 on fixed
# disks; EDK2's FAT driver, which OVMF and the clouds' EDK2-derived firmware
# use, reads FAT12/16/32 alike (the tests boot these images under OVMF).
esp_mib() {
	local f total=0 s
	for f; do
		s=$(stat -c %s "$f")
		total=$((total + (s + 4095) / 4096 * 4096))
	done
	local mib=$(((total + MiB - 1) / MiB + 1))
	((mib < 2)) && mib=2
	echo "$mib"
}

# make_esp OUT MIB SRC=DEST...: a FAT image of MIB MiB holding each SRC at the
# absolute path DEST (parents created). Times are SOURCE_DATE_EPOCH.
make_esp() {
	local out=$1 mib=$2 pair src dest d part parts made=" "
	shift 2
	rm -f "$out"
	mkfs.fat -C --invariant -n VIREO -i "$FAT_VOLID" "$out" $((mib * 1024)) >/dev/null
	for pair; do
		src=${pair%%=*} dest=${pair#*=} d=""
		IFS=/ read -ra parts <<<"${dest#/}"
		unset 'parts[-1]'
		for part in "${parts[@]}"; do
			d+="/$part"
			[[ $made == *" $d "* ]] && continue
			mmd -i "$out" "::$d"
			made+="$d "
		done
		# mcopy -m keeps the source's mtime: copy through a file we date.
		cp "$src" "$out.file"
		touch -d "@$SOURCE_DATE_EPOCH" "$out.file"
		mcopy -m -i "$out" "$out.file" "::$dest"
		rm -f "$out.file"
	done
}

# make_disk ESP OUT: a GPT disk whose only partition is ESP. 1 MiB in front for
# the protective MBR and primary GPT (the partition starts 1 MiB-aligned), the
# ESP, 1 MiB behind for the backup GPT: a whole number of MiB, which is what
# Azure wants of a VHD and what every other format is happy with.
make_disk() {
	local esp=$1 out=$2 esp_sectors
	esp_sectors=$(($(stat -c %s "$esp") / 512))
	rm -f "$out"
	truncate -s $(($(stat -c %s "$esp") + 2 * MiB)) "$out"
	sgdisk -o -U "$DISK_GUID" \
		-n 1:2048:$((2048 + esp_sectors - 1)) -t 1:EF00 -c 1:"EFI System" \
		-u 1:"$ESP_GUID" "$out" >/dev/null
	dd if="$esp" of="$out" bs=512 seek=2048 conv=notrunc,sparse status=none
}

# esp_offset DISK: byte offset of partition 1 (the ESP) in a vireo disk, for
# mtools' "-i DISK@@OFFSET".
esp_offset() {
	local start
	start=$(sgdisk -i 1 "$1" 2>/dev/null | sed -n 's/^First sector: \([0-9]*\) .*/\1/p')
	[[ -n $start ]] || return 1
	echo $((start * 512))
}

# grub_quote TEXT: TEXT as one GRUB word. Plain words stay bare; anything else
# is single-quoted (GRUB's single quotes have no escapes, so ' is refused).
grub_quote() {
	local s=$1
	if [[ $s =~ ^[A-Za-z0-9=,._:/+@%-]+$ ]]; then
		printf '%s' "$s"
	elif [[ $s == *"'"* ]]; then
		echo "grub_quote: a single quote cannot be passed through grub.cfg: $s" >&2
		return 1
	else
		printf "'%s'" "$s"
	fi
}

# check_cmdline TEXT: what the kernel accepts from LoadOptions: printable
# ASCII (and tabs), under 1024 bytes.
check_cmdline() {
	local s=$1
	if ((${#s} >= 1024)); then
		echo "command line too long (${#s} bytes; the kernel keeps 1023)" >&2
		return 1
	fi
	if [[ -n $(printf '%s' "$s" | LC_ALL=C tr -d '\11\40-\176') ]]; then
		echo "command line must be printable ASCII: $s" >&2
		return 1
	fi
}

# grub_cfg CMDLINE [TIMEOUT]: vireo's GRUB menu (EFI/vireo/grub.cfg). The
# first entry passes CMDLINE; images/setcmdline.sh rewrites the line marked
# "vireo-cmdline" and the "set timeout" line, so keep their shape.
grub_cfg() {
	local cmdline=$1 timeout=${2:-0} word=""
	check_cmdline "$cmdline" || return 1
	[[ -n $cmdline ]] && word=" $(grub_quote "$cmdline")"
	cat <<CFG
# vireo's GRUB menu. images/setcmdline.sh IMAGE "..." rewrites the command line
# of the first entry (and --timeout N the timeout) inside a built image.
# GRUB passes the words after the file name to vireo as its EFI LoadOptions.

# Menus and messages on COM1 as well as on the firmware console.
serial --unit=0 --speed=115200
terminal_input serial console
terminal_output serial console

set default=vireo
# If the first entry fails to start, the second runs vireo with its defaults.
set fallback=vireo-defaults
set timeout_style=menu
set timeout=$timeout

menuentry 'vireo' --id vireo {
	echo 'grub: starting /EFI/vireo/vireo.efi'
	chainloader /EFI/vireo/vireo.efi$word # vireo-cmdline
}

menuentry 'vireo with built-in defaults (no command line)' --id vireo-defaults {
	echo 'grub: starting /EFI/vireo/vireo.efi without a command line'
	chainloader /EFI/vireo/vireo.efi
}
CFG
}
