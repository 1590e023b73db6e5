// Churns Curator locks or ZooKeeper's own lock recipe, for zkwatch's
// no-false-alarm tests: healthy queues handed off many times.
//
// usage: java ChurnLocks CONNECT PATH SESSION_TIMEOUT_MS TOTAL KIND...
//
// KIND is mutex (Curator InterProcessMutex), read or write (the two sides of
// one Curator InterProcessReadWriteLock at PATH) or recipe (ZooKeeper's
// org.apache.zookeeper.recipes.lock.WriteLock). Each KIND is one participant
// with its own session that acquires, holds for up to 80 ms (every tenth
// acquire overall 1.2 s), releases and pauses for up to 40 ms, again and
// again, until the participants together have acquired TOTAL times.
//
// Prints "acquired <n> <participant>" for the n-th acquire overall, then
// "done" once every participant has stopped; exits on EOF after that.
import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.ThreadLocalRandom;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;

import org.apache.curator.framework.CuratorFramework;
import org.apache.curator.framework.CuratorFrameworkFactory;
import org.apache.curator.framework.recipes.locks.InterProcessLock;
import org.apache.curator.framework.recipes.locks.InterProcessMutex;
import org.apache.curator.framework.recipes.locks.InterProcessReadWriteLock;
import org.apache.curator.retry.RetryOneTime;
import org.apache.zookeeper.CreateMode;
import org.apache.zookeeper.KeeperException;
import org.apache.zookeeper.Watcher;
import org.apache.zookeeper.ZooDefs;
import org.apache.zookeeper.ZooKeeper;
import org.apache.zookeeper.recipes.lock.LockListener;
import org.apache.zookeeper.recipes.lock.WriteLock;

public class ChurnLocks {
    // Every tenth acquire holds this long: longer than the watcher's stall
    // grace, so a holder wrongly taken for stalled would be reported.
    static final int LONG_HOLD_MS = 1200;

    static synchronized void say(String s) {
        System.out.println(s);
        System.out.flush();
    }

    // One participant's lock: acquire blocks until held.
    interface Churnable {
        void acquire() throws Exception;
        void release() throws Exception;
    }

    static Churnable curator(CuratorFramework c, String path, String kind) {
        final InterProcessLock lock;
        switch (kind) {
            case "mutex": lock = new InterProcessMutex(c, path); break;
            case "read": lock = new InterProcessReadWriteLock(c, path).readLock(); break;
            case "write": lock = new InterProcessReadWriteLock(c, path).writeLock(); break;
            default: throw new IllegalArgumentException("unknown kind " + kind);
        }
        return new Churnable() {
            public void acquire() throws Exception { lock.acquire(); }
            public void release() throws Exception { lock.release(); }
        };
    }

    // ZooKeeper's WriteLock acquires asynchronously: lock() returns at once
    // and lockAcquired() is called when its predecessor goes. ZooKeeper
    // 3.8.0's recipe has a race: when the predecessor goes between its
    // getChildren and its exists, it logs "Could not find the stats for
    // less than me" and returns false with no watch set, so nothing ever
    // calls lockAcquired(). Calling lock() again, as its own watcher does on
    // an event, finds it the owner. It is called again only after 10 s
    // without a grant, far past any wait here (four contenders, holds of at
    // most LONG_HOLD_MS), so that a second watch on a predecessor still
    // there cannot grant a round twice.
    static Churnable recipe(ZooKeeper zk, String path) {
        final java.util.concurrent.Semaphore held = new java.util.concurrent.Semaphore(0);
        final WriteLock lock = new WriteLock(zk, path, null, new LockListener() {
            public void lockAcquired() { held.release(); }
            public void lockReleased() { }
        });
        return new Churnable() {
            public void acquire() throws Exception {
                boolean owner = lock.lock();
                for (int waited = 0; !owner; waited++) {
                    if (held.tryAcquire(waited == 0 ? 10 : 1, TimeUnit.SECONDS)) {
                        return;
                    }
                    if (waited == 50) {
                        throw new IllegalStateException("WriteLock " + lock.getId() + " not granted after 60s");
                    }
                    owner = lock.lock();
                }
                held.drainPermits();
            }
            public void release() throws Exception { lock.unlock(); }
        };
    }

    static ZooKeeper handle(String connect, int timeout) throws Exception {
        CountDownLatch connected = new CountDownLatch(1);
        ZooKeeper zk = new ZooKeeper(connect, timeout, ev -> {
            if (ev.getState() == Watcher.Event.KeeperState.SyncConnected) {
                connected.countDown();
            }
        });
        connected.await();
        return zk;
    }

    static void mkdirs(ZooKeeper zk, String path) throws Exception {
        String p = "";
        for (String seg : path.substring(1).split("/")) {
            p += "/" + seg;
            try {
                zk.create(p, new byte[0], ZooDefs.Ids.OPEN_ACL_UNSAFE, CreateMode.PERSISTENT);
            } catch (KeeperException.NodeExistsException e) {
                // fine
            }
        }
    }

    public static void main(String[] args) throws Exception {
        if (args.length < 5) {
            System.err.println("usage: ChurnLocks CONNECT PATH SESSION_TIMEOUT_MS TOTAL KIND...");
            System.exit(2);
        }
        String connect = args[0], path = args[1];
        int timeout = Integer.parseInt(args[2]), total = Integer.parseInt(args[3]);
        List<AutoCloseable> closers = new ArrayList<>();
        List<Churnable> locks = new ArrayList<>();
        for (int i = 4; i < args.length; i++) {
            if (args[i].equals("recipe")) {
                ZooKeeper zk = handle(connect, timeout);
                closers.add(zk::close);
                mkdirs(zk, path);
                locks.add(recipe(zk, path));
            } else {
                CuratorFramework c = CuratorFrameworkFactory.newClient(connect, timeout, 15000, new RetryOneTime(200));
                c.start();
                c.blockUntilConnected();
                closers.add(c::close);
                locks.add(curator(c, path, args[i]));
            }
        }
        AtomicInteger acquired = new AtomicInteger();
        CountDownLatch done = new CountDownLatch(locks.size());
        for (int i = 0; i < locks.size(); i++) {
            final int id = i;
            final Churnable lock = locks.get(i);
            Thread t = new Thread(() -> {
                try {
                    ThreadLocalRandom r = ThreadLocalRandom.current();
                    while (acquired.get() < total) {
                        lock.acquire();
                        int n = acquired.incrementAndGet();
                        say("acquired " + n + " " + id);
                        Thread.sleep(n % 10 == 0 ? LONG_HOLD_MS : r.nextInt(81));
                        lock.release();
                        Thread.sleep(r.nextInt(41));
                    }
                } catch (Exception e) {
                    say("error " + id + " " + e);
                } finally {
                    done.countDown();
                }
            });
            t.setDaemon(true);
            t.start();
        }
        done.await();
        say("done");
        BufferedReader in = new BufferedReader(new InputStreamReader(System.in));
        while (in.readLine() != null) {
            // wait for EOF
        }
        for (AutoCloseable c : closers) {
            c.close();
        }
        System.exit(0);
    }
}
