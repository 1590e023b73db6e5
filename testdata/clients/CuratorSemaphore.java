// Joins a Curator semaphore and blocks, for zkwatch's semaphore tests.
//
// usage: java CuratorSemaphore CONNECT PATH SESSION_TIMEOUT_MS LEASES FIRST_ID COUNT
//
// LEASES is the lease limit of an InterProcessSemaphoreV2 at PATH, or
// "mutex" for an InterProcessSemaphoreMutex (built on one with a single
// lease). COUNT participants, numbered from FIRST_ID, each with its own
// CuratorFramework (its own session), join in order: a participant joins only
// once the previous one has a node (its lock node or its lease) at PATH.
//
// Prints, one line each:
//   queued <i> <session>   participant i has a node (it may hold or wait);
//                          session is its session id as 0x<hex>
//   acquired <i>           participant i holds a lease
//   released <i>           after a "release <i>" command
// Reads "release <i>" commands from stdin; exits on EOF.
import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CountDownLatch;

import org.apache.curator.framework.CuratorFramework;
import org.apache.curator.framework.CuratorFrameworkFactory;
import org.apache.curator.framework.recipes.locks.InterProcessSemaphoreMutex;
import org.apache.curator.framework.recipes.locks.InterProcessSemaphoreV2;
import org.apache.curator.framework.recipes.locks.Lease;
import org.apache.curator.retry.RetryOneTime;
import org.apache.zookeeper.data.Stat;

public class CuratorSemaphore {
    static volatile boolean stopping;

    static synchronized void say(String s) {
        System.out.println(s);
        System.out.flush();
    }

    // hasNode: does the session own a node in PATH/leases or PATH/locks?
    static boolean hasNode(CuratorFramework c, String path, long session) throws Exception {
        for (String dir : new String[] {"leases", "locks"}) {
            String d = path + "/" + dir;
            if (c.checkExists().forPath(d) == null) {
                continue;
            }
            for (String n : c.getChildren().forPath(d)) {
                Stat st = c.checkExists().forPath(d + "/" + n);
                if (st != null && st.getEphemeralOwner() == session) {
                    return true;
                }
            }
        }
        return false;
    }

    public static void main(String[] args) throws Exception {
        if (args.length != 6) {
            System.err.println("usage: CuratorSemaphore CONNECT PATH SESSION_TIMEOUT_MS LEASES FIRST_ID COUNT");
            System.exit(2);
        }
        String connect = args[0], path = args[1];
        int timeout = Integer.parseInt(args[2]);
        boolean mutex = args[3].equals("mutex");
        int leases = mutex ? 1 : Integer.parseInt(args[3]);
        int first = Integer.parseInt(args[4]), count = Integer.parseInt(args[5]);
        List<CuratorFramework> clients = new ArrayList<>();
        Map<Integer, CountDownLatch> releases = new HashMap<>();
        for (int k = 0; k < count; k++) {
            final int id = first + k;
            CuratorFramework c = CuratorFrameworkFactory.newClient(connect, timeout, 15000, new RetryOneTime(200));
            c.start();
            c.blockUntilConnected();
            clients.add(c);
            long session = c.getZookeeperClient().getZooKeeper().getSessionId();
            final CountDownLatch release = new CountDownLatch(1);
            releases.put(id, release);
            final InterProcessSemaphoreMutex m = mutex ? new InterProcessSemaphoreMutex(c, path) : null;
            final InterProcessSemaphoreV2 sem = mutex ? null : new InterProcessSemaphoreV2(c, path, leases);
            if (sem != null) {
                sem.setNodeData(("p" + id).getBytes("UTF-8"));
            }
            Thread t = new Thread(() -> {
                try {
                    Lease lease = null;
                    if (m != null) {
                        m.acquire();
                    } else {
                        lease = sem.acquire();
                    }
                    say("acquired " + id);
                    release.await();
                    if (m != null) {
                        m.release();
                    } else {
                        sem.returnLease(lease);
                    }
                    say("released " + id);
                } catch (Exception e) {
                    if (!stopping) {
                        say("error " + id + " " + e);
                    }
                }
            });
            t.setDaemon(true);
            t.start();
            long deadline = System.currentTimeMillis() + 30000;
            while (!hasNode(c, path, session)) {
                if (System.currentTimeMillis() > deadline) {
                    throw new IllegalStateException("participant " + id + ": no node after 30s");
                }
                Thread.sleep(10);
            }
            say("queued " + id + " 0x" + Long.toHexString(session));
        }
        BufferedReader in = new BufferedReader(new InputStreamReader(System.in));
        for (String line; (line = in.readLine()) != null; ) {
            String[] parts = line.trim().split("\\s+");
            if (parts.length == 2 && parts[0].equals("release")) {
                CountDownLatch l = releases.get(Integer.parseInt(parts[1]));
                if (l != null) {
                    l.countDown();
                }
            }
        }
        stopping = true;
        for (CuratorFramework c : clients) {
            c.close();
        }
        System.exit(0);
    }
}
