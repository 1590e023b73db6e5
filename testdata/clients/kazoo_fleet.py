#!/usr/bin/python3
"""Make a fleet of kazoo lock parents, for the --watch-under tests and the
fleet benchmark.

usage: kazoo_fleet.py HOSTS PREFIX PARENTS HELD

Makes PARENTS lock parents PREFIX/order-NNNNNNN, left empty as kazoo's Lock
leaves them after a release, and in HELD of them, spread evenly, a holder
and a waiter: two ephemeral sequential "<32 hex>__lock__" nodes, as kazoo's
Lock names them, of this script's one session. Everything is made in
transactions of up to 1,000 creates (kazoo's transaction(): ZooKeeper's
multi), so 100,000 parents take seconds.

Prints "held PATH" for each held parent, then "ready <seconds>"; keeps the
session, and with it the held locks, until EOF on stdin.
"""
import sys
import time
import uuid

from kazoo.client import KazooClient

BATCH = 1000


def commit(client, creates):
    """Make creates, (path, ephemeral, sequence) each, BATCH at a time."""
    for i in range(0, len(creates), BATCH):
        tx = client.transaction()
        for path, ephemeral, sequence in creates[i:i + BATCH]:
            tx.create(path, b"", ephemeral=ephemeral, sequence=sequence)
        for r in tx.commit():
            if isinstance(r, Exception):
                raise r


def main():
    if len(sys.argv) != 5:
        sys.exit(__doc__)
    hosts, prefix, parents, held = sys.argv[1], sys.argv[2].rstrip("/"), int(sys.argv[3]), int(sys.argv[4])
    if held > parents:
        sys.exit("HELD is more than PARENTS")
    start = time.monotonic()
    client = KazooClient(hosts=hosts, timeout=30.0)
    client.start(timeout=60)
    client.ensure_path(prefix)
    # No name ends in ten digits: that would be a sequential node, and its
    # folder a lock parent.
    names = ["%s/order-%07d" % (prefix, i) for i in range(parents)]
    commit(client, [(n, False, False) for n in names])
    every = parents // held if held else 0
    holding = [names[i * every] for i in range(held)]
    nodes = []
    for n in holding:
        for _ in range(2):  # the holder, then its waiter
            nodes.append(("%s/%s__lock__" % (n, uuid.uuid4().hex), True, True))
    commit(client, nodes)
    for n in holding:
        print("held", n)
    print("ready %.2f" % (time.monotonic() - start), flush=True)
    sys.stdin.read()
    client.stop()
    client.close()


if __name__ == "__main__":
    main()
