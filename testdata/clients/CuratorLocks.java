// Joins Curator lock queues and blocks, for zkwatch's cross-library tests.
//
// usage: java CuratorLocks CONNECT PATH SESSION_TIMEOUT_MS KIND...
//
// KIND is mutex (InterProcessMutex), read or write (the two sides of one
// InterProcessReadWriteLock at PATH). Each KIND is one participant with its
// own CuratorFramework (its own session), joining in the order given: a
// participant joins only once the previous one's node exists.
//
// Prints "queued <i>", "acquired <i>", "released <i>" lines; reads
// "release <i>" commands from stdin; exits on EOF.
import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CountDownLatch;

import org.apache.curator.framework.CuratorFramework;
import org.apache.curator.framework.CuratorFrameworkFactory;
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

    public static void main(String[] args) throws Exception {
        if (args.length < 4) {
            System.err.println("usage: CuratorLocks CONNECT PATH SESSION_TIMEOUT_MS KIND...");
            System.exit(2);
        }
        String connect = args[0], path = args[1];
        int timeout = Integer.parseInt(args[2]);
        List<CuratorFramework> clients = new ArrayList<>();
        List<CountDownLatch> releases = new ArrayList<>();
        for (int i = 3; i < args.length; i++) {
            final int id = i - 3;
            CuratorFramework c = CuratorFrameworkFactory.newClient(connect, timeout, 15000, new RetryOneTime(200));
            c.start();
            c.blockUntilConnected();
            clients.add(c);
            final InterProcessLock lock;
            switch (args[i]) {
                case "mutex": lock = new InterProcessMutex(c, path); break;
                case "read": lock = new InterProcessReadWriteLock(c, path).readLock(); break;
                case "write": lock = new InterProcessReadWriteLock(c, path).writeLock(); break;
                default: throw new IllegalArgumentException("unknown kind " + args[i]);
            }
            final CountDownLatch release = new CountDownLatch(1);
            releases.add(release);
            // Curator's locks belong to the thread that acquired them.
            Thread t = new Thread(() -> {
                try {
                    lock.acquire();
                    say("acquired " + id);
                    release.await();
                    lock.release();
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
            while (true) {
                if (c.checkExists().forPath(path) != null && c.getChildren().forPath(path).size() > id) {
                    break;
                }
                if (System.currentTimeMillis() > deadline) {
                    throw new IllegalStateException("participant " + id + ": no node after 30s");
                }
                Thread.sleep(10);
            }
            say("queued " + id);
        }
        BufferedReader in = new BufferedReader(new InputStreamReader(System.in));
        for (String line; (line = in.readLine()) != null; ) {
            String[] parts = line.trim().split("\\s+");
            if (parts.length == 2 && parts[0].equals("release")) {
                releases.get(Integer.parseInt(parts[1])).countDown();
            }
        }
        stopping = true;
        for (CuratorFramework c : clients) {
            c.close();
        }
        System.exit(0);
    }
}
