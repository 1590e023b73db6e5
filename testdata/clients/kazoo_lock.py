#!/usr/bin/python3
"""Join kazoo lock queues and block, for zkwatch's cross-library tests.

usage: kazoo_lock.py HOSTS PATH TIMEOUT_SECONDS KIND...

KIND is lock, read or write (kazoo's Lock, ReadLock, WriteLock), optionally
followed by =NAME: the participant's identifier, which kazoo writes as its
node's data (default p<i>). Each KIND is one participant with its own
KazooClient (its own session), joining in the order given: a participant
joins only once the previous one's node exists.

Prints, one line each, flushed:
  queued <i> <node>     participant i's node exists (it may hold or wait)
  acquired <i> <node>   participant i holds the lock
  released <i>          after a "release <i>" command, if it held
  cancelled <i>         after a "release <i>" command, if it was still
                        waiting: Lock.cancel(), and kazoo deletes its node
Reads commands from stdin: "release <i>". Exits cleanly on EOF.
"""
import sys
import threading
import time

from kazoo.client import KazooClient
from kazoo.exceptions import CancelledError


_say_lock = threading.Lock()


def say(*words):
    # One write per line under a lock: the participants' threads and the
    # main thread print at once, and print() writes each word separately,
    # which once interleaved into "queuedacquired 0 ...".
    line = " ".join(str(w) for w in words) + "\n"
    with _say_lock:
        sys.stdout.write(line)
        sys.stdout.flush()


def main():
    if len(sys.argv) < 5:
        sys.exit(__doc__)
    hosts, path, timeout, kinds = sys.argv[1], sys.argv[2], float(sys.argv[3]), sys.argv[4:]
    clients, locks, release, acquired = [], [], [], []
    stopping = threading.Event()
    for i, spec in enumerate(kinds):
        kind, _, name = spec.partition("=")
        ident = name or "p%d" % i
        zk = KazooClient(hosts=hosts, timeout=timeout)
        zk.start(timeout=30)
        clients.append(zk)
        if kind == "lock":
            lk = zk.Lock(path, identifier=ident)
        elif kind == "read":
            lk = zk.ReadLock(path, identifier=ident)
        elif kind == "write":
            lk = zk.WriteLock(path, identifier=ident)
        else:
            sys.exit("unknown kind %r" % kind)
        locks.append(lk)
        ev = threading.Event()
        release.append(ev)
        got = threading.Event()
        acquired.append(got)

        def hold(i=i, lk=lk, ev=ev, got=got):
            try:
                try:
                    lk.acquire()
                except CancelledError:
                    say("cancelled", i)
                    return
                got.set()
                say("acquired", i, lk.node)
                ev.wait()
                lk.release()
                say("released", i)
            except Exception as e:  # pylint: disable=broad-except
                if not stopping.is_set():
                    say("error", i, repr(e))

        threading.Thread(target=hold, daemon=True).start()
        deadline = time.time() + 30
        while lk.node is None:
            if time.time() > deadline:
                sys.exit("participant %d: no node after 30s" % i)
            time.sleep(0.01)
        say("queued", i, lk.node)

    for line in sys.stdin:
        parts = line.split()
        if len(parts) == 2 and parts[0] == "release":
            i = int(parts[1])
            release[i].set()
            if not acquired[i].is_set():
                # Still waiting: give up. Had the acquire won the race,
                # the release event set above makes it release at once.
                locks[i].cancel()
    stopping.set()
    for zk in clients:
        zk.stop()
        zk.close()


if __name__ == "__main__":
    main()
