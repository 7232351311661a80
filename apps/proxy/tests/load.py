"""Bounded HTTP/1.1 load for apps/proxy's tests, run inside the test's
namespace: python3 load.py HOST PORT PATH N THREADS [PAUSE_EVERY PAUSE_S].
Each thread sends its share of N GETs on one keep-alive connection
(reconnecting when the server closes); prints a JSON object: statuses
counted, bodies counted (first 16 bytes), connection errors."""
import collections
import http.client
import json
import sys
import threading
import time

host, port, path, n, threads = sys.argv[1], int(sys.argv[2]), sys.argv[3], int(sys.argv[4]), int(sys.argv[5])
every = int(sys.argv[6]) if len(sys.argv) > 6 else 0
pause = float(sys.argv[7]) if len(sys.argv) > 7 else 0
status, bodies, errors = collections.Counter(), collections.Counter(), []
lock = threading.Lock()


def worker(count):
    c = None
    for i in range(count):
        if every and i and i % every == 0:
            time.sleep(pause)
        try:
            if c is None:
                c = http.client.HTTPConnection(host, port, timeout=20)
            c.request("GET", path)
            r = c.getresponse()
            body = r.read()
            with lock:
                status[r.status] += 1
                bodies[body[:16].decode(errors="replace")] += 1
            if r.getheader("Connection", "").lower() == "close":
                c.close()
                c = None
        except Exception as e:  # a connection-level failure counts as lost
            with lock:
                errors.append(repr(e))
            if c:
                c.close()
            c = None
    if c:
        c.close()


ts = [threading.Thread(target=worker, args=(n // threads,)) for _ in range(threads)]
for t in ts:
    t.start()
for t in ts:
    t.join()
print(json.dumps({"status": status, "bodies": bodies, "errors": errors}))
