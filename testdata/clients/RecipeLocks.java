// Joins ZooKeeper's own lock recipe (org.apache.zookeeper.recipes.lock.
// WriteLock) and blocks, for zkwatch's cross-library tests.
//
// usage: java RecipeLocks CONNECT PATH SESSION_TIMEOUT_MS COUNT
//
// COUNT participants, each with its own ZooKeeper handle (its own session),
// join in order. Prints "queued <i> <node>", "acquired <i>"; reads
// "release <i>" from stdin, after which a holder prints "released <i>" and a
// waiter that gave up "cancelled <i>"; exits on EOF.
import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.atomic.AtomicBoolean;

import org.apache.zookeeper.CreateMode;
import org.apache.zookeeper.KeeperException;
import org.apache.zookeeper.Watcher;
import org.apache.zookeeper.ZooDefs;
import org.apache.zookeeper.ZooKeeper;
import org.apache.zookeeper.recipes.lock.LockListener;
import org.apache.zookeeper.recipes.lock.WriteLock;

public class RecipeLocks {
    static synchronized void say(String s) {
        System.out.println(s);
        System.out.flush();
    }

    public static void main(String[] args) throws Exception {
        if (args.length != 4) {
            System.err.println("usage: RecipeLocks CONNECT PATH SESSION_TIMEOUT_MS COUNT");
            System.exit(2);
        }
        String connect = args[0], path = args[1];
        int timeout = Integer.parseInt(args[2]), count = Integer.parseInt(args[3]);
        List<ZooKeeper> handles = new ArrayList<>();
        List<WriteLock> locks = new ArrayList<>();
        List<AtomicBoolean> acquired = new ArrayList<>();
        for (int i = 0; i < count; i++) {
            final int id = i;
            CountDownLatch connected = new CountDownLatch(1);
            ZooKeeper zk = new ZooKeeper(connect, timeout, ev -> {
                if (ev.getState() == Watcher.Event.KeeperState.SyncConnected) {
                    connected.countDown();
                }
            });
            connected.await();
            handles.add(zk);
            if (i == 0) {
                // WriteLock creates PATH itself but not its parents.
                String p = "";
                String[] segs = path.substring(1).split("/");
                for (int j = 0; j < segs.length - 1; j++) {
                    p += "/" + segs[j];
                    try {
                        zk.create(p, new byte[0], ZooDefs.Ids.OPEN_ACL_UNSAFE, CreateMode.PERSISTENT);
                    } catch (KeeperException.NodeExistsException e) {
                        // fine
                    }
                }
            }
            AtomicBoolean held = new AtomicBoolean();
            acquired.add(held);
            WriteLock lock = new WriteLock(zk, path, null, new LockListener() {
                public void lockAcquired() {
                    held.set(true);
                    say("acquired " + id);
                }
                // unlock() calls this for a waiter too.
                public void lockReleased() {
                    if (held.get()) {
                        say("released " + id);
                    }
                }
            });
            locks.add(lock);
            // lock() creates the node and returns at once; it watches the
            // predecessor with exists() and calls lockAcquired later.
            lock.lock();
            say("queued " + id + " " + lock.getId());
        }
        BufferedReader in = new BufferedReader(new InputStreamReader(System.in));
        for (String line; (line = in.readLine()) != null; ) {
            String[] parts = line.trim().split("\\s+");
            if (parts.length == 2 && parts[0].equals("release")) {
                int i = Integer.parseInt(parts[1]);
                WriteLock lock = locks.get(i);
                // unlock() deletes the node of a holder and of a waiter
                // alike. close() after it (before, unlock() would do
                // nothing) keeps a waiter's exists() watch, still armed on
                // its predecessor, from running lock() again and rejoining
                // the queue when it fires.
                lock.unlock();
                lock.close();
                if (!acquired.get(i).get()) {
                    say("cancelled " + i);
                }
            }
        }
        for (ZooKeeper zk : handles) {
            zk.close();
        }
        System.exit(0);
    }
}
