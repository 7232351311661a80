import os
import sys

import pytest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import mxlib  # noqa: E402


def pytest_configure(config):
    config.addinivalue_line("markers", "quick: the fast subset `make test` runs (make test-matrix-quick)")
    config.addinivalue_line("markers", "hostile: malformed frames, floods and hostile clients (make test-hostile)")
    config.addinivalue_line("markers", "soak: 100,000 requests at 64 connections (make soak; not in test-matrix)")


def pytest_sessionstart(session):
    if not os.path.exists(mxlib.IMAGE):
        raise pytest.UsageError("build/vireo.img missing: run `make image`")


@pytest.fixture(autouse=True)
def _needs_netns():
    if not mxlib.nsmod.available():
        pytest.skip("needs root and /dev/net/tun for a network namespace with a tap device")
