"""Bounded request loop for tests/fleet/test_fleet.py, run inside the
fleet's namespace: GET URL over a new connection each time, at most COUNT
requests or SECONDS seconds, whichever ends first; prints one line per
request, `<seconds since start> <status or error>`, then `END`."""
import http.client
import sys
import time
from urllib.parse import urlsplit

url, count, seconds = sys.argv[1], int(sys.argv[2]), float(sys.argv[3])
u = urlsplit(url)
t0 = time.monotonic()
for _ in range(count):
    now = time.monotonic() - t0
    if now > seconds:
        break
    try:
        c = http.client.HTTPConnection(u.hostname, u.port, timeout=10)
        c.request("GET", u.path or "/")
        r = c.getresponse()
        body = r.read()
        res = str(r.status) if r.status != 200 or body else "empty"
        c.close()
    except Exception as e:  # noqa: BLE001 - every failure is a result here
        res = "error:" + type(e).__name__
    print(f"{now:.3f} {res}", flush=True)
print("END", flush=True)
