"""One Python worker of the crash storm (../storm.test.mjs): the same loop as worker.mjs, on the
same file, through the Python package. Usage: python worker.py FILE LOG FAIL_RATE"""

import json
import os
import random
import sys
import time

import deadletter

path, log, fail_rate = sys.argv[1], sys.argv[2], float(sys.argv[3])
db = deadletter.open(path, durability="normal", lease=1.0)
q = db.queue("storm")
tag = f"python-{os.getpid()}"
n = 0


def write(event):
    with open(log, "a", encoding="utf-8") as out:
        out.write(json.dumps(event) + "\n")


def ms(instant):
    return round(instant.timestamp() * 1000)


while True:
    batch = q.claim_many(10)
    if not batch:
        time.sleep(0.02)
        continue
    for m in batch:
        write({"e": "claim", "id": m.id, "token": m.lease_token, "at": ms(m.updated_at), "until": ms(m.lease_expires_at)})
    for m in batch:
        time.sleep(random.random() * 0.002)  # the work
        try:
            if random.random() < fail_rate:
                n += 1
                error = f"fail {tag} {n}"
                q.fail(m.id, error, lease_token=m.lease_token)
                write({"e": "fail", "id": m.id, "token": m.lease_token, "error": error})
            else:
                q.succeed(m.id, lease_token=m.lease_token)
                write({"e": "ok", "id": m.id, "token": m.lease_token})
        except deadletter.ConflictError as err:
            write({"e": "conflict", "id": m.id, "token": m.lease_token, "reason": err.reason})
