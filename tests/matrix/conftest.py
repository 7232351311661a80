import os
import sys

import pytest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import mxlib  # noqa: E402
import rootskip  # noqa: E402  (tests/qemu, on the path through mxlib)


def pytest_configure(config):
    config.addinivalue_line("markers", "quick: the fast subset `make test` runs (make test-matrix-quick)")
    config.addinivalue_line("markers", "hostile: malformed frames, floods and hostile clients (make test-hostile)")
    rootskip.register(config)
    config.addinivalue_line("markers", "qemu_current: against QEMU 10.0 from `make qemu-current`; skipped "
                            "without it (make test-qemu-current)")
    config.addinivalue_line("markers", "capacity: the whole connection table held 60 s at -m 256 "
                            "(make test-capacity; not in test-matrix)")
    config.addinivalue_line("markers", "soak: 100,000 requests at 64 connections (make soak; not in test-matrix)")


def pytest_sessionstart(session):
    if not os.path.exists(mxlib.IMAGE):
        raise pytest.UsageError("build/vireo.img missing: run `make image`")


def pytest_collection_modifyitems(config, items):
    """Every matrix test needs a namespace with a tap device: skipped where
    there is none (marked at collection, so that no module fixture boots a
    guest first), and the run then fails unless VIREO_SKIP_ROOT_TESTS=1."""
    if not mxlib.nsmod.available():
        for item in items:
            item.add_marker(rootskip.root_only_mark())
