#!/usr/bin/python3
"""Deadlock kazoo clients across locks, for zklockviz's cross-lock tests.

usage: kazoo_deadlock.py HOSTS TIMEOUT_SECONDS PATH...

One KazooClient (its own session) per PATH. Client i takes kazoo's Lock on
PATH[i] (data "c<i>"); once every client holds its lock, client i queues on
PATH[i+1] (the last on PATH[0]), which it never gets: the waits form a cycle
through every lock.

Prints, one line each, flushed:
  holding <i> <node>    client i holds PATH[i]
  waiting <i> <node>    client i's node on the next lock exists
Exits cleanly on EOF of stdin, its sessions closed.
"""
import sys
import threading
import time

from kazoo.client import KazooClient


def say(*words):
    sys.stdout.write(" ".join(str(w) for w in words) + "\n")
    sys.stdout.flush()


def acquire(lk):
    # Never granted; it ends with an error once the session closes.
    try:
        lk.acquire()
    except Exception:
        pass


def main():
    if len(sys.argv) < 5:
        sys.exit(__doc__)
    hosts, timeout, paths = sys.argv[1], float(sys.argv[2]), sys.argv[3:]
    clients, held = [], []
    for i, path in enumerate(paths):
        zk = KazooClient(hosts=hosts, timeout=timeout)
        zk.start(timeout=30)
        clients.append(zk)
        lk = zk.Lock(path, identifier="c%d" % i)
        lk.acquire()
        held.append(lk)
        say("holding", i, lk.node)
    waits = []
    for i, zk in enumerate(clients):
        lk = zk.Lock(paths[(i + 1) % len(paths)], identifier="c%d" % i)
        waits.append(lk)
        threading.Thread(target=acquire, args=(lk,), daemon=True).start()
        while lk.node is None:
            time.sleep(0.01)
        say("waiting", i, lk.node)
    sys.stdin.read()
    for zk in clients:
        zk.stop()
        zk.close()


if __name__ == "__main__":
    main()
