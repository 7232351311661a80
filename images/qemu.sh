#!/usr/bin/env bash
# qemu.sh — boot a vireo image under OVMF with the serial console on stdio.
#   --image FILE     disk image (default build/vireo.img)
#   --kernel FILE    boot this PVH ELF (build/vireo.elf) with QEMU's -kernel
#                    instead: no OVMF, no disk (SeaBIOS on q35/pc loads it);
#                    --cmdline goes to -append
#   --microvm        QEMU's microvm machine (no PCI, no firmware tables:
#                    acpi=off) booting --kernel (default build/vireo.elf);
#                    devices are virtio-mmio (modern; QEMU adds their
#                    virtio_mmio.device= to the command line); --port's NIC
#                    is a virtio-net-device
#   --format F       raw, qcow2, vpc (VHD), vmdk; default from the file name
#                    (.qcow2, .vhd, .vmdk; anything else is raw)
#   --cdrom          attach the image as a CD-ROM (build/vireo.iso) instead of
#                    a virtio disk
#   --secboot        Secure Boot enforced: OVMF_CODE_4M.secboot.fd with SMM and
#                    a copy of OVMF_VARS_4M.snakeoil.fd, whose PK, KEK and db
#                    hold Debian's test key (/usr/share/ovmf/PkKek-1-snakeoil.*)
#   --vars FILE      start from this OVMF variable store instead (a copy is
#                    used; the file is never written)
#   --mem MIB        guest memory (default 64; OVMF needs at least 48)
#   --cmdline STR    kernel command line, passed through fw_cfg opt/vireo/cmdline
#   --machine TYPE   q35 (default) or pc
#   --accel A        auto (KVM if it really runs guests here, else TCG), kvm, tcg
#   --port N         a virtio-net NIC on QEMU's user network (DHCP), with host
#                    TCP port N on 127.0.0.1 forwarded to the guest's HTTP port
#   --guest-port P   the guest's HTTP port for --port (default 80; http=P)
#   --tls-port N     with --port: also host TCP port N to the guest's HTTPS port
#   --guest-tls-port P  the guest's HTTPS port for --tls-port (default 443; https=P)
#   --fwd PROTO:HOST-:GUEST  with --port: one more forward on 127.0.0.1, e.g.
#                    udp:5353-:53 (apps/dns); may be given more than once
#   --disk FILE      a data disk: FILE (raw) as a virtio-blk disk with the
#                    serial vireo-data, which the store formats if blank and
#                    keeps data on (docs/storage.md; make disk makes one)
#   --print          print the QEMU command instead of running it
# Anything after the options is passed to QEMU unchanged (QEMU_OPTS).
# VIREO_QEMU_SH_OPTS (split on spaces) adds options before the command line's,
# for callers that cannot add their own (tests/qemu/vm.py: --cdrom, --secboot).
# VIREO_QEMU names the QEMU binary (default qemu-system-x86_64 from PATH;
# tests/matrix/test_qemu_current.py points it at `make qemu-current`'s).
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
qemu=${VIREO_QEMU:-qemu-system-x86_64}
if [[ -n ${VIREO_QEMU_SH_OPTS:-} ]]; then
	read -ra env_opts <<<"$VIREO_QEMU_SH_OPTS"
	set -- "${env_opts[@]}" "$@"
fi
image=build/vireo.img mem=64 cmdline="" machine=q35 accel=${ACCEL:-auto} port="" guest_port=80 tls_port="" guest_tls_port=443 print=0
format="" cdrom=0 secboot=0 vars_src="" kernel="" microvm=0 fwd="" disk=""
while (($#)); do
	case $1 in
	--image) image=$2; shift 2 ;;
	--kernel) kernel=$2; shift 2 ;;
	--microvm) microvm=1; shift ;;
	--format) format=$2; shift 2 ;;
	--cdrom) cdrom=1; shift ;;
	--secboot) secboot=1; shift ;;
	--vars) vars_src=$2; shift 2 ;;
	--mem) mem=$2; shift 2 ;;
	--cmdline) cmdline=$2; shift 2 ;;
	--machine) machine=$2; shift 2 ;;
	--accel) accel=$2; shift 2 ;;
	--port) port=$2; shift 2 ;;
	--guest-port) guest_port=$2; shift 2 ;;
	--tls-port) tls_port=$2; shift 2 ;;
	--guest-tls-port) guest_tls_port=$2; shift 2 ;;
	--fwd)
		[[ $2 =~ ^(tcp|udp):[0-9]+-:[0-9]+$ ]] || { echo "qemu.sh: --fwd wants PROTO:HOSTPORT-:GUESTPORT, not '$2'" >&2; exit 2; }
		fwd+=",hostfwd=${2%%:*}:127.0.0.1:${2#*:}"; shift 2 ;;
	--disk) disk=$2; shift 2 ;;
	--print) print=1; shift ;;
	-h | --help) sed -n '2,/^set -eu/{/^set -eu/d;s/^# \{0,1\}//;p}' "$0"; exit 0 ;;
	--) shift; break ;;
	*) break ;;
	esac
done

ovmf_code=/usr/share/OVMF/OVMF_CODE_4M.fd
ovmf_vars=/usr/share/OVMF/OVMF_VARS_4M.fd
if ((secboot)); then
	ovmf_code=/usr/share/OVMF/OVMF_CODE_4M.secboot.fd
	ovmf_vars=/usr/share/OVMF/OVMF_VARS_4M.snakeoil.fd
fi
[[ -n $vars_src ]] && ovmf_vars=$vars_src
[[ -r $ovmf_vars ]] || { echo "qemu.sh: $ovmf_vars missing (apt-get install ovmf)" >&2; exit 1; }
if [[ -z $format ]]; then
	case $image in
	*.qcow2) format=qcow2 ;;
	*.vhd) format=vpc ;;
	*.vmdk) format=vmdk ;;
	*) format=raw ;;
	esac
fi
if ((microvm)); then
	[[ -z $kernel ]] && kernel=build/vireo.elf
	machine=microvm,acpi=off
fi
if [[ -n $kernel ]]; then
	[[ -r $kernel ]] || { echo "qemu.sh: kernel $kernel missing (make elf)" >&2; exit 1; }
	((cdrom || secboot)) && { echo "qemu.sh: --kernel boots without firmware or disk: no --cdrom/--secboot" >&2; exit 1; }
	[[ $accel == auto ]] && accel=tcg	# the KVM probe below boots the disk image
else
	[[ -r $ovmf_code ]] || { echo "qemu.sh: $ovmf_code missing (apt-get install ovmf)" >&2; exit 1; }
	[[ -r $image ]] || { echo "qemu.sh: image $image missing (make image)" >&2; exit 1; }
fi

kvm_works() {
	# KVM can open fine and still fail on the first firmware instruction it
	# cannot run (nested virtualisation: "KVM internal error"). The only
	# honest probe is the real thing: OVMF and this image, until vireo's
	# banner (KVM works) or an error or 20 s (it does not).
	[[ -w /dev/kvm ]] || return 1
	local out vars pid i ok=1
	out=$(mktemp) vars=$(mktemp)
	cp "$ovmf_vars" "$vars"
	"$qemu" -accel kvm -machine q35 -m "$mem" -nodefaults -no-user-config -display none \
		-serial "file:$out" -drive if=pflash,format=raw,unit=0,readonly=on,file="$ovmf_code" \
		-drive if=pflash,format=raw,unit=1,file="$vars" \
		-drive if=none,id=boot,format="$format",file="$image",readonly=on \
		-device virtio-blk-pci,drive=boot,bootindex=0 >"$out.err" 2>&1 &
	pid=$!
	for ((i = 0; i < 100; i++)); do
		if grep -qa '^vireo ' "$out"; then ok=0; break; fi
		if grep -qa 'KVM internal error\|failed to initialize kvm' "$out.err" || ! kill -0 "$pid" 2>/dev/null; then
			break
		fi
		sleep 0.2
	done
	kill "$pid" 2>/dev/null; wait "$pid" 2>/dev/null
	rm -f "$out" "$out.err" "$vars"
	return $ok
}
if [[ $accel == auto ]]; then
	if kvm_works; then accel=kvm; else accel=tcg; fi
fi

vars=$(mktemp "${TMPDIR:-/tmp}/vireo-vars.XXXXXX")
cp "$ovmf_vars" "$vars"
trap 'rm -f "$vars"' EXIT

# The secure-boot firmware keeps its variables behind SMM, so the machine
# needs SMM and the flash must only be writable from it.
machine_opts=$machine
((secboot)) && machine_opts+=",smm=on"
# mon:stdio: COM1 and QEMU's monitor share stdio through a mux, whose
# escape is Ctrl-A (Ctrl-A X quits, Ctrl-A C switches to the monitor and
# back, Ctrl-A H lists the rest); a plain stdio serial has no escape, so
# Ctrl-A X would reach the guest instead.
args=("$qemu" -machine "$machine_opts" -accel "$accel" -m "$mem" -smp 1
	-nodefaults -no-user-config -display none -serial mon:stdio)
if [[ -n $kernel ]]; then
	args+=(-kernel "$kernel")
	((microvm)) && args+=(-global virtio-mmio.force-legacy=false)
	[[ -n $cmdline ]] && args+=(-append "$cmdline")
else
	args+=(-drive if=pflash,format=raw,unit=0,readonly=on,file="$ovmf_code"
		-drive if=pflash,format=raw,unit=1,file="$vars")
fi
((secboot)) && args+=(-global driver=cfi.pflash01,property=secure,value=on)
if [[ -n $kernel ]]; then
	:
elif ((cdrom)); then
	# q35's built-in AHCI and pc's PIIX both name their first bus ide.0.
	args+=(-drive if=none,id=boot,media=cdrom,format="$format",file="$image",readonly=on
		-device ide-cd,drive=boot,bus=ide.0,bootindex=0)
else
	args+=(-drive if=none,id=boot,format="$format",file="$image",readonly=on
		-device virtio-blk-pci,drive=boot,bootindex=0)
fi
# QEMU splits -fw_cfg at commas; a comma in the value is written twice
[[ -n $cmdline && -z $kernel ]] && args+=(-fw_cfg "name=opt/vireo/cmdline,string=${cmdline//,/,,}")
if [[ -n $port ]]; then
	args+=(-netdev "user,id=n0,hostfwd=tcp:127.0.0.1:$port-:$guest_port${tls_port:+,hostfwd=tcp:127.0.0.1:$tls_port-:$guest_tls_port}$fwd"
		-device "$( ((microvm)) && echo virtio-net-device,netdev=n0 || echo virtio-net-pci,netdev=n0,romfile=)")
fi
if [[ -n $disk ]]; then
	[[ -f $disk ]] || { echo "qemu.sh: --disk $disk: no such file (make disk makes one)" >&2; exit 2; }
	args+=(-drive "if=none,id=data,format=raw,file=$disk"
		-device "$( ((microvm)) && echo virtio-blk-device || echo virtio-blk-pci),drive=data,serial=vireo-data")
fi
args+=("$@")
if ((print)); then
	printf '%q ' "${args[@]}"; echo
	exit 0
fi
echo "qemu.sh: $accel, $machine_opts, ${mem} MiB$([[ -n $kernel ]] && echo ", -kernel $kernel")$( ((secboot)) && echo ', secure boot')$([[ -n $port ]] && echo ", http://localhost:$port/ -> guest port $guest_port")$([[ -n $port && -n $tls_port ]] && echo ", https://localhost:$tls_port/ -> guest port $guest_tls_port"); quit with Ctrl-A X" >&2
"${args[@]}"
