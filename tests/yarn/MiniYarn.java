import java.io.File;
import java.io.FileOutputStream;
import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.io.PrintStream;
import java.util.Map;
import java.util.TreeMap;

import org.apache.hadoop.conf.Configuration;
import org.apache.hadoop.hdfs.HdfsConfiguration;
import org.apache.hadoop.hdfs.MiniDFSCluster;
import org.apache.hadoop.yarn.conf.YarnConfiguration;
import org.apache.hadoop.yarn.server.MiniYARNCluster;

/**
 * Runs an in-JVM YARN cluster with its own HDFS for sluice's tests, until its stdin ends: a
 * MiniDFSCluster (one DataNode) and a MiniYARNCluster (one ResourceManager, NodeManagers that
 * run real containers as the user running the JVM).
 *
 * <p>Usage: {@code java --add-opens=java.base/java.lang=ALL-UNNAMED
 * -Dlog4j.configuration=file:tests/yarn/conf/log4j.properties -Dyarn.root.logger=INFO,file
 * -Dyarn.log.file=BASE/miniyarn.log -cp 'target/yarn/classes/HASH:target/yarn/lib/*' MiniYarn
 * --base BASE --conf CONFDIR --lib LIBDIR [--nodemanagers N]} (crates/testkit starts it so;
 * the {@code --add-opens} is for the ResourceManager's web app on Java 17). The working
 * directory must be BASE: MiniYARNCluster keeps its NodeManagers' directories under
 * {@code ./target}.
 *
 * <p>When both clusters are up it writes {@code core-site.xml}, {@code hdfs-site.xml} and
 * {@code yarn-site.xml} into CONFDIR, prints one line on stdout, {@code READY CONFDIR}, and
 * nothing else ever. A client with CONFDIR and LIBDIR/* on its classpath reaches both clusters;
 * so do the containers, whose classpath ({@code yarn.application.classpath}) is those two
 * directories by absolute path: containers see no in-JVM configuration, only files.
 *
 * <p>When its stdin reaches end of file the JVM halts at once: stopping a MiniYARNCluster in
 * order takes half a minute, and its storage is thrown away anyway.
 */
public final class MiniYarn {
  private MiniYarn() {}

  public static void main(String[] args) throws Exception {
    PrintStream ready = System.out;
    // Whatever Hadoop prints goes to stderr: stdout carries the READY line alone.
    System.setOut(System.err);

    String base = null;
    String confDir = null;
    String lib = null;
    int nodeManagers = 2;
    for (int i = 0; i < args.length; i++) {
      String value = i + 1 < args.length ? args[i + 1] : null;
      switch (args[i]) {
        case "--base" -> base = value;
        case "--conf" -> confDir = value;
        case "--lib" -> lib = value;
        case "--nodemanagers" -> nodeManagers = Integer.parseInt(value);
        default -> fail("unknown argument " + args[i]);
      }
      i++;
    }
    if (base == null || confDir == null || lib == null) {
      fail("usage: MiniYarn --base DIR --conf DIR --lib DIR [--nodemanagers N]");
    }
    if (nodeManagers < 1) {
      fail("--nodemanagers must be at least 1");
    }
    File conf = new File(confDir).getAbsoluteFile();
    File libDir = new File(lib).getAbsoluteFile();

    // Halt as soon as stdin ends, also while the clusters are still starting.
    Thread watcher = new Thread(MiniYarn::haltAtEndOfStdin, "stdin-watcher");
    watcher.setDaemon(true);
    watcher.start();

    try {
      String fsUri = startDfs(new File(base).getAbsoluteFile());
      Configuration yarnConf = startYarn(new File(base).getAbsoluteFile(), fsUri, nodeManagers);
      writeConfiguration(conf, libDir, fsUri, nameNodeHttp, yarnConf);
    } catch (Throwable e) {
      e.printStackTrace();
      Runtime.getRuntime().halt(1);
      return;
    }
    ready.println("READY " + conf.getPath());
    ready.flush();
    watcher.join();
  }

  /** The name node's web address (WebHDFS, where clients ask which hosts hold a block). */
  private static String nameNodeHttp;

  /** Starts the HDFS, as tests/stores/MiniDfs.java does, and returns its URI. */
  private static String startDfs(File base) throws IOException {
    Configuration conf = new HdfsConfiguration();
    conf.set(MiniDFSCluster.HDFS_MINIDFS_BASEDIR, new File(base, "dfs").getPath());
    conf.set("hadoop.tmp.dir", new File(base, "tmp").getPath());
    conf.setInt("dfs.replication", 1);
    conf.setBoolean("dfs.permissions.enabled", true);
    conf.set("dfs.datanode.address", "127.0.0.1:0");
    conf.set("dfs.datanode.http.address", "127.0.0.1:0");
    conf.set("dfs.datanode.ipc.address", "127.0.0.1:0");
    MiniDFSCluster dfs = new MiniDFSCluster.Builder(conf)
        .numDataNodes(1)
        .nameNodePort(0)
        .nameNodeHttpPort(0)
        .format(true)
        .build();
    dfs.waitActive();
    nameNodeHttp = "127.0.0.1:" + dfs.getNameNode().getHttpAddress().getPort();
    return "hdfs://127.0.0.1:" + dfs.getNameNodePort();
  }

  /**
   * Starts the YARN cluster and returns its configuration, which holds the addresses its
   * servers actually bound.
   */
  private static Configuration startYarn(File base, String fsUri, int nodeManagers)
      throws Exception {
    YarnConfiguration conf = new YarnConfiguration();
    conf.set("fs.defaultFS", fsUri);
    conf.set("hadoop.tmp.dir", new File(base, "tmp").getPath());
    // Small containers, and room for several applications at once (tests run in parallel):
    // the default minimum allocation of 1 GiB and the 10% share of the cluster for
    // application masters would keep the second or third application waiting.
    conf.setInt(YarnConfiguration.RM_SCHEDULER_MINIMUM_ALLOCATION_MB, 64);
    conf.setInt(YarnConfiguration.NM_PMEM_MB, 4096);
    conf.setInt(YarnConfiguration.NM_VCORES, 8);
    conf.setFloat("yarn.scheduler.capacity.maximum-am-resource-percent", 0.5f);
    // The test machine's memory is not the NodeManagers' to police: a JVM reserves far more
    // virtual memory than 2.1 times its container's size.
    conf.setBoolean(YarnConfiguration.NM_VMEM_CHECK_ENABLED, false);
    conf.setBoolean(YarnConfiguration.NM_PMEM_CHECK_ENABLED, false);
    // A NodeManager whose disk is more than 90% full refuses containers: the test machine's
    // disk is not the point here.
    conf.setFloat(
        YarnConfiguration.NM_MAX_PER_DISK_UTILIZATION_PERCENTAGE, 100.0f);
    // Containers find `java` through $JAVA_HOME, which the NodeManagers pass on from their own
    // environment; when the tests run without it, name the JVM running this cluster.
    if (System.getenv("JAVA_HOME") == null) {
      conf.set(YarnConfiguration.NM_ADMIN_USER_ENV,
          "MALLOC_ARENA_MAX=$MALLOC_ARENA_MAX,JAVA_HOME=" + System.getProperty("java.home"));
    }
    MiniYARNCluster yarn = new MiniYARNCluster("miniyarn", nodeManagers, 1, 1);
    yarn.init(conf);
    yarn.start();
    if (!yarn.waitForNodeManagersToConnect(60_000)) {
      throw new IOException("the NodeManagers did not register with the ResourceManager");
    }
    return yarn.getConfig();
  }

  /**
   * Writes what clients and containers need to reach the clusters into {@code dir}: the file
   * system in core-site.xml, the HDFS client's settings (with the name node's web address,
   * where clients locate blocks) in hdfs-site.xml, and every {@code yarn.*} setting of the
   * running cluster (its bound addresses above all) in yarn-site.xml, with the containers'
   * classpath and quick give-ups added.
   */
  private static void writeConfiguration(
      File dir, File lib, String fsUri, String nameNodeHttp, Configuration yarn)
      throws IOException {
    if (!dir.isDirectory() && !dir.mkdirs()) {
      throw new IOException("cannot create " + dir);
    }
    Configuration core = new Configuration(false);
    core.set("fs.defaultFS", fsUri);
    write(core, new File(dir, "core-site.xml"));

    Configuration hdfs = new Configuration(false);
    // One DataNode: files written with the default of 3 replicas would stay under-replicated.
    hdfs.set("dfs.replication", "1");
    hdfs.set("dfs.namenode.http-address", nameNodeHttp);
    write(hdfs, new File(dir, "hdfs-site.xml"));

    // Resolved values (Configuration's iterator gives ${...} references unexpanded), sorted.
    Map<String, String> values = new TreeMap<>();
    for (Map.Entry<String, String> e : yarn) {
      if (e.getKey().startsWith("yarn.")) {
        values.put(e.getKey(), yarn.get(e.getKey()));
      }
    }
    Configuration site = new Configuration(false);
    values.forEach((k, v) -> {
      if (v != null) {
        site.set(k, v);
      }
    });
    // Containers start with nothing but this classpath: this directory and the jars, by
    // absolute path (the usual $HADOOP_* variables mean nothing on a test machine).
    site.set(YarnConfiguration.YARN_APPLICATION_CLASSPATH,
        dir.getPath() + "," + new File(lib, "*").getPath());
    // When the cluster halts under a still-running application master, the master gives up
    // within seconds rather than the default 15 minutes.
    site.setLong(YarnConfiguration.RESOURCEMANAGER_CONNECT_MAX_WAIT_MS, 20_000);
    site.setLong(YarnConfiguration.RESOURCEMANAGER_CONNECT_RETRY_INTERVAL_MS, 1_000);
    write(site, new File(dir, "yarn-site.xml"));
  }

  /** Writes {@code conf} as XML to {@code file}, replacing it as a whole. */
  private static void write(Configuration conf, File file) throws IOException {
    File tmp = new File(file.getPath() + ".tmp");
    try (OutputStream out = new FileOutputStream(tmp)) {
      conf.writeXml(out);
    }
    if (!tmp.renameTo(file)) {
      throw new IOException("cannot rename " + tmp + " to " + file);
    }
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
    System.err.println("MiniYarn: " + message);
    Runtime.getRuntime().halt(2);
  }
}
