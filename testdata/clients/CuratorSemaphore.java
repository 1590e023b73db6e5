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
//   released <i>           after a "release <i>" command, if it held
//   cancelled <i>          after a "release <i>" command, if it was still
//                          waiting: its acquire interrupted, which is how
//                          Curator lets a waiter give up (it deletes the
//                          participant's lock node and any lease node)
// Needs CuratorLocks (compiled with it), whose Participant it runs.
// Reads "release <i>" commands from stdin; exits on EOF.
import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;

import org.apache.curator.framework.CuratorFramework;
import org.apache.curator.framework.CuratorFrameworkFactory;
import org.apache.curator.framework.recipes.locks.InterProcessLock;
import org.apache.curator.framework.recipes.locks.InterProcessSemaphoreMutex;
import org.apache.curator.framework.recipes.locks.InterProcessSemaphoreV2;
import org.apache.curator.framework.recipes.locks.Lease;
import org.apache.curator.retry.RetryOneTime;
import org.apache.zookeeper.data.Stat;

public class CuratorSemaphore {
    // One lease of an InterProcessSemaphoreV2 as an InterProcessLock, so
    // that CuratorLocks.Participant drives it as it drives the locks (and
    // InterProcessSemaphoreMutex, itself an InterProcessLock).
    static class LeaseLock implements InterProcessLock {
        final InterProcessSemaphoreV2 sem;
        volatile Lease lease;

        LeaseLock(InterProcessSemaphoreV2 sem) {
            this.sem = sem;
        }

        public void acquire() throws Exception {
            lease = sem.acquire();
        }

        public boolean acquire(long time, TimeUnit unit) throws Exception {
            lease = sem.acquire(time, unit);
            return lease != null;
        }

        public void release() throws Exception {
            sem.returnLease(lease);
            lease = null;
        }

        public boolean isAcquiredInThisProcess() {
            return lease != null;
        }
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
        Map<Integer, CuratorLocks.Participant> participants = new HashMap<>();
        for (int k = 0; k < count; k++) {
            final int id = first + k;
            CuratorFramework c = CuratorFrameworkFactory.newClient(connect, timeout, 15000, new RetryOneTime(200));
            c.start();
            c.blockUntilConnected();
            clients.add(c);
            long session = c.getZookeeperClient().getZooKeeper().getSessionId();
            final InterProcessLock lock;
            if (mutex) {
                lock = new InterProcessSemaphoreMutex(c, path);
            } else {
                InterProcessSemaphoreV2 sem = new InterProcessSemaphoreV2(c, path, leases);
                sem.setNodeData(("p" + id).getBytes("UTF-8"));
                lock = new LeaseLock(sem);
            }
            CuratorLocks.Participant p = new CuratorLocks.Participant(id, lock, null);
            participants.put(id, p);
            // Curator's semaphore mutex belongs to the thread that acquired it.
            p.thread = new Thread(p::run);
            p.thread.setDaemon(true);
            p.thread.start();
            long deadline = System.currentTimeMillis() + 30000;
            while (!hasNode(c, path, session)) {
                if (System.currentTimeMillis() > deadline) {
                    throw new IllegalStateException("participant " + id + ": no node after 30s");
                }
                Thread.sleep(10);
            }
            CuratorLocks.say("queued " + id + " 0x" + Long.toHexString(session));
        }
        BufferedReader in = new BufferedReader(new InputStreamReader(System.in));
        for (String line; (line = in.readLine()) != null; ) {
            String[] parts = line.trim().split("\\s+");
            if (parts.length == 2 && parts[0].equals("release")) {
                CuratorLocks.Participant p = participants.get(Integer.parseInt(parts[1]));
                if (p != null) {
                    p.leave();
                }
            }
        }
        CuratorLocks.stopping = true;
        for (CuratorFramework c : clients) {
            c.close();
        }
        System.exit(0);
    }
}
