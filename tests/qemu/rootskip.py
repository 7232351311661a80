"""Root-only tests must not make a run look green by being skipped.

The tap tests in tests/qemu and every test in tests/matrix need root and
/dev/net/tun (a network namespace with a tap device). Where they cannot run
they are skipped with skip_root_only() or root_only_mark(); this module, registered once per
pytest session by each suite's conftest.py (register()), then:
- fails the run (exit status 1) if any test was skipped that way, unless
  VIREO_SKIP_ROOT_TESTS=1 says that a run without them is meant;
- prints, as the run's very last line (after pytest's own summary), how
  many root-only tests did not run, whether or not that was accepted;
- appends "<suite> <root-only skipped> <pytest's own exit status>" to the
  file VIREO_ROOT_SKIPS names, if set, for `make test`'s verdict:
  `python3 tests/qemu/rootskip.py verdict FILE SUITES RC` prints the last
  line of `make test` and exits with its status.
"""
import os
import sys

REASON = "root-only: needs root and /dev/net/tun for a network namespace with a tap device"
ACCEPT_ENV = "VIREO_SKIP_ROOT_TESTS"
RECORD_ENV = "VIREO_ROOT_SKIPS"


def accepted():
    return os.environ.get(ACCEPT_ENV) == "1"


def skip_root_only():
    import pytest
    pytest.skip(REASON)


def root_only_mark():
    import pytest
    return pytest.mark.skip(reason=REASON)


def _is_root_only_skip(report):
    if not report.skipped or report.when not in ("setup", "call"):
        return False
    lr = report.longrepr
    return isinstance(lr, tuple) and len(lr) == 3 and REASON in str(lr[2])


def summary(skipped, total):
    if accepted():
        return (f"vireo: {skipped} of {total} tests are root-only and were SKIPPED (no root or no "
                f"/dev/net/tun); accepted because {ACCEPT_ENV}=1")
    return (f"vireo: FAILED: {skipped} of {total} tests are root-only and were SKIPPED (no root or no "
            f"/dev/net/tun); run as root, or set {ACCEPT_ENV}=1 to accept a run without them")


class RootSkips:
    def __init__(self):
        self.skipped = 0
        self.total = 0

    def pytest_runtest_logreport(self, report):
        if _is_root_only_skip(report):
            self.skipped += 1

    def pytest_sessionfinish(self, session):
        self.total = session.testscollected
        own = int(session.exitstatus)
        path = os.environ.get(RECORD_ENV)
        if path:
            suite = " ".join(os.path.relpath(str(a)) for a in session.config.args) or "."
            with open(path, "a") as f:
                f.write(f"{suite.replace(' ', ',')} {self.skipped} {own}\n")
        if self.skipped and not accepted() and own == 0:
            session.exitstatus = 1

    def pytest_unconfigure(self, config):
        if not self.skipped:
            return
        line = summary(self.skipped, self.total)
        tr = config.pluginmanager.getplugin("terminalreporter")
        if tr is not None:
            tr.write_line(line, red=not accepted(), yellow=accepted(), bold=True)
        else:
            print(line)


def register(config):
    """Called from each suite's pytest_configure; registers once per session."""
    if not config.pluginmanager.has_plugin("vireo-rootskips"):
        config.pluginmanager.register(RootSkips(), "vireo-rootskips")


def verdict(path, suites, rc):
    """`make test`'s last line from the suites' records and the exit status
    of the make that ran them; returns the exit status for `make test`."""
    rows = []
    try:
        with open(path) as f:
            rows = [line.split() for line in f if line.strip()]
    except FileNotFoundError:
        pass
    skipped = sum(int(r[1]) for r in rows)
    own_fail = any(int(r[2]) != 0 for r in rows)
    missing = suites - len(rows)
    if rc != 0 and (own_fail or missing > 0 or not skipped or accepted()):
        why = "tests failed" if own_fail else f"{missing} pytest suite(s) did not finish" if missing > 0 \
            else "a step failed"
        extra = f"; also {skipped} root-only tests skipped" if skipped else ""
        print(f"make test: FAILED: {why} (see above){extra}")
        return 1
    if missing > 0:
        print(f"make test: FAILED: {missing} pytest suite(s) left no record in {path}")
        return 1
    if skipped and not accepted():
        print(f"make test: FAILED: {skipped} root-only tests were SKIPPED (no root or no /dev/net/tun); "
              f"run as root, or set {ACCEPT_ENV}=1 to accept a run without them")
        return 1
    if skipped:
        print(f"make test: passed WITHOUT {skipped} root-only tests (skipped: no root or no /dev/net/tun; "
              f"{ACCEPT_ENV}=1)")
        return 0
    print("make test: passed; no test was skipped for want of root")
    return 0


if __name__ == "__main__":
    if len(sys.argv) != 5 or sys.argv[1] != "verdict":
        sys.exit("usage: rootskip.py verdict FILE SUITES RC")
    sys.exit(verdict(sys.argv[2], int(sys.argv[3]), int(sys.argv[4])))
