#!/usr/bin/env python3
"""What one `__name__` range query costs on the Firestore emulator, against the
whole collection: the cost model behind `verify --ranges N` on the emulator.

Starts its own emulator JVM (the jar from `CJ_EMULATOR_JAR`, default the Debian
package's), loads 10,000 and then 40,000 documents with hash ids through the REST
API, and times a full name-ordered query, a 1/256 range (with and without a read
time) and the last 1/256 (an open upper bound). Then it loads as many documents
into a second collection `d` and times the kindless all-descendants query that
`verify` uses for a subtree (bounded by `__name__` to `c`) against the collection
query of `c`. Prints one line per measurement; the JVM is stopped at the end.
Standard library only:

    python3 bench/range_cost.py
"""

import hashlib
import json
import os
import signal
import subprocess
import time
import urllib.error
import urllib.request

JAR = os.environ.get(
    "CJ_EMULATOR_JAR",
    "/usr/lib/google-cloud-sdk/platform/cloud-firestore-emulator/cloud-firestore-emulator.jar",
)
MAIN = "com.google.cloud.datastore.emulator.firestore.CloudFirestore"
PORT = int(os.environ.get("CJ_RANGE_COST_PORT", "8931"))
HOST = f"http://127.0.0.1:{PORT}"
DOCS = "projects/range-cost/databases/(default)/documents"


def post(path, body):
    request = urllib.request.Request(
        f"{HOST}/v1/{path}",
        data=json.dumps(body).encode(),
        headers={"Content-Type": "application/json", "Authorization": "Bearer owner"},
    )
    with urllib.request.urlopen(request) as response:
        return json.loads(response.read())


def wait_until_up():
    for _ in range(300):
        try:
            urllib.request.urlopen(HOST + "/")
            return
        except urllib.error.HTTPError:
            return
        except OSError:
            time.sleep(0.1)
    raise SystemExit("the emulator did not start")


def load(first, count, collection="c"):
    for batch in range(first, first + count, 500):
        writes = [
            {
                "update": {
                    "name": f"{DOCS}/{collection}/{hashlib.sha256(str(i).encode()).hexdigest()}",
                    "fields": {"n": {"integerValue": str(i)}},
                }
            }
            for i in range(batch, min(batch + 500, first + count))
        ]
        post(f"{DOCS}:commit", {"writes": writes})


def query(start=None, end=None, read_time=None):
    """Documents, seconds and read time of one name-ordered query of `c`."""
    bound = lambda op, prefix: {
        "fieldFilter": {
            "field": {"fieldPath": "__name__"},
            "op": op,
            "value": {"referenceValue": f"{DOCS}/c/{prefix}"},
        }
    }
    filters = []
    if start:
        filters.append(bound("GREATER_THAN_OR_EQUAL", start))
    if end:
        filters.append(bound("LESS_THAN", end))
    structured = {
        "from": [{"collectionId": "c"}],
        "orderBy": [{"field": {"fieldPath": "__name__"}, "direction": "ASCENDING"}],
    }
    if filters:
        structured["where"] = {"compositeFilter": {"op": "AND", "filters": filters}}
    body = {"structuredQuery": structured}
    if read_time:
        body["readTime"] = read_time
    started = time.time()
    answer = post(f"{DOCS}:runQuery", body)
    seconds = time.time() - started
    return sum(1 for part in answer if "document" in part), seconds, answer[-1].get("readTime")


MIN_ID = "__id-9223372036854775808__"


def kindless(collection):
    """Documents and seconds of the kindless query of `collection`'s whole subtree."""
    bound = lambda op, name: {
        "fieldFilter": {
            "field": {"fieldPath": "__name__"},
            "op": op,
            "value": {"referenceValue": f"{DOCS}/{name}"},
        }
    }
    structured = {
        "from": [{"allDescendants": True}],
        "where": {
            "compositeFilter": {
                "op": "AND",
                "filters": [
                    bound("GREATER_THAN_OR_EQUAL", f"{collection}/{MIN_ID}"),
                    bound("LESS_THAN", f"{collection}\u0000/{MIN_ID}"),
                ],
            }
        },
        "orderBy": [{"field": {"fieldPath": "__name__"}, "direction": "ASCENDING"}],
    }
    started = time.time()
    answer = post(f"{DOCS}:runQuery", {"structuredQuery": structured})
    return sum(1 for part in answer if "document" in part), time.time() - started


def main():
    jvm = subprocess.Popen(
        ["java", "-cp", JAR, MAIN, "start", "--host=127.0.0.1", f"--port={PORT}"],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        wait_until_up()
        loaded = 0
        for size in (10_000, 40_000):
            load(loaded, size - loaded)
            loaded = size
            for _ in range(2):  # the second round is reported: the first warms up
                full = query()
                small = query("1000", "1100")
                small_at = query("1000", "1100", full[2])
                tail = query("ff00", None, full[2])
            print(
                f"{size} docs: full {full[0]} in {full[1] * 1000:.0f} ms; "
                f"1/256 range {small[0]} docs in {small[1] * 1000:.0f} ms "
                f"(at a read time {small_at[1] * 1000:.0f} ms); "
                f"last 1/256 {tail[0]} docs in {tail[1] * 1000:.0f} ms",
                flush=True,
            )
        load(0, loaded, "d")
        for _ in range(2):
            full = query()
            subtree = kindless("c")
        print(
            f"{loaded} docs in c and {loaded} in d: collection query of c {full[0]} docs in "
            f"{full[1] * 1000:.0f} ms; kindless subtree of c {subtree[0]} docs in "
            f"{subtree[1] * 1000:.0f} ms",
            flush=True,
        )
    finally:
        jvm.send_signal(signal.SIGTERM)
        jvm.wait()


if __name__ == "__main__":
    main()
