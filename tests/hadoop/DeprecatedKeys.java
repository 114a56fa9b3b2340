import java.io.ByteArrayOutputStream;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.util.TreeSet;

import org.apache.hadoop.conf.Configuration;
import org.apache.hadoop.mapred.JobConf;

/**
 * Prints the deprecated key names a streaming job's configuration understands, one
 * "old TAB current" line each, sorted: what Hadoop's own {@code dumpDeprecatedKeys} prints once
 * {@code JobConf} has registered MapReduce's names.
 */
public class DeprecatedKeys {
  public static void main(String[] args) throws Exception {
    new JobConf();
    PrintStream stdout = System.out;
    ByteArrayOutputStream dump = new ByteArrayOutputStream();
    System.setOut(new PrintStream(dump, true, StandardCharsets.UTF_8));
    Configuration.dumpDeprecatedKeys();
    System.setOut(stdout);
    TreeSet<String> lines = new TreeSet<>();
    for (String line : dump.toString(StandardCharsets.UTF_8).split("\n")) {
      String[] fields = line.split("\t");
      if (fields.length >= 2) {
        lines.add(fields[0] + "\t" + fields[1]);
      }
    }
    for (String line : lines) {
      System.out.println(line);
    }
  }
}
