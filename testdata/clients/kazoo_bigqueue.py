#!/usr/bin/python3
"""Make one big kazoo lock queue, for the big-queue test and benchmark.

usage: kazoo_bigqueue.py HOSTS PATH NODES

Makes NODES persistent sequential "<32 hex>__lock__" children of PATH, as
kazoo's Lock names them when asked for ephemeral=False, each with a few
bytes of data ("worker-N"), in transactions of up to 1,000 creates
(kazoo's transaction(): ZooKeeper's multi), so 100,000 take seconds.

Prints "first NAME" (the holder: the lowest sequence), then
"ready <seconds>"; on EOF on stdin deletes what it made and exits.
"""
import sys
import time
import uuid

from kazoo.client import KazooClient

BATCH = 1000


def main():
    if len(sys.argv) != 4:
        sys.exit(__doc__)
    hosts, path, nodes = sys.argv[1], sys.argv[2].rstrip("/"), int(sys.argv[3])
    start = time.monotonic()
    client = KazooClient(hosts=hosts, timeout=30.0)
    client.start(timeout=60)
    client.ensure_path(path)
    made = []
    for i in range(0, nodes, BATCH):
        tx = client.transaction()
        for j in range(i, min(nodes, i + BATCH)):
            tx.create("%s/%s__lock__" % (path, uuid.uuid4().hex), b"worker-%d" % j, sequence=True)
        for r in tx.commit():
            if isinstance(r, Exception):
                raise r
            made.append(r)
    first = min(made, key=lambda p: int(p[-10:]))
    print("first", first.rsplit("/", 1)[1])
    print("ready %.2f" % (time.monotonic() - start), flush=True)
    sys.stdin.read()
    for i in range(0, len(made), BATCH):
        tx = client.transaction()
        for p in made[i:i + BATCH]:
            tx.delete(p)
        tx.commit()
    client.delete(path)
    client.stop()
    client.close()


if __name__ == "__main__":
    main()
