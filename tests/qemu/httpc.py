"""HTTP and Prometheus helpers for tests that talk to the appliance over
plain sockets: read a connection to its end, parse response heads,
Content-Length framed keep-alive responses, and /metrics text (checked line
by line against the exposition format, and by `promtool check metrics`);
for the TLS floods, a connection from a chosen source address and a
recorded ClientHello.
Shared by tests/qemu, tests/matrix and the apps' tests."""
import re
import shutil
import socket
import ssl
import subprocess


def free_tcp_port():
    """A loopback TCP port nothing listens on now (for a QEMU hostfwd)."""
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    return port


def connect_from(src, dst, port, timeout):
    """A TCP connection to dst:port from the local address src."""
    s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    s.settimeout(timeout)
    s.bind((src, 0))
    s.connect((dst, port))
    return s


def client_hello(ctx, server_hostname="localhost"):
    """The ClientHello ctx's TLS stack sends, recorded once (a flood
    replays it with no crypto of its own)."""
    inc, outg = ssl.MemoryBIO(), ssl.MemoryBIO()
    obj = ctx.wrap_bio(inc, outg, server_hostname=server_hostname)
    try:
        obj.do_handshake()
    except ssl.SSLWantReadError:
        pass
    return outg.read()


def get_close(port, path, timeout=20):
    """One GET with Connection: close to 127.0.0.1:port: (status, headers, body)."""
    with socket.create_connection(("127.0.0.1", port), timeout=timeout) as s:
        s.sendall(f"GET {path} HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n".encode())
        return parse_response(read_all(s))


def read_all(s):
    chunks = []
    while True:
        try:
            c = s.recv(65536)
        except ConnectionResetError:
            break
        if not c:
            break
        chunks.append(c)
    return b"".join(chunks)


def parse_head(data):
    head, sep, rest = data.partition(b"\r\n\r\n")
    assert sep, f"no end of head in {data[:200]!r}"
    lines = head.decode("latin-1").split("\r\n")
    m = re.match(r"HTTP/1\.[01] (\d{3}) ", lines[0] + " ")
    assert m, lines[0]
    headers = {}
    for line in lines[1:]:
        k, _, v = line.partition(":")
        headers[k.strip().lower()] = v.strip()
    return int(m.group(1)), headers, rest


def parse_response(data):
    status, headers, rest = parse_head(data)
    if "content-length" in headers:
        n = int(headers["content-length"])
        assert len(rest) >= n, (len(rest), n)
        rest = rest[:n]
    return status, headers, rest


def read_responses(s, n, head_only=False):
    """Reads n responses from a keep-alive connection (Content-Length framed)."""
    buf = b""
    out = []
    while len(out) < n:
        while b"\r\n\r\n" not in buf:
            c = s.recv(65536)
            assert c, f"connection closed after {len(out)} responses"
            buf += c
        status, headers, rest = parse_head(buf)
        need = 0 if head_only else int(headers.get("content-length", "0"))
        while len(rest) < need:
            c = s.recv(65536)
            assert c, "connection closed mid-body"
            rest += c
        out.append((status, headers, rest[:need]))
        buf = rest[need:]
    return out, buf


SAMPLE = re.compile(r'^([a-zA-Z_:][a-zA-Z0-9_:]*)(\{([a-zA-Z_][a-zA-Z0-9_]*="(\\.|[^"\\])*",?)*\})? '
                    r'(-?[0-9.eE+-]+|NaN|[+-]Inf)( -?\d+)?$')


def parse_prometheus(text):
    """Checks the text exposition format line by line; returns
    {name{labels}: value}."""
    assert text.endswith("\n")
    out = {}
    for line in text.splitlines():
        if not line or line.startswith("# HELP ") or line.startswith("# TYPE "):
            continue
        assert not line.startswith("#") or line.startswith("# "), line
        if line.startswith("#"):
            continue
        m = SAMPLE.match(line)
        assert m, f"not a Prometheus sample: {line!r}"
        key = line.rsplit(" ", 1)[0] if m.group(6) is None else line.rsplit(" ", 2)[0]
        out[key] = float(m.group(5))
    return out


def promtool_findings(text):
    """`promtool check metrics` (Debian's prometheus package; tools/deps.sh
    installs it for the tests) on an exposition text: its findings, one per
    line (a name against the conventions, a malformed line), [] when it has
    none."""
    exe = shutil.which("promtool")
    assert exe, "promtool not found: tools/deps.sh test installs Debian's prometheus package"
    if isinstance(text, str):
        text = text.encode()
    r = subprocess.run([exe, "check", "metrics"], input=text, capture_output=True, timeout=60)
    findings = [line for line in (r.stdout + r.stderr).decode(errors="replace").splitlines() if line.strip()]
    if r.returncode != 0 and not findings:
        findings = [f"promtool exited {r.returncode}"]
    return findings
