import java.io.ByteArrayOutputStream;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;

import org.apache.hadoop.conf.Configuration;
import org.apache.hadoop.fs.FsShell;
import org.apache.hadoop.util.ToolRunner;

/**
 * Runs commands of Hadoop's {@code hadoop fs} shell one after another in this JVM, in its
 * working directory: each line of the file {@code args[0]} is one command line, its
 * arguments separated by tabs. For command N it writes {@code N.out}, {@code N.err} and
 * {@code N.exit} into the directory {@code args[1]}.
 */
public class FsBatch {
  public static void main(String[] args) throws Exception {
    List<String> commands = Files.readAllLines(Path.of(args[0]), StandardCharsets.UTF_8);
    Path results = Path.of(args[1]);
    PrintStream stdout = System.out;
    PrintStream stderr = System.err;
    for (int i = 0; i < commands.size(); i++) {
      ByteArrayOutputStream out = new ByteArrayOutputStream();
      ByteArrayOutputStream err = new ByteArrayOutputStream();
      System.setOut(new PrintStream(out, true, StandardCharsets.UTF_8));
      System.setErr(new PrintStream(err, true, StandardCharsets.UTF_8));
      int exit;
      try {
        // Quiet, unlike the shell's own main: these jars lack HDFS's default settings.
        Configuration conf = new Configuration();
        exit = ToolRunner.run(conf, new FsShell(), commands.get(i).split("\t", -1));
      } finally {
        System.out.flush();
        System.err.flush();
        System.setOut(stdout);
        System.setErr(stderr);
      }
      Files.write(results.resolve(i + ".out"), out.toByteArray());
      Files.write(results.resolve(i + ".err"), err.toByteArray());
      // As the hadoop command's process exits: -1 becomes 255.
      Files.writeString(results.resolve(i + ".exit"), Integer.toString(exit & 0xff));
    }
  }
}
