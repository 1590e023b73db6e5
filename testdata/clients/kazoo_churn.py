#!/usr/bin/python3
"""Churn kazoo locks, for zkwatch's no-false-alarm tests.

usage: kazoo_churn.py HOSTS PATH TIMEOUT_SECONDS TOTAL KIND...

KIND is lock, read or write (kazoo's Lock, ReadLock, WriteLock). Each KIND is
one participant with its own KazooClient (its own session) that acquires,
holds for up to 80 ms (every tenth acquire overall 1.2 s), releases and
pauses for up to 40 ms, again and again, until the participants together
have acquired TOTAL times.

kazoo before 2.9.0 has a ReadLock that waits for writers queued after it
and deadlocks under exactly this churn (kazoo issue #649). This script is
about healthy queues, so on those versions it applies the upstream fix
(kazoo pull request #650: only contenders with a lower sequence number
count) and says so on stderr.

Prints "acquired <n> <participant>" for the n-th acquire overall, then
"done" once every participant has stopped; exits on EOF after that.
"""
import random
import sys
import threading
import time

from kazoo.client import KazooClient
from kazoo.retry import ForceRetryError
from kazoo.recipe import lock as lock_recipe
import kazoo.version

from kazoo_lock import say  # this folder is on sys.path

# Every tenth acquire holds this long (seconds): longer than the watcher's
# stall grace, so a holder wrongly taken for stalled would be reported.
LONG_HOLD = 1.2


def _get_predecessor_fixed(self, node):
    """kazoo 2.9.0's Lock._get_predecessor (pull request #650)."""
    node_sequence = node[len(self.prefix):]
    children = self.client.get_children(self.path)
    found_self = False
    contender_matches = []
    for child in children:
        match = self._contenders_re.search(child)
        if match is not None:
            contender_sequence = match.group(1)
            if contender_sequence < node_sequence:
                contender_matches.append(match)
        if child == node:
            found_self = True
    if not found_self:
        raise ForceRetryError()
    if not contender_matches:
        return None
    return sorted(contender_matches, key=lambda m: m.groups())[-1].string


def main():
    if len(sys.argv) < 6:
        sys.exit(__doc__)
    hosts, path = sys.argv[1], sys.argv[2]
    timeout, total, kinds = float(sys.argv[3]), int(sys.argv[4]), sys.argv[5:]
    version = tuple(int(x) for x in kazoo.version.__version__.split(".")[:2])
    if version < (2, 9) and "read" in kinds:
        lock_recipe.Lock._get_predecessor = _get_predecessor_fixed
        sys.stderr.write("kazoo %s: ReadLock patched with the fix of kazoo #650\n" % kazoo.version.__version__)
    clients, threads = [], []
    count = [0]
    count_lock = threading.Lock()
    for i, kind in enumerate(kinds):
        zk = KazooClient(hosts=hosts, timeout=timeout)
        zk.start(timeout=30)
        clients.append(zk)
        make = {"lock": zk.Lock, "read": zk.ReadLock, "write": zk.WriteLock}.get(kind)
        if make is None:
            sys.exit("unknown kind %r" % kind)
        lk = make(path, identifier="p%d" % i)

        def churn(i=i, lk=lk):
            try:
                while True:
                    with count_lock:
                        if count[0] >= total:
                            return
                    lk.acquire()
                    with count_lock:
                        count[0] += 1
                        n = count[0]
                    say("acquired", n, i)
                    time.sleep(LONG_HOLD if n % 10 == 0 else random.randint(0, 80) / 1000)
                    lk.release()
                    time.sleep(random.randint(0, 40) / 1000)
            except Exception as e:  # pylint: disable=broad-except
                say("error", i, repr(e))

        t = threading.Thread(target=churn, daemon=True)
        t.start()
        threads.append(t)
    for t in threads:
        t.join()
    say("done")
    for _ in sys.stdin:
        pass
    for zk in clients:
        zk.stop()
        zk.close()


if __name__ == "__main__":
    main()
