"""docs/deploy.md's libvirt path, run as written: virt-install --import of
the shipped qcow2 on Debian 12's libvirt (UEFI, Secure Boot off), per-instance
configuration through SMBIOS OEM strings (libvirt's <sysinfo>), the serial
console, virsh shutdown (ACPI power button) and virsh start again.

The guest's network is QEMU user networking with one port forwarded to the
host's loopback (passed through --qemu-commandline), so no bridge, iptables
rule or libvirt network is created on the machine; docs/deploy.md shows the
ordinary --network line instead. libvirtd and virtlogd are started here if
they are not running (no systemd in a container) and stopped again. Needs
root. make test-deploy (not part of make test: about 2 minutes, plus the
packages' installation the first time)."""
import os
import re
import shutil
import subprocess
import time
import urllib.request

import pytest
from httpc import free_tcp_port

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
QCOW2 = os.path.join(ROOT, "build", "vireo.qcow2")
VIRSH = ["virsh", "-c", "qemu:///system"]
NAME = f"vireo-deploy-{os.getpid()}"
POOL = "/var/lib/libvirt/images"


def run(*cmd, check=True, timeout=120):
    return subprocess.run(cmd, check=check, timeout=timeout, capture_output=True, text=True)


@pytest.fixture(scope="module")
def libvirt():
    if os.geteuid() != 0:
        pytest.skip("needs root (libvirtd)")
    started = []
    for daemon, sock in (("virtlogd", "/run/libvirt/virtlogd-sock"), ("libvirtd", "/run/libvirt/libvirt-sock")):
        if not os.path.exists(sock):
            subprocess.run([f"/usr/sbin/{daemon}", "-d"], check=True)
            started.append(daemon)
    for _ in range(50):
        if run(*VIRSH, "version", check=False).returncode == 0:
            break
        time.sleep(0.2)
    else:
        pytest.fail("libvirtd did not answer")
    yield
    for daemon in reversed(started):
        subprocess.run(["pkill", "-x", daemon], check=False)


def serial_text(path):
    with open(path, "rb") as f:
        return f.read().decode("utf-8", "replace")


def wait_serial(path, pattern, timeout):
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        if os.path.exists(path) and re.search(pattern, serial_text(path), re.M):
            return
        time.sleep(0.5)
    text = serial_text(path) if os.path.exists(path) else "(no serial log)"
    pytest.fail(f"no /{pattern}/ on the serial console in {timeout} s; last lines:\n{text[-1500:]}")


def state():
    return run(*VIRSH, "domstate", NAME, check=False).stdout.strip()


def test_virt_install_qcow2_smbios_shutdown_start(libvirt):
    assert os.path.exists(QCOW2), "run make build/vireo.qcow2"
    disk = os.path.join(POOL, f"{NAME}.qcow2")
    serial = f"/var/log/libvirt/qemu/{NAME}-serial.log"
    port = free_tcp_port()
    shutil.copyfile(QCOW2, disk)
    try:
        # docs/deploy.md's line, with the loopback-only network of this test.
        run("virt-install", "--connect", "qemu:///system", "--name", NAME,
            "--memory", "128", "--vcpus", "1", "--virt-type", "qemu", "--import",
            "--disk", f"path={disk},bus=virtio,format=qcow2",
            "--boot", "uefi,firmware.feature0.name=secure-boot,firmware.feature0.enabled=no",
            "--osinfo", "detect=on,require=off", "--graphics", "none",
            "--controller", "usb,model=none",
            "--serial", f"file,path={serial}",
            "--sysinfo", "type=smbios,oemStrings.entry0=io.systemd.credential:vireo.cmdline=http=8081",
            "--network", "none",
            "--qemu-commandline=-netdev user,id=n0,restrict=on,"
            f"hostfwd=tcp:127.0.0.1:{port}-:8081 "
            "-device virtio-net-pci,netdev=n0,romfile=,bus=pci.0,addr=0x10",
            "--noautoconsole", timeout=180)
        wait_serial(serial, r"^vireo: ready ip=\S+ http=8081", 150)
        text = serial_text(serial)
        assert "smbios: io.systemd.credential:vireo.cmdline (1): http=8081" in text
        assert "config: http=8081 (from smbios)" in text
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/healthz", timeout=10) as r:
            assert r.status == 200
        # virsh shutdown: the ACPI power button, vireo drains and powers off.
        run(*VIRSH, "shutdown", NAME)
        wait_serial(serial, r"^vireo: power off:", 60)
        for _ in range(60):
            if state() == "shut off":
                break
            time.sleep(0.5)
        assert state() == "shut off"
        # And up again from its own NVRAM, configured the same way.
        os.truncate(serial, 0)
        run(*VIRSH, "start", NAME)
        wait_serial(serial, r"^vireo: ready ip=\S+ http=8081", 150)
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/healthz", timeout=10) as r:
            assert r.status == 200
    finally:
        run(*VIRSH, "destroy", NAME, check=False)
        run(*VIRSH, "undefine", NAME, "--nvram", check=False)
        for p in (disk, serial):
            if os.path.exists(p):
                os.unlink(p)
