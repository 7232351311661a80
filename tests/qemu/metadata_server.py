"""A fake cloud metadata server for tests/qemu/test_metadata.py, run inside
the test's namespace on 169.254.169.254:80, one connection at a time.

  metadata_server.py MODE BODYFILE

MODE gce: GET /computeMetadata/v1/instance/attributes/vireo-config answers
the body only with `Metadata-Flavor: Google` (403 without it), 404 for any
other path. MODE aws: IMDSv2, PUT /latest/api/token with
X-aws-ec2-metadata-token-ttl-seconds gives a token, GET /latest/user-data
answers the body only with that token (401 without or with another), 404
for any other path (so metadata=auto's GCE request finds nothing). MODE
aws1: IMDSv1 only, as EC2-compatible services such as OpenStack's: 405 to
the token request, the body to GET /latest/user-data with or without a
token, 404 elsewhere. Hostile
modes answer every request the same bad way: huge (1 MiB of body, no
length), drip (a status line one byte every 0.4 s), garbage (not HTTP),
redirect (302 to itself). Each request is logged on stdout as
`REQ <method> <path> <header names>`; `listening` says it is up."""
import socket
import sys
import time

MODE = sys.argv[1]
BODY = open(sys.argv[2], "rb").read() if len(sys.argv) > 2 else b""
TOKEN = b"AQAEAFakeToken-0123456789abcdef=="


def answer(conn, status, body=b"", extra=b""):
    conn.sendall(b"HTTP/1.1 " + status + b"\r\nContent-Length: " + str(len(body)).encode() +
                 b"\r\nConnection: close\r\n" + extra + b"\r\n" + body)


def read_request(conn):
    data = b""
    conn.settimeout(10)
    while b"\r\n\r\n" not in data and len(data) < 16384:
        chunk = conn.recv(4096)
        if not chunk:
            break
        data += chunk
    head = data.split(b"\r\n\r\n", 1)[0].split(b"\r\n")
    method, path = (head[0].split(b" ") + [b"", b""])[:2]
    headers = {}
    for line in head[1:]:
        if b":" in line:
            k, v = line.split(b":", 1)
            headers[k.strip().lower()] = v.strip()
    return method, path, headers


def serve(conn):
    method, path, h = read_request(conn)
    print("REQ", method.decode(errors="replace"), path.decode(errors="replace"),
          ",".join(sorted(k.decode() for k in h)), flush=True)
    if MODE == "gce":
        if path != b"/computeMetadata/v1/instance/attributes/vireo-config":
            answer(conn, b"404 Not Found", b"not found\n")
        elif h.get(b"metadata-flavor") != b"Google":
            answer(conn, b"403 Forbidden", b"missing Metadata-Flavor\n")
        else:
            answer(conn, b"200 OK", BODY, b"Metadata-Flavor: Google\r\nContent-Type: application/text\r\n")
    elif MODE == "aws":
        if method == b"PUT" and path == b"/latest/api/token":
            if b"x-aws-ec2-metadata-token-ttl-seconds" not in h:
                answer(conn, b"400 Bad Request")
            else:
                answer(conn, b"200 OK", TOKEN)
        elif method == b"GET" and path == b"/latest/user-data":
            if h.get(b"x-aws-ec2-metadata-token") != TOKEN:
                answer(conn, b"401 Unauthorized")
            else:
                answer(conn, b"200 OK", BODY)
        else:
            answer(conn, b"404 Not Found")
    elif MODE == "aws1":
        if method == b"GET" and path == b"/latest/user-data":
            answer(conn, b"200 OK", BODY)
        elif path == b"/latest/api/token":
            answer(conn, b"405 Method Not Allowed", b"", b"Allow: GET\r\n")
        else:
            answer(conn, b"404 Not Found")
    elif MODE == "huge":
        conn.sendall(b"HTTP/1.1 200 OK\r\nConnection: close\r\n\r\n")
        try:
            for _ in range(256):
                conn.sendall(b"x" * 4096)
        except OSError:
            pass   # the client gave up: as it should
    elif MODE == "drip":
        try:
            for c in b"HTTP/1.1 200 OK\r\nContent-Length: 9\r\n\r\nhttp=81\n":
                conn.sendall(bytes([c]))
                time.sleep(0.4)
        except OSError:
            pass
    elif MODE == "garbage":
        conn.sendall(b"SSH-2.0-OpenSSH_9.2\r\n\x00\xff\r\n\r\n")
    elif MODE == "redirect":
        answer(conn, b"302 Found", b"", b"Location: http://169.254.169.254" + path + b"\r\n")


def main():
    s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    s.bind(("169.254.169.254", 80))
    s.listen(8)
    s.settimeout(180)
    print("listening", flush=True)
    while True:
        try:
            conn, _ = s.accept()
        except socket.timeout:
            return
        with conn:
            try:
                serve(conn)
            except OSError as e:
                print("ERR", e, flush=True)


main()
