import os
import sys

import pytest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from vm import IMAGE, Vm  # noqa: E402


@pytest.fixture
def boot():
    """boot(**kw) starts a Vm; every Vm is stopped when the test ends."""
    vms = []

    def start(**kw):
        vm = Vm(**kw)
        vms.append(vm)
        return vm

    yield start
    for vm in vms:
        vm.stop()


@pytest.fixture
def netns():
    """A network namespace with a tap device (tests/qemu/netns.py), deleted
    afterwards; the test is skipped where namespaces cannot be made."""
    import netns as nsmod
    if not nsmod.available():
        pytest.skip("needs root and /dev/net/tun for a network namespace with a tap device")
    with nsmod.Netns() as ns:
        yield ns


def pytest_sessionstart(session):
    if not os.path.exists(IMAGE):
        raise pytest.UsageError(f"{IMAGE} missing: run `make image` (make test does)")
