import os
import sys

import pytest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import rootskip  # noqa: E402
from vm import IMAGE, PVH_ELF, Vm  # noqa: E402


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


@pytest.fixture
def acme_run(netns, tmp_path):
    """test_acme.py's and test_acme_store.py's pebble, DNS and VM
    (test_acme.AcmeRun), all stopped afterwards whatever the test did."""
    from test_acme import AcmeRun
    run = AcmeRun(netns, tmp_path)
    try:
        yield run
    finally:
        run.close()


@pytest.fixture
def need_elf():
    """Fails the test, with the command that builds it, where build/vireo.elf
    (the PVH kernel) is missing; test_pvh.py and test_microvm.py use it on
    every test (pytestmark)."""
    if not os.path.exists(PVH_ELF):
        pytest.fail(f"{PVH_ELF} missing: run `make elf` (make test-qemu does)")


def pytest_configure(config):
    rootskip.register(config)


def pytest_sessionstart(session):
    if not os.path.exists(IMAGE):
        raise pytest.UsageError(f"{IMAGE} missing: run `make image` (make test does)")
