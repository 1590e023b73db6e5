// Joins Curator lock queues and blocks, for zkwatch's cross-library tests.
//
// usage: java CuratorLocks CONNECT PATH SESSION_TIMEOUT_MS KIND...
//
// KIND is mutex (InterProcessMutex), read or write (the two sides of one
// InterProcessReadWriteLock at PATH), downgrade (that lock's write side,
// then its read side in the same thread: Curator's documented downgrade,
// granted at once), or latch (LeaderLatch, whose leader holds). Each KIND is one participant with its own CuratorFramework (its own
// session), joining in the order given: a participant joins only once the
// previous one's node exists.
//
// Prints "queued <i> <node>", "acquired <i>", and after a "release <i>"
// command on stdin "released <i>" (it held) or "cancelled <i>" (it was still
// waiting and gave up: an interrupted acquire, or a closed latch, which is how
// Curator lets a waiter leave the queue). Exits on EOF.
import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.List;
import java.util.Set;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;

import org.apache.curator.framework.CuratorFramework;
import org.apache.curator.framework.CuratorFrameworkFactory;
import org.apache.curator.framework.recipes.leader.LeaderLatch;
import org.apache.curator.framework.recipes.locks.InterProcessLock;
import org.apache.curator.framework.recipes.locks.InterProcessMutex;
import org.apache.curator.framework.recipes.locks.InterProcessReadWriteLock;
import org.apache.curator.retry.RetryOneTime;

public class CuratorLocks {
    static volatile boolean stopping;

    static synchronized void say(String s) {
        System.out.println(s);
        System.out.flush();
    }

    // One participant: its thread acquires, holds until released, and
    // tells which of the two ways it left.
    static class Participant {
        final int id;
        final InterProcessLock lock; // null for a latch
        final LeaderLatch latch;     // null for a lock
        final CountDownLatch release = new CountDownLatch(1);
        final AtomicBoolean acquired = new AtomicBoolean();
        final AtomicBoolean leaving = new AtomicBoolean();
        Thread thread;

        Participant(int id, InterProcessLock lock, LeaderLatch latch) {
            this.id = id;
            this.lock = lock;
            this.latch = latch;
        }

        void run() {
            try {
                if (lock != null) {
                    lock.acquire();
                } else {
                    latch.start();
                    latch.await();
                }
            } catch (Exception e) {
                // A waiter told to leave ends here: InterruptedException
                // from a lock (Curator deletes its node), EOFException from
                // a closed latch.
                if (leaving.get()) {
                    say("cancelled " + id);
                } else if (!stopping) {
                    say("error " + id + " " + e);
                }
                return;
            }
            acquired.set(true);
            say("acquired " + id);
            // A release that raced the acquire interrupted this thread: it
            // still holds, so it must still release.
            while (true) {
                try {
                    release.await();
                    break;
                } catch (InterruptedException e) {
                    // go on waiting for the release command
                }
            }
            Thread.interrupted();
            try {
                if (lock != null) {
                    lock.release();
                } else {
                    latch.close();
                }
                say("released " + id);
            } catch (Exception e) {
                if (!stopping) {
                    say("error " + id + " " + e);
                }
            }
        }

        // leave releases a holder, and makes a waiter give up.
        void leave() throws Exception {
            leaving.set(true);
            release.countDown();
            if (!acquired.get()) {
                if (lock != null) {
                    thread.interrupt();
                } else {
                    latch.close();
                }
            }
        }
    }

    // downgrade is rw's write lock, then its read lock taken by the thread
    // that holds the write lock (Curator grants it at once); releasing lets
    // go of the write lock first, as a downgrade does, then the read lock.
    static InterProcessLock downgrade(InterProcessReadWriteLock rw) {
        return new InterProcessLock() {
            public void acquire() throws Exception {
                rw.writeLock().acquire();
                rw.readLock().acquire();
            }

            public boolean acquire(long time, TimeUnit unit) throws Exception {
                throw new UnsupportedOperationException("downgrade waits without a time limit");
            }

            public void release() throws Exception {
                rw.writeLock().release();
                rw.readLock().release();
            }

            public boolean isAcquiredInThisProcess() {
                return rw.writeLock().isAcquiredInThisProcess() || rw.readLock().isAcquiredInThisProcess();
            }
        };
    }

    public static void main(String[] args) throws Exception {
        if (args.length < 4) {
            System.err.println("usage: CuratorLocks CONNECT PATH SESSION_TIMEOUT_MS KIND...");
            System.exit(2);
        }
        String connect = args[0], path = args[1];
        int timeout = Integer.parseInt(args[2]);
        List<CuratorFramework> clients = new ArrayList<>();
        List<Participant> participants = new ArrayList<>();
        for (int i = 3; i < args.length; i++) {
            final int id = i - 3;
            CuratorFramework c = CuratorFrameworkFactory.newClient(connect, timeout, 15000, new RetryOneTime(200));
            c.start();
            c.blockUntilConnected();
            clients.add(c);
            Set<String> before = new HashSet<>();
            if (c.checkExists().forPath(path) != null) {
                before.addAll(c.getChildren().forPath(path));
            }
            final Participant p;
            switch (args[i]) {
                case "mutex": p = new Participant(id, new InterProcessMutex(c, path), null); break;
                case "read": p = new Participant(id, new InterProcessReadWriteLock(c, path).readLock(), null); break;
                case "write": p = new Participant(id, new InterProcessReadWriteLock(c, path).writeLock(), null); break;
                case "downgrade": p = new Participant(id, downgrade(new InterProcessReadWriteLock(c, path)), null); break;
                case "latch": p = new Participant(id, null, new LeaderLatch(c, path, "p" + id)); break;
                default: throw new IllegalArgumentException("unknown kind " + args[i]);
            }
            participants.add(p);
            // Curator's locks belong to the thread that acquired them.
            p.thread = new Thread(p::run);
            p.thread.setDaemon(true);
            p.thread.start();
            long deadline = System.currentTimeMillis() + 30000;
            String node = null;
            while (node == null) {
                if (c.checkExists().forPath(path) != null) {
                    for (String child : c.getChildren().forPath(path)) {
                        if (!before.contains(child)) {
                            node = child;
                        }
                    }
                }
                if (node != null) {
                    break;
                }
                if (System.currentTimeMillis() > deadline) {
                    throw new IllegalStateException("participant " + id + ": no node after 30s");
                }
                Thread.sleep(10);
            }
            say("queued " + id + " " + node);
            // A downgrade's read node comes once its write lock is held:
            // the next participant's node must not be taken for it.
            while (args[i].equals("downgrade") && !p.acquired.get()) {
                if (System.currentTimeMillis() > deadline) {
                    throw new IllegalStateException("participant " + id + ": no downgrade after 30s");
                }
                Thread.sleep(10);
            }
        }
        BufferedReader in = new BufferedReader(new InputStreamReader(System.in));
        for (String line; (line = in.readLine()) != null; ) {
            String[] parts = line.trim().split("\\s+");
            if (parts.length == 2 && parts[0].equals("release")) {
                participants.get(Integer.parseInt(parts[1])).leave();
            }
        }
        stopping = true;
        for (CuratorFramework c : clients) {
            c.close();
        }
        System.exit(0);
    }
}
