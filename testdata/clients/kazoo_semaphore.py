#!/usr/bin/python3
"""Join a kazoo Semaphore and block, for zkwatch's semaphore tests.

usage: kazoo_semaphore.py HOSTS PATH TIMEOUT_SECONDS MAX_LEASES FIRST_ID COUNT

COUNT participants, numbered from FIRST_ID, each with its own KazooClient (its
own session) and Semaphore(PATH, identifier="p<i>", max_leases=MAX_LEASES),
join in order: a participant joins only once the previous one has a node (its
lease in PATH or its node in kazoo's lock queue at PATH-__lock__).

Prints, one line each, flushed:
  queued <i> <session>  participant i has a node; session is 0x<hex>
  acquired <i>          participant i holds a lease
  released <i>          after a "release <i>" command, if it held
  cancelled <i>         after a "release <i>" command, if it was still
                        waiting: its session closed, which deletes its
                        node. (kazoo 2.8's Semaphore.cancel() cannot end a
                        wait on the internal lock: that Lock is local to
                        the acquire call.)
Reads commands from stdin: "release <i>". Exits cleanly on EOF.
"""
import sys
import threading
import time

from kazoo.client import KazooClient
from kazoo.exceptions import NoNodeError

_say_lock = threading.Lock()


def say(*words):
    # One write per line: threads print at once.
    line = " ".join(str(w) for w in words) + "\n"
    with _say_lock:
        sys.stdout.write(line)
        sys.stdout.flush()


def has_node(zk, path, session):
    for folder in (path, path + "-__lock__"):
        try:
            names = zk.get_children(folder)
        except NoNodeError:
            continue
        for n in names:
            st = zk.exists(folder + "/" + n)
            if st is not None and st.ephemeralOwner == session:
                return True
    return False


def main():
    if len(sys.argv) != 7:
        sys.exit(__doc__)
    hosts, path, timeout = sys.argv[1], sys.argv[2], float(sys.argv[3])
    max_leases, first, count = int(sys.argv[4]), int(sys.argv[5]), int(sys.argv[6])
    clients, leave = [], {}
    stopping = threading.Event()
    for i in range(first, first + count):
        zk = KazooClient(hosts=hosts, timeout=timeout)
        zk.start(timeout=30)
        clients.append(zk)
        sem = zk.Semaphore(path, identifier="p%d" % i, max_leases=max_leases)
        ev = threading.Event()
        # state: under its lock, whether participant i acquired or gave up,
        # so that a release command and an acquire that race agree.
        state = {"lock": threading.Lock(), "acquired": False, "cancelled": False}

        def hold(i=i, sem=sem, ev=ev, state=state):
            try:
                sem.acquire()
                with state["lock"]:
                    if state["cancelled"]:
                        return
                    state["acquired"] = True
                say("acquired", i)
                ev.wait()
                sem.release()
                say("released", i)
            except Exception as e:  # pylint: disable=broad-except
                if not stopping.is_set() and not state["cancelled"]:
                    say("error", i, repr(e))

        def give_up(i=i, zk=zk, ev=ev, state=state):
            with state["lock"]:
                if state["acquired"]:
                    ev.set()
                    return
                state["cancelled"] = True
                zk.stop()
                zk.close()
            say("cancelled", i)

        leave[i] = give_up

        threading.Thread(target=hold, daemon=True).start()
        session = zk.client_id[0]
        deadline = time.time() + 30
        while not has_node(zk, path, session):
            if time.time() > deadline:
                sys.exit("participant %d: no node after 30s" % i)
            time.sleep(0.01)
        say("queued", i, "0x%x" % session)

    for line in sys.stdin:
        parts = line.split()
        if len(parts) == 2 and parts[0] == "release" and int(parts[1]) in leave:
            leave[int(parts[1])]()
    stopping.set()
    for zk in clients:
        if zk.connected:
            zk.stop()
            zk.close()


if __name__ == "__main__":
    main()
