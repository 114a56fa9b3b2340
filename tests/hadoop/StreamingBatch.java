import java.io.BufferedReader;
import java.io.File;
import java.io.FileOutputStream;
import java.io.IOException;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.Paths;
import java.security.Permission;
import java.util.ArrayList;
import java.util.List;

import org.apache.hadoop.conf.Configuration;
import org.apache.hadoop.streaming.StreamJob;
import org.apache.hadoop.util.ToolRunner;

/**
 * Runs many Hadoop Streaming jobs in one JVM, so the JVM starts (the expensive part) once.
 *
 * <p>Usage: {@code java -Djava.security.manager=allow -cp 'tests/hadoop:target/hadoop/lib/*'
 * tests/hadoop/StreamingBatch.java MANIFEST}. The manifest lists cases as blocks:
 *
 * <pre>
 * case NAME
 * result DIR        (where the case's log and exit code go; the job's output is wherever its args say)
 * arg ARGUMENT      (one per argument, in order; the rest of the line, verbatim)
 * end
 * </pre>
 *
 * <p>Each case runs {@code ToolRunner.run(new Configuration(), new StreamJob(), args)}, which is
 * what {@code hadoop jar hadoop-streaming.jar ARGS} does minus the JVM start. While a case runs,
 * System.out and System.err (and so the log, see log4j.properties, and the stderr lines the
 * streaming programs print) go to {@code DIR/log}. The exit code is written to {@code DIR/exit}
 * last, so a directory without it is an unfinished case.
 *
 * <p>Local mode runs the streaming programs in the JVM's working directory and unpacks {@code
 * -file} files there; the driver empties it before each case (it must hold the marker file
 * {@code .streaming-batch-cwd}) so that no case sees another one's files, and closes the cached
 * file systems, so that each case's are made from its own settings.
 */
public class StreamingBatch {
  /** Thrown instead of exiting when code of a case calls System.exit. */
  static final class ExitTrap extends SecurityException {
    final int status;

    ExitTrap(int status) {
      super("System.exit(" + status + ")");
      this.status = status;
    }
  }

  /** Set when the driver itself is done and may exit. */
  static volatile boolean exiting;

  record Case(String name, Path result, List<String> args) {}

  public static void main(String[] argv) throws Exception {
    if (argv.length != 1) {
      System.err.println("usage: StreamingBatch MANIFEST");
      System.exit(2);
    }
    List<Case> cases = parse(Paths.get(argv[0]));
    Path cwd = Paths.get("").toAbsolutePath();
    if (!Files.exists(cwd.resolve(".streaming-batch-cwd"))) {
      System.err.println("StreamingBatch: run me in a scratch directory holding .streaming-batch-cwd");
      System.exit(2);
    }
    installExitTrap();

    PrintStream out = System.out;
    PrintStream err = System.err;
    for (Case c : cases) {
      emptyExceptMarker(cwd);
      // A job in a JVM of its own makes its file systems from its own settings: without
      // this, the cached local file system of an earlier case would keep that case's
      // settings (fs.local.block.size, which decides how inputs are split).
      org.apache.hadoop.fs.FileSystem.closeAll();
      Files.createDirectories(c.result());
      long start = System.nanoTime();
      int code;
      try (PrintStream log = new PrintStream(
          new FileOutputStream(c.result().resolve("log").toFile()), true, StandardCharsets.UTF_8)) {
        System.setOut(log);
        System.setErr(log);
        try {
          code = ToolRunner.run(new Configuration(), new StreamJob(), c.args().toArray(new String[0]));
        } catch (ExitTrap e) {
          log.println("StreamingBatch: the job called System.exit(" + e.status + ")");
          code = e.status;
        } catch (Throwable t) {
          // `hadoop jar` lets the exception out of main, and the JVM exits with status 1.
          log.println("StreamingBatch: the job threw");
          t.printStackTrace(log);
          code = 1;
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
    emptyExceptMarker(cwd);
    // Local mode leaves non-daemon threads behind; only an explicit exit ends the JVM.
    exiting = true;
    System.exit(0);
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
          if (name == null || result == null) {
            throw new IOException("manifest: 'end' without 'case' and 'result'");
          }
          cases.add(new Case(name, result, args));
          name = null;
        } else if (!line.isEmpty()) {
          throw new IOException("manifest: unexpected line: " + line);
        }
      }
    }
    return cases;
  }

  /**
   * StreamJob itself never exits, but a case that reaches code which does (a usage error in
   * some helper) must not end the whole batch. Java 17 still allows a security manager when
   * started with -Djava.security.manager=allow; without it the trap is simply not installed.
   */
  @SuppressWarnings("removal")
  static void installExitTrap() {
    try {
      System.setSecurityManager(new SecurityManager() {
        @Override
        public void checkExit(int status) {
          if (exiting) {
            return;
          }
          throw new ExitTrap(status);
        }

        @Override
        public void checkPermission(Permission perm) {}

        @Override
        public void checkPermission(Permission perm, Object context) {}
      });
    } catch (UnsupportedOperationException | SecurityException e) {
      System.err.println("StreamingBatch: no System.exit guard (" + e + ")");
    }
  }

  static void emptyExceptMarker(Path dir) throws IOException {
    File[] entries = dir.toFile().listFiles();
    if (entries == null) {
      return;
    }
    for (File f : entries) {
      if (!f.getName().equals(".streaming-batch-cwd")) {
        deleteTree(f);
      }
    }
  }

  static void deleteTree(File f) throws IOException {
    // A symbolic link (local mode links -files entries into the working directory) is
    // removed itself, never followed.
    if (f.isDirectory() && !Files.isSymbolicLink(f.toPath())) {
      File[] children = f.listFiles();
      if (children != null) {
        for (File c : children) {
          deleteTree(c);
        }
      }
    }
    Files.deleteIfExists(f.toPath());
  }
}
