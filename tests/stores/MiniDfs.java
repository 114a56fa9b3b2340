import java.io.File;
import java.io.InputStream;
import java.io.PrintStream;

import org.apache.hadoop.conf.Configuration;
import org.apache.hadoop.hdfs.HdfsConfiguration;
import org.apache.hadoop.hdfs.MiniDFSCluster;

/**
 * Runs an in-JVM HDFS (Hadoop's MiniDFSCluster) for sluice's tests, until its stdin ends.
 *
 * <p>Usage: {@code java -Dlog4j.configuration=file:tests/stores/conf/log4j.properties
 * -Dstores.root.logger=INFO,file -Dstores.log.file=BASE/minidfs.log
 * -cp 'target/stores/classes/HASH:target/stores/lib/*' MiniDfs --base BASE [--datanodes N]
 * [--block-size BYTES]} (crates/testkit starts it so).
 *
 * <p>The cluster keeps its storage under {@code BASE/data}. The NameNode's RPC and HTTP
 * (WebHDFS) servers, and the DataNodes', listen on 127.0.0.1 on ports the system picks.
 * Permissions are checked; the superuser is the user running the JVM. The default block size is
 * {@code --block-size} (1 MiB and up, a multiple of 512: the checksum chunk), and blocks down to
 * 1 MiB are allowed; replication defaults to the smaller of the DataNodes and 3.
 *
 * <p>When the cluster is up it prints one line on stdout, {@code READY hdfs://127.0.0.1:PORT
 * 127.0.0.1:HTTPPORT}, and nothing else ever (everything else goes to stderr and the log).
 * When its stdin reaches end of file (the test closed it, or the test process died) the JVM
 * halts at once: no shutdown hooks, no orderly stop, since the storage is thrown away.
 */
public final class MiniDfs {
  private MiniDfs() {}

  public static void main(String[] args) throws Exception {
    PrintStream ready = System.out;
    // Whatever Hadoop prints goes to stderr: stdout carries the READY line alone.
    System.setOut(System.err);

    String base = null;
    int datanodes = 1;
    long blockSize = 1L << 20;
    for (int i = 0; i < args.length; i++) {
      String value = i + 1 < args.length ? args[i + 1] : null;
      switch (args[i]) {
        case "--base" -> base = value;
        case "--datanodes" -> datanodes = Integer.parseInt(value);
        case "--block-size" -> blockSize = Long.parseLong(value);
        default -> fail("unknown argument " + args[i]);
      }
      i++;
    }
    if (base == null) {
      fail("usage: MiniDfs --base DIR [--datanodes N] [--block-size BYTES]");
    }
    if (datanodes < 1) {
      fail("--datanodes must be at least 1");
    }
    if (blockSize < (1L << 20) || blockSize % 512 != 0) {
      fail("--block-size must be at least 1 MiB and a multiple of 512, not " + blockSize);
    }
    // Halt as soon as stdin ends, also while the cluster is still starting.
    Thread watcher = new Thread(MiniDfs::haltAtEndOfStdin, "stdin-watcher");
    watcher.setDaemon(true);
    watcher.start();

    Configuration conf = new HdfsConfiguration();
    conf.set(MiniDFSCluster.HDFS_MINIDFS_BASEDIR, new File(base, "data").getAbsolutePath());
    conf.set("hadoop.tmp.dir", new File(base, "tmp").getAbsolutePath());
    conf.setLong("dfs.namenode.fs-limits.min-block-size", 1L << 20);
    conf.setLong("dfs.blocksize", blockSize);
    conf.setInt("dfs.replication", Math.min(datanodes, 3));
    conf.setBoolean("dfs.webhdfs.enabled", true);
    conf.setBoolean("dfs.permissions.enabled", true);
    // Loopback only, the DataNodes too (MiniDFSCluster binds the NameNode to 127.0.0.1 itself).
    conf.set("dfs.datanode.address", "127.0.0.1:0");
    conf.set("dfs.datanode.http.address", "127.0.0.1:0");
    conf.set("dfs.datanode.ipc.address", "127.0.0.1:0");

    MiniDFSCluster cluster;
    try {
      cluster = new MiniDFSCluster.Builder(conf)
          .numDataNodes(datanodes)
          .nameNodePort(0)
          .nameNodeHttpPort(0)
          .format(true)
          .build();
      cluster.waitActive();
    } catch (Throwable e) {
      e.printStackTrace();
      Runtime.getRuntime().halt(1);
      return;
    }
    int rpc = cluster.getNameNodePort();
    int http = cluster.getNameNode().getHttpAddress().getPort();
    ready.println("READY hdfs://127.0.0.1:" + rpc + " 127.0.0.1:" + http);
    ready.flush();
    watcher.join();
  }

  private static void haltAtEndOfStdin() {
    byte[] buf = new byte[256];
    InputStream in = System.in;
    try {
      while (in.read(buf) != -1) {
        // Nothing is expected on stdin: it is only watched for its end.
      }
    } catch (Throwable e) {
      // A broken stdin means the same as its end.
    }
    Runtime.getRuntime().halt(0);
  }

  private static void fail(String message) {
    System.err.println("MiniDfs: " + message);
    Runtime.getRuntime().halt(2);
  }
}
