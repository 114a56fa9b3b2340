// Reads splits of text files with Hadoop's own old-API LineRecordReader (what TextInputFormat
// and Hadoop Streaming use) and prints every record with its key: the reference that
// crates/io/tests/bzip2_hadoop.rs holds sluice's reader of bzip2 splits against.
//
// Usage: java -cp "tests/hadoop:target/hadoop/lib/*" tests/hadoop/LineSplits.java JOBS
//   JOBS has one line per file: FILE <TAB> OUT <TAB> start:len [<TAB> start:len ...]
// For each split of a file, OUT gets a line "#split START LEN", then one line per record:
// "KEY <TAB> VALUE" (the value's bytes as they are). A split whose reading fails gets
// "#error MESSAGE" instead of its records.
import java.io.*;
import java.nio.charset.StandardCharsets;

import org.apache.hadoop.fs.Path;
import org.apache.hadoop.io.LongWritable;
import org.apache.hadoop.io.Text;
import org.apache.hadoop.mapred.FileSplit;
import org.apache.hadoop.mapred.JobConf;
import org.apache.hadoop.mapred.LineRecordReader;

public class LineSplits {
  public static void main(String[] args) throws Exception {
    if (args.length != 1) {
      System.err.println("usage: LineSplits JOBS");
      System.exit(2);
    }
    JobConf conf = new JobConf();
    conf.set("fs.defaultFS", "file:///");
    try (BufferedReader jobs = new BufferedReader(new FileReader(args[0]))) {
      String line;
      while ((line = jobs.readLine()) != null) {
        if (line.isEmpty()) {
          continue;
        }
        String[] fields = line.split("\t");
        Path path = new Path(new File(fields[0]).getAbsoluteFile().toURI());
        try (OutputStream out = new BufferedOutputStream(new FileOutputStream(fields[1]), 1 << 16)) {
          for (int i = 2; i < fields.length; i++) {
            String[] range = fields[i].split(":");
            long start = Long.parseLong(range[0]);
            long len = Long.parseLong(range[1]);
            ascii(out, "#split " + start + " " + len + "\n");
            try {
              records(conf, new FileSplit(path, start, len, (String[]) null), out);
            } catch (IOException | RuntimeException e) {
              ascii(out, "#error " + e.toString().replace('\n', ' ') + "\n");
            }
          }
        }
      }
    }
  }

  /** Writes the split's records as KEY TAB VALUE lines. */
  static void records(JobConf conf, FileSplit split, OutputStream out) throws IOException {
    LineRecordReader reader = new LineRecordReader(conf, split);
    try {
      LongWritable key = reader.createKey();
      Text value = reader.createValue();
      while (reader.next(key, value)) {
        ascii(out, key.get() + "\t");
        out.write(value.getBytes(), 0, value.getLength());
        out.write('\n');
      }
    } finally {
      reader.close();
    }
  }

  static void ascii(OutputStream out, String text) throws IOException {
    out.write(text.getBytes(StandardCharsets.US_ASCII));
  }
}
