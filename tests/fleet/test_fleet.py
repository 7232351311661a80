"""The fleet behind HAProxy (tests/fleet/fleet.py): three instances, a
bounded request loop through the front while one instance is powered off
gracefully (QMP system_powerdown: it drains and exits) and then another is
killed outright (SIGKILL to QEMU). HAProxy's health checks take each out of
rotation; with its retries, no request fails across the graceful power-off,
and none fails once the check interval after the kill has passed. The
figures (requests, failures, when) are printed."""
import os
import signal
import subprocess
import sys
import time

import pytest
import rootskip

import fleet as fleetmod

LOAD = os.path.join(os.path.dirname(os.path.abspath(__file__)), "load.py")
CHECK_S = 2 * 0.5   # fall 2 x inter 500 ms


@pytest.fixture
def fleet():
    import netns  # tests/qemu/netns.py: can namespaces be made here?
    if not netns.available():
        rootskip.skip_root_only()
    if not os.path.exists(fleetmod.HAPROXY):
        pytest.fail("haproxy missing: `make deps` installs it")
    if not os.path.exists(fleetmod.PVH_ELF):
        pytest.fail(f"{fleetmod.PVH_ELF} missing: run `make elf`")
    with fleetmod.Fleet(3) as fl:
        yield fl


def _load(fl, seconds, action_at, action):
    """Runs load.py for `seconds` and action() `action_at` seconds in;
    returns [(t, result)] and the action's time, both from the loop's start."""
    t0 = time.monotonic()
    p = subprocess.Popen(fl.wrap + [sys.executable, LOAD, fl.front, "100000", str(seconds)],
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    time.sleep(action_at)
    t_act = time.monotonic() - t0
    action()
    out, err = p.communicate(timeout=seconds + 60)
    lines = out.decode().split("\n")
    assert "END" in lines, err.decode()[-2000:]
    res = [(float(t), r) for t, r in (line.split(" ", 1) for line in lines if line and line != "END")]
    return res, t_act


def _report(name, res, t_act):
    bad = [(t, r) for t, r in res if r != "200"]
    print(f"fleet: {name}: {len(res)} requests, {len(bad)} failed"
          + (f" (first {bad[0][0] - t_act:+.2f} s, last {bad[-1][0] - t_act:+.2f} s from it)" if bad else ""))
    return bad


def test_fleet_routes_around_power_off_and_kill(fleet):
    # every instance serves through the front
    res, _ = _load(fleet, 2, 0, lambda: None)
    assert res and all(r == "200" for _, r in res), res[:10]

    # graceful: the instance drains, HAProxy retries elsewhere: nothing lost
    v0 = fleet.vms[0]

    def power_off():
        v0.qmp("system_powerdown")

    res, t_act = _load(fleet, 10, 3, power_off)
    assert v0.proc.wait(timeout=20) == 0
    assert "vireo: power off" in v0.text
    bad = _report("system_powerdown v0", res, t_act)
    assert len(res) >= 20 and not bad, bad[:10]
    fleet.wait_states(["DOWN", "UP", "UP"], timeout=15)

    # outright kill: bounded failures, none after the check interval
    v1 = fleet.vms[1]

    def kill():
        os.killpg(v1.proc.pid, signal.SIGKILL)

    res, t_act = _load(fleet, 10, 3, kill)
    bad = _report("SIGKILL v1", res, t_act)
    late = [(t, r) for t, r in bad if t > t_act + CHECK_S + 1.0]
    assert len(res) >= 20 and not late, late[:10]
    fleet.wait_states(["DOWN", "DOWN", "UP"], timeout=15)

    # what is left serves everything
    res, _ = _load(fleet, 2, 0, lambda: None)
    assert res and all(r == "200" for _, r in res), res[:10]
