import java.io.BufferedOutputStream;
import java.io.File;
import java.io.FileOutputStream;
import java.io.IOException;
import java.io.OutputStream;
import java.nio.charset.StandardCharsets;
import java.util.Arrays;

import org.apache.hadoop.conf.Configuration;
import org.apache.hadoop.fs.Path;
import org.apache.hadoop.io.*;
import org.apache.hadoop.io.SequenceFile.CompressionType;
import org.apache.hadoop.io.compress.CompressionCodec;
import org.apache.hadoop.mapred.FileSplit;
import org.apache.hadoop.mapred.JobConf;
import org.apache.hadoop.mapred.SequenceFileRecordReader;
import org.apache.hadoop.util.ReflectionUtils;

/**
 * Hadoop's side of the SequenceFile cross-checks (crates/io/tests/seqfile_hadoop.rs).
 *
 * <p>Usage: {@code java -cp 'target/hadoop/lib/*' tests/hadoop/SeqFiles.java HADOOP_DIR
 * SLUICE_DIR SPLIT_SIZE}. Writes SequenceFiles with Hadoop's own writer into HADOOP_DIR (every
 * codec that runs without libhadoop, record and block compression, and files of the other
 * Writable types), then, for every {@code *.seq} file of both directories, writes
 * {@code FILE.txt}: each record as {@code key.toString() TAB value.toString() NEWLINE}, read by
 * {@code SequenceFile.Reader}; and {@code FILE.splits}: for splits of SPLIT_SIZE bytes, a line
 * {@code split K} and the records Hadoop's {@code SequenceFileRecordReader} gives that split.
 */
public class SeqFiles {
  static final String[] CODECS = {"DefaultCodec", "GzipCodec", "BZip2Codec", "SnappyCodec", "Lz4Codec"};

  public static void main(String[] args) throws Exception {
    File hadoopDir = new File(args[0]);
    File sluiceDir = new File(args[1]);
    long splitSize = Long.parseLong(args[2]);
    JobConf conf = new JobConf();
    conf.set("fs.defaultFS", "file:///");
    // Small blocks, so that a block-compressed file has many.
    conf.setInt("io.seqfile.compress.blocksize", 20000);
    hadoopDir.mkdirs();

    write(conf, new File(hadoopDir, "none.seq"), CompressionType.NONE, null, Text.class, Text.class);
    for (String name : CODECS) {
      CompressionCodec codec = (CompressionCodec) ReflectionUtils.newInstance(
          conf.getClassByName("org.apache.hadoop.io.compress." + name), conf);
      for (CompressionType type : new CompressionType[] {CompressionType.RECORD, CompressionType.BLOCK}) {
        write(conf, new File(hadoopDir, name + "-" + type + ".seq"), type, codec, Text.class, Text.class);
      }
    }
    Class<?>[][] typed = {
      {IntWritable.class, LongWritable.class},
      {VIntWritable.class, VLongWritable.class},
      {BooleanWritable.class, DoubleWritable.class},
      {FloatWritable.class, BytesWritable.class},
      {NullWritable.class, Text.class},
      {ByteWritable.class, ShortWritable.class},
      {MD5Hash.class, Text.class},
    };
    for (Class<?>[] kv : typed) {
      write(conf, new File(hadoopDir, "typed-" + kv[0].getSimpleName() + "-" + kv[1].getSimpleName() + ".seq"),
          CompressionType.BLOCK,
          (CompressionCodec) ReflectionUtils.newInstance(
              conf.getClassByName("org.apache.hadoop.io.compress.DefaultCodec"), conf),
          kv[0], kv[1]);
    }

    for (File dir : new File[] {hadoopDir, sluiceDir}) {
      File[] files = dir.listFiles((d, n) -> n.endsWith(".seq"));
      Arrays.sort(files);
      for (File f : files) {
        dumpAll(conf, f);
        dumpSplits(conf, f, splitSize);
      }
    }
  }

  /** The value of record i of a file of class c (deterministic, varied). */
  static Writable value(Class<?> c, int i, int n) {
    int k = (int) ((i * 7919L) % n);
    if (c == Text.class) {
      return new Text("v" + "x".repeat(i % 37) + " \u00fcn\u00ef " + k + (i % 11 == 0 ? "\t\u4e2d" : ""));
    } else if (c == IntWritable.class) {
      return new IntWritable(k * 104729 - 5000000);
    } else if (c == LongWritable.class) {
      return new LongWritable((long) k * 1_000_000_007L - 3);
    } else if (c == VIntWritable.class) {
      return new VIntWritable(k * 31 - 2000);
    } else if (c == VLongWritable.class) {
      return new VLongWritable(-(long) k * k * k * 977);
    } else if (c == BooleanWritable.class) {
      return new BooleanWritable(k % 3 == 0);
    } else if (c == DoubleWritable.class) {
      return new DoubleWritable(k / 7.0 - 100.0);
    } else if (c == FloatWritable.class) {
      // Quarters: Float.toString of Java 17 is not always the shortest form (Java 19 and
      // later print the shortest), so values whose text both agree on.
      return new FloatWritable(k * 0.25f - 300f);
    } else if (c == BytesWritable.class) {
      byte[] b = new byte[i % 9];
      for (int j = 0; j < b.length; j++) b[j] = (byte) (k * 17 + j);
      return new BytesWritable(b);
    } else if (c == NullWritable.class) {
      return NullWritable.get();
    } else if (c == ByteWritable.class) {
      return new ByteWritable((byte) k);
    } else if (c == ShortWritable.class) {
      return new ShortWritable((short) (k * 37));
    } else if (c == MD5Hash.class) {
      return MD5Hash.digest("record " + k);
    }
    throw new IllegalArgumentException(c.getName());
  }

  static void write(Configuration conf, File file, CompressionType type, CompressionCodec codec,
      Class<?> keyClass, Class<?> valueClass) throws IOException {
    SequenceFile.Metadata meta = new SequenceFile.Metadata();
    meta.set(new Text("written-by"), new Text("hadoop"));
    int n = keyClass == Text.class ? 8000 : 3000;
    try (SequenceFile.Writer w = SequenceFile.createWriter(conf,
        SequenceFile.Writer.file(new Path(file.getAbsolutePath())),
        SequenceFile.Writer.keyClass(keyClass),
        SequenceFile.Writer.valueClass(valueClass),
        SequenceFile.Writer.compression(type, codec),
        SequenceFile.Writer.metadata(meta))) {
      for (int i = 0; i < n; i++) {
        Writable key = keyClass == Text.class
            ? new Text("key" + ((i * 7919L) % n))
            : value(keyClass, i + 1, n);
        w.append(key, value(valueClass, i, n));
      }
    }
    new File(file.getParentFile(), "." + file.getName() + ".crc").delete();
  }

  static void line(OutputStream out, Object key, Object value) throws IOException {
    out.write(key.toString().getBytes(StandardCharsets.UTF_8));
    out.write('\t');
    out.write(value.toString().getBytes(StandardCharsets.UTF_8));
    out.write('\n');
  }

  static void dumpAll(Configuration conf, File f) throws IOException {
    try (SequenceFile.Reader r = new SequenceFile.Reader(conf,
             SequenceFile.Reader.file(new Path(f.getAbsolutePath())));
         OutputStream out = new BufferedOutputStream(new FileOutputStream(f.getPath() + ".txt"))) {
      Writable key = (Writable) ReflectionUtils.newInstance(r.getKeyClass(), conf);
      Writable value = (Writable) ReflectionUtils.newInstance(r.getValueClass(), conf);
      while (r.next(key, value)) {
        line(out, key, value);
      }
    }
  }

  @SuppressWarnings({"rawtypes", "unchecked"})
  static void dumpSplits(JobConf conf, File f, long size) throws IOException {
    Path path = new Path(f.getAbsolutePath());
    long len = f.length();
    try (OutputStream out = new BufferedOutputStream(new FileOutputStream(f.getPath() + ".splits"))) {
      int k = 0;
      for (long start = 0; start < len; start += size, k++) {
        out.write(("split " + k + "\n").getBytes(StandardCharsets.UTF_8));
        FileSplit split = new FileSplit(path, start, Math.min(size, len - start), (String[]) null);
        SequenceFileRecordReader r = new SequenceFileRecordReader(conf, split);
        Object key = r.createKey();
        Object value = r.createValue();
        while (r.next(key, value)) {
          line(out, key, value);
        }
        r.close();
      }
    }
  }
}
