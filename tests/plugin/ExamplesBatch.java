import java.io.BufferedReader;
import java.io.FileOutputStream;
import java.io.IOException;
import java.io.PrintStream;
import java.lang.reflect.InvocationTargetException;
import java.lang.reflect.Method;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.Paths;
import java.security.Permission;
import java.util.ArrayList;
import java.util.List;

import org.apache.hadoop.conf.Configuration;
import org.apache.hadoop.io.BooleanWritable;
import org.apache.hadoop.io.ByteWritable;
import org.apache.hadoop.io.BytesWritable;
import org.apache.hadoop.io.IntWritable;
import org.apache.hadoop.io.LongWritable;
import org.apache.hadoop.io.NullWritable;
import org.apache.hadoop.io.Text;
import org.apache.hadoop.io.VIntWritable;
import org.apache.hadoop.io.VLongWritable;
import org.apache.hadoop.io.Writable;
import org.apache.hadoop.mapreduce.Job;
import org.apache.hadoop.mapreduce.Mapper;
import org.apache.hadoop.mapreduce.Reducer;
import org.apache.hadoop.mapreduce.lib.input.FileInputFormat;
import org.apache.hadoop.mapreduce.lib.output.FileOutputFormat;
import org.apache.hadoop.util.GenericOptionsParser;

/**
 * Runs many of Hadoop's example jobs (the {@code main} of each program's class) in one JVM, for the
 * differential tests of sluice's map-output collector (crates/jni/tests/plugin_hadoop.rs).
 *
 * <p>Usage: compiled with {@code javac -d CLASSES} (not run as a source file, so that the
 * tasks can load the job classes of {@link KeyTypes} by name), then {@code java
 * -Djava.security.manager=allow -cp
 * 'CLASSES:tests/plugin:target/plugin/sluice-plugin.jar:target/hadoop/lib/*' ExamplesBatch
 * MANIFEST}. The manifest lists cases as blocks:
 *
 * <pre>
 * case NAME
 * result DIR        (where the case's log and exit code go)
 * arg ARGUMENT      (the program's class, then its arguments, one per line: the rest of the line)
 * end
 * </pre>
 *
 * <p>While a case runs, System.out and System.err (and so the log, see log4j.properties) go to
 * {@code DIR/log}; the exit code is written to {@code DIR/exit} last. A case whose only argument
 * is {@code @panic} calls the library's test entry point that panics, and passes (exit 0) if
 * that arrives as an IOException, whose message it logs.
 *
 * <p>{@code ExamplesBatch --yarn CONFDIR MANIFEST} first starts a MiniDFSCluster and a
 * MiniMRYarnCluster (two NodeManagers, every task in a container JVM of its own; their
 * directories are under {@code target} of the working directory), copies the directory
 * {@code in} of the working directory to {@code /in} of the HDFS, and writes the cluster's
 * configuration to {@code core-site.xml}, {@code mapred-site.xml} and {@code yarn-site.xml} in
 * {@code CONFDIR}, which must be on the classpath, so that the
 * jobs' {@code new Configuration()} finds the cluster. Containers get this JVM's classpath
 * (the mini cluster's rule), so the plugin jar must not be on it: the jobs ship it with
 * {@code -libjars}, as a user would. At the end it copies {@code /out} of the HDFS to the
 * directory {@code out} and halts instead of stopping the clusters, which takes half a minute.
 */
public class ExamplesBatch {
  /** Thrown instead of exiting when a case calls System.exit. */
  static final class ExitTrap extends SecurityException {
    private static final long serialVersionUID = 1L;
    final int status;

    ExitTrap(int status) {
      super("System.exit(" + status + ")");
      this.status = status;
    }
  }

  static volatile boolean exiting;

  record Case(String name, Path result, List<String> args) {}

  @SuppressWarnings("removal") // the exit trap; Java 17 still has the security manager
  public static void main(String[] argv) throws Exception {
    boolean yarn = argv[0].equals("--yarn");
    List<Case> cases = parse(Paths.get(argv[yarn ? 2 : 0]));
    Configuration running = yarn ? startYarn(Paths.get(argv[1])) : null;
    System.setSecurityManager(new SecurityManager() {
      @Override
      public void checkPermission(Permission perm) {}

      @Override
      public void checkExit(int status) {
        if (!exiting) {
          throw new ExitTrap(status);
        }
      }
    });
    PrintStream out = System.out;
    PrintStream err = System.err;
    for (Case c : cases) {
      Files.createDirectories(c.result());
      long start = System.nanoTime();
      int code;
      try (PrintStream log = new PrintStream(
          new FileOutputStream(c.result().resolve("log").toFile()), true, StandardCharsets.UTF_8)) {
        System.setOut(log);
        System.setErr(log);
        try {
          if (c.args().equals(List.of("@panic"))) {
            code = panic(log);
          } else {
            code = run(c.args());
          }
        } catch (ExitTrap e) {
          code = e.status;
        } catch (Throwable t) {
          log.println("ExamplesBatch: the job threw");
          t.printStackTrace(log);
          code = 255;
        } finally {
          System.out.flush();
          System.err.flush();
          System.setOut(out);
          System.setErr(err);
        }
      }
      Files.writeString(c.result().resolve("exit"), code + "\n");
      out.printf("hadoop: %-40s exit %3d  %5.1fs%n", c.name(), code, (System.nanoTime() - start) / 1e9);
    }
    exiting = true;
    if (yarn) {
      fetchOutputs(running);
      Runtime.getRuntime().halt(0);
    }
    System.exit(0);
  }

  /**
   * Starts a MiniDFSCluster and a MiniMRYarnCluster on it, writes their configuration as the
   * site files of {@code confDir}, and copies the directory {@code in} of the working directory
   * to {@code /in} of the HDFS. The distributed cache (the jars of {@code -libjars},
   * terasort's partition file) needs a file system of its own: with the local file system as
   * the default one the job client does not copy them to the staging directory and the
   * containers never see them.
   */
  static Configuration startYarn(Path confDir) throws Exception {
    Configuration conf = new Configuration();
    conf.set("hdfs.minidfs.basedir", Paths.get("target", "dfs").toAbsolutePath().toString());
    conf.setInt("dfs.replication", 1);
    Class<?> builderClass = Class.forName("org.apache.hadoop.hdfs.MiniDFSCluster$Builder");
    Object builder = builderClass.getConstructor(Configuration.class).newInstance(conf);
    builderClass.getMethod("numDataNodes", int.class).invoke(builder, 1);
    Object dfs = builderClass.getMethod("build").invoke(builder);
    Object fs = dfs.getClass().getMethod("getFileSystem").invoke(dfs);
    conf.set("fs.defaultFS", ((org.apache.hadoop.fs.FileSystem) fs).getUri().toString());
    // Small containers for a small machine: no memory checks (a JVM reserves far more
    // virtual memory than YARN allows by default), room for an application master and a
    // few tasks at once.
    conf.setInt("yarn.scheduler.minimum-allocation-mb", 128);
    conf.setInt("yarn.nodemanager.resource.memory-mb", 3072);
    conf.setBoolean("yarn.nodemanager.vmem-check-enabled", false);
    conf.setBoolean("yarn.nodemanager.pmem-check-enabled", false);
    conf.setFloat(
        "yarn.nodemanager.disk-health-checker.max-disk-utilization-per-disk-percentage", 100f);
    conf.setInt("yarn.app.mapreduce.am.resource.mb", 512);
    conf.set("yarn.app.mapreduce.am.command-opts", "-Xmx384m " + OPENS);
    conf.setInt("mapreduce.map.memory.mb", 384);
    conf.setInt("mapreduce.reduce.memory.mb", 384);
    conf.set("mapreduce.map.java.opts", "-Xmx256m " + OPENS);
    conf.set("mapreduce.reduce.java.opts", "-Xmx256m " + OPENS);
    conf.setInt("mapreduce.task.io.sort.mb", 16);
    // Reduces start once every map is done: fewer JVMs at once on a small machine.
    conf.setFloat("mapreduce.job.reduce.slowstart.completedmaps", 1.0f);
    Class<?> clusterClass = Class.forName("org.apache.hadoop.mapreduce.v2.MiniMRYarnCluster");
    Object cluster =
        clusterClass.getConstructor(String.class, int.class).newInstance("sluice-plugin-yarn", 2);
    clusterClass.getMethod("init", Configuration.class).invoke(cluster, conf);
    clusterClass.getMethod("start").invoke(cluster);
    Configuration running = (Configuration) clusterClass.getMethod("getConfig").invoke(cluster);
    Files.createDirectories(confDir);
    // Written as each site file: a key is read from the last resource loaded, and
    // mapred-default.xml (local mode) and yarn-default.xml come after core-site.xml.
    for (String site : new String[] {"core-site.xml", "mapred-site.xml", "yarn-site.xml"}) {
      try (java.io.OutputStream out = Files.newOutputStream(confDir.resolve(site))) {
        running.writeXml(out);
      }
    }
    org.apache.hadoop.fs.FileSystem hdfs = org.apache.hadoop.fs.FileSystem.get(running);
    if (Files.isDirectory(Paths.get("in"))) {
      hdfs.copyFromLocalFile(new org.apache.hadoop.fs.Path(Paths.get("in").toUri()),
          new org.apache.hadoop.fs.Path("/in"));
    }
    System.out.println("yarn: MiniMRYarnCluster up on " + hdfs.getUri());
    return running;
  }

  /** Copies {@code /out} of the cluster's HDFS to the directory {@code out}. */
  static void fetchOutputs(Configuration running) throws IOException {
    org.apache.hadoop.fs.FileSystem hdfs = org.apache.hadoop.fs.FileSystem.get(running);
    org.apache.hadoop.fs.Path out = new org.apache.hadoop.fs.Path("/out");
    if (hdfs.exists(out)) {
      hdfs.copyToLocalFile(out, new org.apache.hadoop.fs.Path(Paths.get("out").toUri()));
    }
  }

  /** Java 17 options the MapReduce application master's web app needs under Hadoop 3.4. */
  static final String OPENS =
      "--add-opens=java.base/java.lang=ALL-UNNAMED --add-opens=java.base/java.util=ALL-UNNAMED";

  /**
   * Runs {@code main} of the class {@code args[0]} (an example program, such as {@code
   * org.apache.hadoop.examples.WordCount}) with the other arguments: its exit status, or 0 if
   * it returns.
   */
  static int run(List<String> args) throws Throwable {
    Method main = Class.forName(args.get(0)).getMethod("main", String[].class);
    try {
      main.invoke(null, (Object) args.subList(1, args.size()).toArray(new String[0]));
      return 0;
    } catch (InvocationTargetException e) {
      throw e.getCause();
    }
  }

  /** Calls the panicking entry point; 0 if the panic arrived as an IOException. */
  static int panic(PrintStream log) throws Exception {
    Class<?> loader = Class.forName("org.sluice.hadoop.NativeLoader");
    loader.getMethod("load").invoke(null);
    Class<?> lib = Class.forName("org.sluice.hadoop.SluiceNative");
    Method m = lib.getDeclaredMethod("panicForTest", String.class);
    m.setAccessible(true);
    try {
      m.invoke(null, "message " + 42);
      log.println("ExamplesBatch: no exception");
      return 1;
    } catch (InvocationTargetException e) {
      Throwable cause = e.getCause();
      log.println("ExamplesBatch: " + cause.getClass().getName() + ": " + cause.getMessage());
      return cause instanceof IOException ? 0 : 1;
    }
  }

  static List<Case> parse(Path manifest) throws IOException {
    List<Case> cases = new ArrayList<>();
    String name = null;
    Path result = null;
    List<String> args = new ArrayList<>();
    try (BufferedReader r = Files.newBufferedReader(manifest, StandardCharsets.UTF_8)) {
      for (String line; (line = r.readLine()) != null; ) {
        if (line.startsWith("case ")) {
          name = line.substring(5);
          result = null;
          args = new ArrayList<>();
        } else if (line.startsWith("result ")) {
          result = Paths.get(line.substring(7));
        } else if (line.startsWith("arg ")) {
          args.add(line.substring(4));
        } else if (line.equals("end")) {
          cases.add(new Case(name, result, args));
        }
      }
    }
    return cases;
  }

  /**
   * A job whose map output keys are of one Writable type, for the comparators no example job
   * uses: {@code ExamplesBatch$KeyTypes [-D ...] TYPE IN OUT}. Each input line holds a number
   * n; the key is n as TYPE ({@code int}, {@code long}, {@code long-decreasing} (LongWritable
   * with its DecreasingComparator), {@code vint}, {@code vlong}, {@code byte}, {@code boolean}
   * (n even), {@code null}, {@code bytes} (the line's bytes)), the value the line; the
   * identity reducer writes them as text. With {@code -D keytypes.combiner=throw} the job has a
   * combiner that throws.
   */
  public static class KeyTypes {
    public static class Map extends Mapper<LongWritable, Text, Writable, Text> {
      private String type;

      @Override
      protected void setup(Context context) {
        type = context.getConfiguration().get("keytypes.type");
      }

      @Override
      protected void map(LongWritable offset, Text line, Context context)
          throws IOException, InterruptedException {
        long n = Long.parseLong(line.toString().trim());
        Writable key;
        switch (type) {
          case "int": key = new IntWritable((int) (n * 40503)); break;
          case "long": case "long-decreasing": key = new LongWritable(n * 2654435761L); break;
          case "vint": key = new VIntWritable((int) (n * 40503)); break;
          case "vlong": key = new VLongWritable(n * 2654435761L); break;
          case "byte": key = new ByteWritable((byte) n); break;
          case "boolean": key = new BooleanWritable(n % 2 == 0); break;
          case "null": key = NullWritable.get(); break;
          case "bytes": key = new BytesWritable(line.copyBytes()); break;
          default: throw new IOException("unknown type " + type);
        }
        context.write(key, line);
      }
    }

    /** A combiner that fails: a job with it must fail its tasks with this message. */
    public static class ThrowingCombiner extends Reducer<Writable, Text, Writable, Text> {
      @Override
      protected void reduce(Writable key, Iterable<Text> values, Context context)
          throws IOException {
        throw new IOException("the combiner failed on purpose");
      }
    }

    static final java.util.Map<String, Class<?>> CLASSES = java.util.Map.of(
        "int", IntWritable.class, "long", LongWritable.class,
        "long-decreasing", LongWritable.class, "vint", VIntWritable.class,
        "vlong", VLongWritable.class, "byte", ByteWritable.class,
        "boolean", BooleanWritable.class, "null", NullWritable.class,
        "bytes", BytesWritable.class);

    public static void main(String[] argv) throws Exception {
      Configuration conf = new Configuration();
      String[] args = new GenericOptionsParser(conf, argv).getRemainingArgs();
      conf.set("keytypes.type", args[0]);
      Job job = Job.getInstance(conf, "key types " + args[0]);
      job.setJarByClass(KeyTypes.class);
      job.setMapperClass(Map.class);
      job.setMapOutputKeyClass(CLASSES.get(args[0]));
      job.setMapOutputValueClass(Text.class);
      job.setOutputKeyClass(CLASSES.get(args[0]));
      job.setOutputValueClass(Text.class);
      if (args[0].equals("long-decreasing")) {
        job.setSortComparatorClass(LongWritable.DecreasingComparator.class);
      }
      if ("throw".equals(conf.get("keytypes.combiner"))) {
        job.setCombinerClass(ThrowingCombiner.class);
      }
      FileInputFormat.addInputPath(job, new org.apache.hadoop.fs.Path(args[1]));
      FileOutputFormat.setOutputPath(job, new org.apache.hadoop.fs.Path(args[2]));
      System.exit(job.waitForCompletion(true) ? 0 : 1);
    }
  }
}
