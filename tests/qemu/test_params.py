"""Registration: the command-line keys (CMDLINE_PARAM) and shell commands
(SHELL_CMD) found in the image's linker sets, as the kernel lists them."""
import re
import subprocess
import sys
import time

from vm import ROOT

READY = r"^vireo: kernel ready$"


def table_from_sources():
    """`params`' lines as tools/cmdline_table.py prints them from the sources."""
    out = subprocess.run([sys.executable, f"{ROOT}/tools/cmdline_table.py", "--plain"], check=True,
                         capture_output=True, text=True).stdout
    return out.splitlines()


def test_params_match_the_sources_and_check_clean(boot):
    """Every key the sources register is in the image, with the values,
    default and help the docs' table is made from; the table's own check
    (duplicates, defaults that drifted from their variables) is clean."""
    want = table_from_sources()
    assert len(want) >= 13, want
    vm = boot()
    ready = vm.wait_for(READY)
    assert "warning: cmdline" not in vm.text[:ready.start()], vm.text
    time.sleep(0.5)
    vm.send("params\r")
    vm.wait_for(rf"^{re.escape(want[-1])}$", timeout=20, start=ready.end())
    text = vm.text[ready.end():]
    got = [line.rstrip("\r") for line in text.splitlines() if re.match(r"^  [a-z][a-z0-9_.]*=", line)]
    assert got == want, "\n".join(got)


def test_shell_commands_register_themselves(boot):
    """help lists the commands registered next to their code (the console
    driver's vcons, the net driver's debug-only fault, config's params);
    a debug command is refused without debug, and a command that takes no
    arguments says so."""
    vm = boot()
    ready = vm.wait_for(READY)
    time.sleep(0.5)
    vm.send("help\r")
    vm.wait_for(r"^  timeline +boot timeline$", timeout=20, start=ready.end())
    listed = re.findall(r"^  (\S+)(?: \S+)? +\S", vm.text[ready.end():], re.M)
    for name in ("fault", "help", "mem", "params", "reboot", "stats", "timeline", "vcons"):
        assert name in listed, listed
    assert listed == sorted(listed), listed
    mark = len(vm.text)
    vm.send("fault net-needs-reset\r")
    vm.wait_for(r"^fault: needs debug on the command line$", timeout=20, start=mark)
    vm.send("mem now\r")
    vm.wait_for(r"^mem: takes no arguments$", timeout=20, start=mark)
    vm.send("nosuch\r")
    vm.wait_for(r"^unknown command 'nosuch' \(try help\)$", timeout=20, start=mark)
