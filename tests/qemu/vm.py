"""Boot vireo under QEMU+OVMF (TCG) through images/qemu.sh and read its serial console."""
import json
import os
import re
import signal
import socket
import subprocess
import tempfile
import threading
import time

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
IMAGE = os.path.join(ROOT, "build", "vireo.img")
PVH_ELF = os.path.join(ROOT, "build", "vireo.elf")
BOOT_TIMEOUT = float(os.environ.get("VIREO_BOOT_TIMEOUT", "90"))


class Output:
    """Text a thread gathers from a stream (QEMU's stdio, a chardev socket),
    for tests to wait for lines without blocking. Subclasses call
    _gather(read) with a function returning the next chunk (b"" at the end)
    and may override _ended() to fail fast when the source is gone."""

    what = "the console"

    def _gather(self, read):
        self.out = b""
        self.lock = threading.Lock()
        self.reader = threading.Thread(target=self._read, args=(read,), daemon=True)
        self.reader.start()

    def _read(self, read):
        while True:
            try:
                chunk = read()
            except OSError:
                break
            if not chunk:
                break
            with self.lock:
                self.out += chunk

    def _ended(self):
        """An AssertionError message if the source is gone, else None."""
        return None

    @property
    def text(self):
        with self.lock:
            return self.out.decode("utf-8", "replace").replace("\r\n", "\n")

    def _search(self, rx, start, whole=False):
        """rx in the output's complete lines: with re.M a `$` also matches
        at the end of a line still arriving, where an optional tail
        (" https=443") has not come yet. Patterns without `$` (prompts)
        may match the partial last line too."""
        text = self.text
        m = rx.search(text, start, text.rfind("\n") + 1)
        if m or not (whole or "$" not in rx.pattern):
            return m
        return rx.search(text, start)

    def wait_for(self, pattern, timeout=BOOT_TIMEOUT, start=0):
        """Waits for regex `pattern` in the output after offset `start`;
        returns the match. Fails with the output if it never comes."""
        rx = re.compile(pattern, re.M)
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            m = self._search(rx, start)
            if m:
                return m
            ended = self._ended()
            if ended:
                time.sleep(0.2)
                m = self._search(rx, start, whole=True)
                if m:
                    return m
                raise AssertionError(f"{ended} before /{pattern}/:\n{self.text[-6000:]}")
            time.sleep(0.05)
        raise AssertionError(f"timed out after {timeout}s waiting for /{pattern}/ on {self.what}:\n"
                             f"{self.text[-6000:]}")


class Vm(Output):
    """One QEMU process. The serial console is QEMU's stdio (Output)."""

    def __init__(self, cmdline="", machine="q35", mem=64, image=IMAGE, extra=(), reboot=True, wrap=(), kernel=None):
        """wrap: a command prefix, e.g. ["ip", "netns", "exec", ns] to run
        QEMU inside a network namespace (where its tap device lives).
        kernel: a PVH ELF (PVH_ELF) booted with -kernel instead of the image."""
        boot = ["--kernel", kernel] if kernel else ["--image", image]
        args = list(wrap) + [os.path.join(ROOT, "images", "qemu.sh")] + boot + ["--mem", str(mem),
                "--machine", machine, "--accel", "tcg"]
        if cmdline:
            args += ["--cmdline", cmdline]
        self.tmp = tempfile.mkdtemp(prefix="vireo-vm-")
        self.qmp_path = os.path.join(self.tmp, "qmp.sock")
        args += ["--", "-qmp", f"unix:{self.qmp_path},server=on,wait=off"]
        if not reboot:
            args.append("-no-reboot")
        args += list(extra)
        self._qmp = None
        self.args = args
        self.proc = subprocess.Popen(args, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                     stderr=subprocess.STDOUT, start_new_session=True)
        self.started = time.monotonic()
        self._gather(lambda: self.proc.stdout.read1(4096))

    def _ended(self):
        if self.proc.poll() is not None:
            return f"QEMU exited ({self.proc.returncode})"
        return None

    def send(self, s):
        self.proc.stdin.write(s.encode())
        self.proc.stdin.flush()

    def cpu_seconds(self):
        """User+system CPU seconds used so far by the QEMU process tree."""
        total = 0.0
        tck = os.sysconf("SC_CLK_TCK")
        for pid in self._pids():
            try:
                with open(f"/proc/{pid}/stat") as f:
                    fields = f.read().rsplit(")", 1)[1].split()
                total += (int(fields[11]) + int(fields[12])) / tck
            except (OSError, IndexError):
                pass
        return total

    def _pids(self):
        pids = [self.proc.pid]
        try:
            out = subprocess.run(["pgrep", "-s", str(self.proc.pid)], capture_output=True, text=True).stdout
            pids = [int(p) for p in out.split()]
        except OSError:
            pass
        return pids

    def qmp(self, command, **arguments):
        """Runs one QMP command and returns its "return" value."""
        if self._qmp is None:
            deadline = time.monotonic() + 20
            while True:
                try:
                    sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
                    sock.connect(self.qmp_path)
                    break
                except OSError:
                    if time.monotonic() > deadline:
                        raise
                    time.sleep(0.1)
            self._qmp = sock.makefile("rw")
            self._qmp.readline()  # greeting
            self._qmp_cmd("qmp_capabilities")
        return self._qmp_cmd(command, **arguments)

    def _qmp_cmd(self, command, **arguments):
        msg = {"execute": command}
        if arguments:
            msg["arguments"] = arguments
        self._qmp.write(json.dumps(msg) + "\n")
        self._qmp.flush()
        while True:
            reply = json.loads(self._qmp.readline())
            if "return" in reply:
                return reply["return"]
            if "error" in reply:
                raise AssertionError(f"QMP {command}: {reply['error']}")

    def hmp(self, line):
        """A human monitor command's text output (e.g. "info pci")."""
        return self.qmp("human-monitor-command", **{"command-line": line})

    def stop(self):
        if self._qmp is not None:
            try:
                self._qmp.close()
            except OSError:
                pass
            self._qmp = None
        if self.proc.poll() is None:
            try:
                os.killpg(self.proc.pid, signal.SIGTERM)
                self.proc.wait(timeout=10)
            except (ProcessLookupError, subprocess.TimeoutExpired):
                try:
                    os.killpg(self.proc.pid, signal.SIGKILL)
                except ProcessLookupError:
                    pass
                self.proc.wait(timeout=10)
        self.reader.join(timeout=5)
        try:
            os.unlink(self.qmp_path)
            os.rmdir(self.tmp)
        except OSError:
            pass

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.stop()
