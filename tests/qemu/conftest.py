import os
import sys

import pytest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import rootskip  # noqa: E402
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
    afterwards; the test is skipped where namespaces cannot be made, and
    the run then fails unless VIREO_SKIP_ROOT_TESTS=1 (rootskip.py)."""
    import netns as nsmod
    if not nsmod.available():
        rootskip.skip_root_only()
    with nsmod.Netns() as ns:
        yield ns


def pytest_configure(config):
    rootskip.register(config)


def pytest_sessionstart(session):
    if not os.path.exists(IMAGE):
        raise pytest.UsageError(f"{IMAGE} missing: run `make image` (make test does)")
