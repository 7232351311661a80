#!/usr/bin/env bash
# boot.sh IMAGE EFI — boot figures, printed (never asserted):
#   EFI binary size; efi_main -> kernel ready from the kernel's TSC timeline
#   (median of N boots); host CPU used by QEMU over 10 s of guest idle.
set -euo pipefail
image=$1 efi=$2 runs=${BENCH_BOOTS:-3}
here=$(cd "$(dirname "$0")/../.." && pwd)
python3 - "$image" "$efi" "$runs" <<'PY'
import os, re, statistics, sys, time
sys.path.insert(0, os.path.join(os.getcwd(), "tests", "qemu"))
from vm import Vm
image, efi, runs = sys.argv[1], sys.argv[2], int(sys.argv[3])
size = os.path.getsize(efi)
ready, wall, cpu = [], [], None
for i in range(runs):
    t0 = time.monotonic()
    with Vm(image=image) as vm:
        vm.wait_for(r"^vireo: kernel ready$")
        wall.append(time.monotonic() - t0)
        tl = re.search(r"^boot: timeline \(ms since efi_main\): (.*)$", vm.text, re.M).group(1)
        ready.append(float(dict(kv.split("=") for kv in tl.split())["ready"]))
        if i == 0:
            time.sleep(1)
            c0, m0 = vm.cpu_seconds(), time.monotonic()
            time.sleep(10)
            cpu = (vm.cpu_seconds() - c0) / (time.monotonic() - m0)
print(f"{'EFI binary size':40s} {size:>10d} bytes ({size/1024:.1f} KiB; target < 128 KiB)")
print(f"{'efi_main -> kernel ready (median)':40s} {statistics.median(ready):>10.2f} ms  (runs: {', '.join(f'{r:.2f}' for r in ready)}; target < 20 ms)")
print(f"{'QEMU start -> kernel ready (median)':40s} {statistics.median(wall):>10.2f} s   (OVMF under TCG dominates)")
print(f"{'idle host CPU (QEMU, 10 s)':40s} {cpu*100:>10.2f} %   (target < 3% of a core)")
PY
