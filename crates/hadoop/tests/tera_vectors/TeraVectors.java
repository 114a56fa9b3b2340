// Writes tera_vectors.txt: TeraGen rows and checksums computed by Hadoop's own classes.
//
// Only public Hadoop entry points are used: GenSort.main (the single-process generator that
// shares GenSort.generateRecord, Random16 and Unsigned16 with TeraGen) and TeraGen itself, run
// as a local-mode MapReduce job.
//
// Line formats (fields separated by one space, numbers in decimal unless said otherwise):
//
//   row FIRST HEX
//       The 100-byte row FIRST as written by `GenSort -bFIRST 1`, as 200 lowercase hex digits.
//   range FIRST COUNT CRC32C SUM
//       Rows FIRST .. FIRST+COUNT written by `GenSort -c -bFIRST COUNT`. CRC32C is the CRC-32C of
//       all COUNT*100 bytes (8 lowercase hex digits); SUM is the checksum GenSort printed (the
//       sum of the CRC-32 of each row, as Hadoop's Unsigned16.toString prints it).
//   teragen COUNT CRC32C SUM
//       `teragen COUNT` run in local mode (which always runs one map task); CRC32C covers the
//       part-m-* files concatenated in name order, SUM is the sum of the CRC-32 of each row.
//       The program fails if that output differs from GenSort's rows 0 .. COUNT.
//   teragen_row ID HEX
//       Row ID taken from that TeraGen output.

import java.io.ByteArrayOutputStream;
import java.io.File;
import java.io.PrintStream;
import java.math.BigInteger;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.stream.Collectors;
import java.util.stream.Stream;
import java.util.zip.CRC32;
import java.util.zip.CRC32C;

import org.apache.hadoop.conf.Configuration;
import org.apache.hadoop.examples.terasort.GenSort;
import org.apache.hadoop.examples.terasort.TeraGen;
import org.apache.hadoop.util.ToolRunner;

public class TeraVectors {
  static Path scratch;

  /** Runs GenSort.main and returns {row bytes, printed checksum or null}. */
  static Object[] genSort(BigInteger first, long count, boolean checksum) throws Exception {
    Path file = scratch.resolve("gensort.bin");
    List<String> args = new ArrayList<>();
    if (checksum) {
      args.add("-c");
    }
    args.add("-b" + first);
    args.add(Long.toString(count));
    args.add(file.toString());
    PrintStream saved = System.out;
    ByteArrayOutputStream captured = new ByteArrayOutputStream();
    System.setOut(new PrintStream(captured, true, StandardCharsets.UTF_8));
    try {
      GenSort.main(args.toArray(new String[0]));
    } finally {
      System.setOut(saved);
    }
    byte[] rows = Files.readAllBytes(file);
    if (rows.length != count * 100) {
      throw new IllegalStateException("GenSort wrote " + rows.length + " bytes");
    }
    String sum = checksum ? captured.toString(StandardCharsets.UTF_8).trim() : null;
    return new Object[] {rows, sum};
  }

  static String hex(byte[] b, int from, int len) {
    StringBuilder s = new StringBuilder();
    for (int i = from; i < from + len; i++) {
      s.append(String.format("%02x", b[i] & 0xff));
    }
    return s.toString();
  }

  static String crc32c(byte[] b) {
    CRC32C c = new CRC32C();
    c.update(b, 0, b.length);
    return String.format("%08x", c.getValue());
  }

  /** Sum of the CRC-32 of each 100-byte row, printed like Unsigned16.toString. */
  static String rowCrcSum(byte[] rows) {
    BigInteger sum = BigInteger.ZERO;
    CRC32 c = new CRC32();
    for (int off = 0; off < rows.length; off += 100) {
      c.reset();
      c.update(rows, off, 100);
      sum = sum.add(BigInteger.valueOf(c.getValue()));
    }
    return sum.toString(16);
  }

  public static void main(String[] argv) throws Exception {
    scratch = Files.createTempDirectory("tera-vectors");
    PrintStream out = new PrintStream(argv[0], StandardCharsets.UTF_8);
    out.println("# Produced by TeraVectors.java from Hadoop " + org.apache.hadoop.util.VersionInfo.getVersion()
        + "; line formats are described there.");

    BigInteger two = BigInteger.TWO;
    List<BigInteger> rows = new ArrayList<>();
    for (int i = 0; i <= 20; i++) {
      rows.add(BigInteger.valueOf(i));
    }
    for (long d = -2; d <= 2; d++) {
      rows.add(two.pow(32).add(BigInteger.valueOf(d)));
    }
    rows.add(BigInteger.TEN.pow(9));
    rows.add(BigInteger.TEN.pow(12));
    rows.add(BigInteger.TEN.pow(13).add(BigInteger.valueOf(123456789)));
    rows.add(two.pow(63).subtract(BigInteger.ONE));
    rows.add(two.pow(63));
    rows.add(two.pow(64).subtract(BigInteger.ONE));
    rows.add(two.pow(64));
    rows.add(two.pow(64).add(BigInteger.ONE));
    rows.add(two.pow(100).add(BigInteger.valueOf(12345)));
    rows.add(two.pow(128).subtract(BigInteger.ONE));
    for (BigInteger r : rows) {
      byte[] row = (byte[]) genSort(r, 1, false)[0];
      out.println("row " + r + " " + hex(row, 0, 100));
    }

    long[][] ranges = {
      {0, 1000}, {0, 100000}, {4294966796L, 1000}, {1000000000L, 1000}, {999999999000L, 2000},
    };
    for (long[] range : ranges) {
      Object[] r = genSort(BigInteger.valueOf(range[0]), range[1], true);
      byte[] bytes = (byte[]) r[0];
      String printed = (String) r[1];
      if (!printed.equals(rowCrcSum(bytes))) {
        throw new IllegalStateException("checksum " + printed + " != " + rowCrcSum(bytes));
      }
      out.println("range " + range[0] + " " + range[1] + " " + crc32c(bytes) + " " + printed);
    }

    long count = 1000;
    Path teraOut = scratch.resolve("teragen-out");
    int rc = ToolRunner.run(new Configuration(), new TeraGen(), new String[] {
      "-D", "mapreduce.framework.name=local",
      "-D", "fs.defaultFS=file:///",
      "-D", "hadoop.tmp.dir=" + scratch.resolve("hadoop-tmp"),
      Long.toString(count), teraOut.toString(),
    });
    if (rc != 0) {
      throw new IllegalStateException("teragen failed: " + rc);
    }
    List<Path> parts;
    try (Stream<Path> s = Files.list(teraOut)) {
      parts = s.filter(p -> p.getFileName().toString().startsWith("part-m-"))
          .sorted().collect(Collectors.toList());
    }
    if (parts.isEmpty()) {
      throw new IllegalStateException("teragen wrote no part files");
    }
    ByteArrayOutputStream all = new ByteArrayOutputStream();
    for (Path p : parts) {
      all.write(Files.readAllBytes(p));
    }
    byte[] teragen = all.toByteArray();
    byte[] expected = (byte[]) genSort(BigInteger.ZERO, count, false)[0];
    if (!Arrays.equals(teragen, expected)) {
      throw new IllegalStateException("TeraGen output differs from GenSort");
    }
    out.println("teragen " + count + " " + crc32c(teragen) + " " + rowCrcSum(teragen));
    for (int id : new int[] {0, 1, 333, 334, 666, 667, 999}) {
      out.println("teragen_row " + id + " " + hex(teragen, id * 100, 100));
    }
    out.close();
  }
}
