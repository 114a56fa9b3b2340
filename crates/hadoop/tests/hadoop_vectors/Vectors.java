// Generates hadoop_vectors.txt: reference results computed by Hadoop's own classes for
// KeyFieldBasedComparator, KeyFieldBasedPartitioner and the typed bytes encoding, so the Rust
// tests can check sluice against Hadoop without a JVM. See README.md for how to run it.
//
// Line formats (fields separated by one space; every string field is escaped: printable ASCII
// other than '%' and '~' stands for itself, any other byte is %XX, and "~" is the empty string):
//   O <options> <result>                      option parse: "ok" or the exception class name
//   C <options> <sep> <a> <b> <sign>          comparator sign (-1, 0, 1) or "E" if Hadoop threw
//   P <options> <sep> <key> <p1,p2,...>       partition for each reducer count in PARTS
//   T <typed bytes> <toString or !Exception>  TypedBytesWritable.toString() of raw typed bytes
//   W <kind> <input> <typed bytes>            TypedBytesWritableOutput encoding of a Writable
//   H <typed bytes> <hashCode> <p1,p2,...>    TypedBytesWritable.hashCode() and HashPartitioner
//   K <typed a> <typed b> <sign>              map output key comparator for TypedBytesWritable
import java.io.*;
import java.nio.charset.StandardCharsets;
import java.util.*;
import org.apache.hadoop.io.*;
import org.apache.hadoop.mapred.JobConf;
import org.apache.hadoop.mapred.lib.HashPartitioner;
import org.apache.hadoop.mapred.lib.KeyFieldBasedComparator;
import org.apache.hadoop.mapred.lib.KeyFieldBasedPartitioner;
import org.apache.hadoop.record.Buffer;
import org.apache.hadoop.typedbytes.*;

public class Vectors {
  static final int[] PARTS = {1, 2, 3, 7, 10, 64, 1000};
  static final Random RNG = new Random(20240611L);
  static PrintStream out;

  static String esc(byte[] b) {
    if (b.length == 0) return "~";
    StringBuilder sb = new StringBuilder();
    for (byte x : b) {
      int c = x & 0xff;
      if (c > 0x20 && c < 0x7f && c != '%' && c != '~') sb.append((char) c);
      else sb.append(String.format("%%%02X", c));
    }
    return sb.toString();
  }
  static String esc(String s) { return esc(s.getBytes(StandardCharsets.UTF_8)); }
  static byte[] u(String s) { return s.getBytes(StandardCharsets.UTF_8); }

  static JobConf conf(String key, String options, String sep) {
    JobConf job = new JobConf(false);
    job.set(key, options);
    job.set("mapreduce.map.output.key.field.separator", sep);
    return job;
  }
  static byte[] textBytes(byte[] key) throws IOException {
    DataOutputBuffer buf = new DataOutputBuffer();
    new Text(key).write(buf);
    return Arrays.copyOf(buf.getData(), buf.getLength());
  }

  static String compare(String options, String sep, byte[] a, byte[] b) throws IOException {
    KeyFieldBasedComparator<Text, Text> cmp = new KeyFieldBasedComparator<>();
    cmp.configure(conf("mapreduce.partition.keycomparator.options", options, sep));
    byte[] sa = textBytes(a), sb = textBytes(b);
    try {
      return Integer.toString(Integer.signum(cmp.compare(sa, 0, sa.length, sb, 0, sb.length)));
    } catch (RuntimeException e) {
      return "E";
    }
  }
  static String partition(String options, String sep, byte[] key) {
    KeyFieldBasedPartitioner<Text, Text> p = new KeyFieldBasedPartitioner<>();
    p.configure(conf("mapreduce.partition.keypartitioner.options", options, sep));
    StringBuilder sb = new StringBuilder();
    for (int n : PARTS) {
      if (sb.length() > 0) sb.append(',');
      try {
        sb.append(p.getPartition(new Text(key), null, n));
      } catch (RuntimeException e) {
        sb.append('E');
      }
    }
    return sb.toString();
  }
  static String parse(String options) {
    try {
      new KeyFieldBasedComparator<Text, Text>()
          .configure(conf("mapreduce.partition.keycomparator.options", options, "\t"));
      return "ok";
    } catch (RuntimeException e) {
      return e.getClass().getSimpleName();
    }
  }

  static final String[] FIELDS = {
    "", "0", "-0", "00", "000", "1", "01", "-1", "-01", "2", "10", "9", "-10", "-9", "1.5", "1.50",
    "-1.5", ".5", "-.5", "0.0", "-0.0", "0.", "-0.", ".0", "-.0", "1e3", "abc", "a", "b", "B", "ab",
    "\u00e9", "\u65e5\u672c", "+1", "1.2.3", "--1", "1-", " 1", "123456789012345678901234567890",
    "0.000001", "-0.0001", "5.", "-", ".", "x1", "1x", "12", "012", "1.05", "1.5x", "-1.05", "99",
    "100", "-100", "0.1", "0.10", "0.01", "-0.01", "1.25", "1.3"
  };
  static final String[] SEPS = {"\t", ",", ".", "::", "\u00e9"};
  static final String[] OPTIONS = {
    "", "-n", "-r", "-nr", "-rn", "-k1", "-k2", "-k3", "-k1,1", "-k2,2", "-k1.2,1.3", "-k2,2nr",
    "-k2,2n", "-k2,2r", "-k1n", "-k1,1n", "-k2n -k1r", "-k2,2 -k1,1nr", "-nr -k2,2",
    "-n -k1,1 -k2,2r", "-k1.2", "-k1.3,2.2", "-k3,3n", "-k2.2,2.1", "-k2,1", "-k3,2n", "-k1,1.10",
    "-k 2,2n", "-k1.1,1.1", "-k2.5,3.0", "-k1,2", "-k2,2 -nr", "-k1.2n,1.3", "-k4", "-k1.100",
    "-k2,2n -k3,3", "-r -k1,1n", "-k1r,1", "-k1,1rn", "-k2.2", "-k1.1,1.0", "-k1.2,3.1n",
    "-k", "-n -k", "-k1,1 foo -k2,2"
  };
  static final String[] BAD_OPTIONS = {
    "-k", "-kx", "-k1.", "-k1,", "-k1x", "-k1.2.3", "-k,2", "-k1,2x", "-k0", "-k1.0", "-k-1",
    "-k1,0", "-k+2", "-k1,2.", "-k1,2,3", "-kn", "-k1n.2", "-k1,2n.3", "-k1.x", "-k99999999999",
    "-k1,1.-1", "-k 1", "-k2 -k", "-k1,1nrx", "-k0,0", "-k1.2,1.0n", "-k1.2n"
  };

  static byte[] randomKey(String sep, boolean numericHeavy) {
    int n = RNG.nextInt(5);
    ByteArrayOutputStream b = new ByteArrayOutputStream();
    for (int i = 0; i < n; i++) {
      if (i > 0) b.writeBytes(u(sep));
      String f = numericHeavy ? randomNumber() : FIELDS[RNG.nextInt(FIELDS.length)];
      b.writeBytes(u(f));
    }
    if (RNG.nextInt(20) == 0) b.write(0xff); // a byte that is not UTF-8
    return b.toByteArray();
  }
  static String randomNumber() {
    StringBuilder sb = new StringBuilder();
    int len = RNG.nextInt(7);
    String alphabet = "0000123456789-..ax";
    if (RNG.nextBoolean()) sb.append('-');
    for (int i = 0; i < len; i++) sb.append(alphabet.charAt(RNG.nextInt(alphabet.length())));
    return sb.toString();
  }

  public static void main(String[] args) throws Exception {
    out = new PrintStream(new FileOutputStream(args.length > 0 ? args[0] : "hadoop_vectors.txt"),
        false, "UTF-8");
    out.println("# Generated by Vectors.java against Hadoop " + org.apache.hadoop.util.VersionInfo.getVersion()
        + " on Java " + System.getProperty("java.specification.version") + "; do not edit.");
    out.println("# PARTS " + Arrays.toString(PARTS).replaceAll("[\\[\\] ]", ""));
    for (String o : OPTIONS) out.println("O " + esc(o) + " " + parse(o));
    for (String o : BAD_OPTIONS) out.println("O " + esc(o) + " " + parse(o));

    // Comparator and partitioner over generated keys.
    for (String o : OPTIONS) {
      for (String sep : SEPS) {
        int pairs = sep.equals("\t") ? 36 : 14;
        for (int i = 0; i < pairs; i++) {
          byte[] a = randomKey(sep, false), b = randomKey(sep, false);
          if (i % 7 == 0) b = a.clone();
          out.println("C " + esc(o) + " " + esc(sep) + " " + esc(a) + " " + esc(b) + " " + compare(o, sep, a, b));
        }
        for (int i = 0; i < pairs / 2; i++) {
          byte[] k = randomKey(sep, false);
          out.println("P " + esc(o) + " " + esc(sep) + " " + esc(k) + " " + partition(o, sep, k));
        }
      }
    }
    // Numeric comparison stress: every pair of the fixed fields, then random numbers.
    for (String o : new String[] {"-n", "-k1n", "-k2,2nr"}) {
      for (String fa : FIELDS) for (String fb : FIELDS) {
        if (!o.equals("-n") && RNG.nextInt(4) != 0) continue;
        byte[] a = u(o.equals("-k2,2nr") ? "x\t" + fa : fa), b = u(o.equals("-k2,2nr") ? "x\t" + fb : fb);
        out.println("C " + esc(o) + " " + esc("\t") + " " + esc(a) + " " + esc(b) + " " + compare(o, "\t", a, b));
      }
    }
    for (int i = 0; i < 800; i++) {
      byte[] a = u(randomNumber()), b = u(randomNumber());
      out.println("C -n " + esc("\t") + " " + esc(a) + " " + esc(b) + " " + compare("-n", "\t", a, b));
    }
    // Whole-key partitioning of arbitrary bytes (checks Java's lossy UTF-8 decoding too).
    for (int i = 0; i < 400; i++) {
      byte[] k = new byte[RNG.nextInt(8)];
      for (int j = 0; j < k.length; j++) {
        int r = RNG.nextInt(4);
        k[j] = (byte) (r == 0 ? RNG.nextInt(0x80) : r == 1 ? 0x80 + RNG.nextInt(0x40) : 0xc0 + RNG.nextInt(0x40));
      }
      String o = i % 2 == 0 ? "" : "-k1";
      out.println("P " + esc(o) + " " + esc("\t") + " " + esc(k) + " " + partition(o, "\t", k));
    }
    typedBytes();
    out.close();
  }

  // ---------------------------------------------------------------- typed bytes
  static byte[] encode(Object o) throws IOException {
    ByteArrayOutputStream b = new ByteArrayOutputStream();
    new TypedBytesOutput(new DataOutputStream(b)).write(o);
    return b.toByteArray();
  }
  static byte[] encodeWritable(Writable w) throws IOException {
    ByteArrayOutputStream b = new ByteArrayOutputStream();
    new TypedBytesWritableOutput(new DataOutputStream(b)).write(w);
    return b.toByteArray();
  }
  static void t(byte[] raw) {
    String s;
    try {
      s = esc(new TypedBytesWritable(raw).toString());
    } catch (RuntimeException e) {
      s = "!" + e.getClass().getSimpleName();
    }
    out.println("T " + esc(raw) + " " + s);
  }
  static byte[] cat(byte[]... parts) {
    ByteArrayOutputStream b = new ByteArrayOutputStream();
    for (byte[] p : parts) b.writeBytes(p);
    return b.toByteArray();
  }
  static byte[] hx(int... v) {
    byte[] b = new byte[v.length];
    for (int i = 0; i < v.length; i++) b[i] = (byte) v[i];
    return b;
  }
  static Object randomValue(int depth) {
    switch (RNG.nextInt(depth > 2 ? 9 : 12)) {
      case 0: return new Buffer(randomBytes(4));
      case 1: return (byte) RNG.nextInt();
      case 2: return RNG.nextBoolean();
      case 3: return RNG.nextInt(3) == 0 ? RNG.nextInt() : RNG.nextInt(200) - 100;
      case 4: return RNG.nextLong() >> RNG.nextInt(64);
      case 5: return Float.intBitsToFloat(RNG.nextInt());
      case 6: return RNG.nextBoolean() ? Double.longBitsToDouble(RNG.nextLong()) : (RNG.nextInt(2000000) - 1000000) / Math.pow(10, RNG.nextInt(12));
      case 7: case 8: return new String(new char[] {(char) ('a' + RNG.nextInt(26)), "\u00e9x\u65e5\t ,".charAt(RNG.nextInt(6))});
      case 9: { ArrayList<Object> l = new ArrayList<>(); int n = RNG.nextInt(4); for (int i = 0; i < n; i++) l.add(randomValue(depth + 1)); return l; }
      case 10: { List<Object> l = new LinkedList<>(); int n = RNG.nextInt(4); for (int i = 0; i < n; i++) l.add(randomValue(depth + 1)); return l; }
      default: {
        Map<Object, Object> m = new LinkedHashMap<>(); int n = RNG.nextInt(4);
        int kind = RNG.nextInt(4);
        for (int i = 0; i < n; i++) {
          Object k = kind == 0 ? (Object) (RNG.nextInt(5) - 2) : kind == 1 ? (Object) ("k" + RNG.nextInt(5))
              : kind == 2 ? (Object) (RNG.nextInt(5) / 2.0 - 1) : new Buffer(randomBytes(2));
          m.put(k, randomValue(depth + 1));
        }
        return m;
      }
    }
  }
  static byte[] randomBytes(int max) {
    byte[] b = new byte[RNG.nextInt(max + 1)];
    RNG.nextBytes(b);
    return b;
  }

  static void typedBytes() throws Exception {
    Object[] fixed = {
      new Buffer(new byte[0]), new Buffer(hx(0, 0x7f, 0x80, 0xff, 0x0a)), (byte) 0, (byte) -128, (byte) 127,
      true, false, 0, -1, Integer.MIN_VALUE, Integer.MAX_VALUE, 0L, Long.MIN_VALUE, Long.MAX_VALUE,
      "", "hello", "tab\there", "\u00e9\u65e5\uD83D\uDE00", new ArrayList<>(), new LinkedList<>(),
      new ArrayList<>(List.of(1, "a", 2.5)), new LinkedList<>(List.of(1L, new ArrayList<>(List.of(true)))),
      new TreeMap<>(Map.of("b", 1, "a", 2, "B", 3)), new TreeMap<>(), new TreeMap<>(Map.of(3, "x", -1, "y")),
    };
    for (Object o : fixed) t(encode(o));
    double[] doubles = {0.0, -0.0, 1.0, -1.0, 0.1, 0.2, 0.1 + 0.2, 1.0 / 3, 100.0, 1e7, 9999999.0,
      9999999.999, 1e-3, 0.001, 0.00099, 1e-4, 1e21, 1e22, 1e23, 2e23, 123456789.0, 1.5e300,
      Double.MIN_VALUE, Double.MAX_VALUE, Double.MIN_NORMAL, Double.NaN, Double.POSITIVE_INFINITY,
      Double.NEGATIVE_INFINITY, Math.PI, Math.E, 5.6843418860808015E-14, 2.82879384806159E17,
      1.0E-5, 4.9E-324, 1.7976931348623157E308, 12345.678, 0.5, 2.0, 1e16, 1e17};
    for (double d : doubles) t(encode(d));
    float[] floats = {0f, -0f, 1f, 0.1f, 1e7f, 1e-3f, 3.4028235e38f, 1.4e-45f, Float.NaN,
      Float.NEGATIVE_INFINITY, 1.0e10f, 0.3f, 16777216f, 1.17549435E-38f, 2.0E-3f, 9999999f};
    for (float f : floats) t(encode(f));
    for (int i = 0; i < 400; i++) t(encode(Double.longBitsToDouble(RNG.nextLong())));
    for (int i = 0; i < 400; i++) t(encode((RNG.nextInt(2000000) - 1000000) / Math.pow(10, RNG.nextInt(14) - 3)));
    for (int i = 0; i < 300; i++) t(encode(Float.intBitsToFloat(RNG.nextInt())));
    for (int i = 0; i < 200; i++) t(encode((float) ((RNG.nextInt(2000000) - 1000000) / Math.pow(10, RNG.nextInt(14) - 3))));
    for (int i = 0; i < 300; i++) t(encode(randomValue(0)));
    // Hand-made byte sequences: strings with invalid UTF-8, custom codes, bool bytes other
    // than 0/1, markers inside containers, mixed-type map keys, unknown codes, truncation.
    int[][] raw = {
      {7, 0, 0, 0, 2, 0xc3, 0x28}, {7, 0, 0, 0, 1, 0xff}, {7, 0, 0, 0, 3, 0xed, 0xa0, 0x80},
      {7, 0, 0, 0, 4, 0xf0, 0x9f, 0x98, 0x80}, {7, 0, 0, 0, 3, 0xe2, 0x82, 0x41}, {7, 0, 0, 0, 2, 0xf0, 0x9f},
      {7, 0, 0, 0, 4, 0xf4, 0x90, 0x80, 0x80}, {7, 0, 0, 0, 2, 0xc0, 0xaf}, {7, 0, 0, 0, 5, 0xf8, 0x88, 0x80, 0x80, 0x80},
      {7, 0, 0, 0, 3, 0xe0, 0x80, 0xaf}, {7, 0, 0, 0, 3, 0x61, 0x80, 0x62},
      {50, 0, 0, 0, 2, 0xab, 0xcd}, {200, 0, 0, 0, 0}, {2, 7}, {2, 0xff}, {1, 0x80},
      {8, 0, 0, 0, 2, 3, 0, 0, 0, 1, 255}, {9, 3, 0, 0, 0, 1, 9, 255, 255}, {9, 255},
      {10, 0, 0, 0, 2, 3, 0, 0, 0, 1, 1, 5, 4, 0, 0, 0, 0, 0, 0, 0, 1, 1, 6},
      {10, 0, 0, 0, 2, 3, 0, 0, 0, 1, 1, 5, 3, 0, 0, 0, 1, 1, 6},
      {10, 0, 0, 0, 1, 9, 255, 1, 5}, {10, 0, 0, 0, 1, 255, 1, 5}, {10, 0, 0, 0, 1, 1, 5, 255},
      {10, 0, 0, 0, 2, 0, 0, 0, 0, 1, 0x80, 1, 5, 50, 0, 0, 0, 0, 1, 6},
      {10, 0, 0, 0, 2, 6, 0, 0, 0, 0, 0, 0, 0, 0, 1, 1, 6, 0x80, 0, 0, 0, 0, 0, 0, 0, 1, 2},
      {10, 0, 0, 0, 2, 6, 0x7f, 0xf8, 0, 0, 0, 0, 0, 0, 1, 1, 6, 0x7f, 0xf8, 0, 0, 0, 0, 0, 1, 1, 2},
      {10, 0, 0, 0, 2, 7, 0, 0, 0, 2, 0xef, 0xbc, 1, 1, 7, 0, 0, 0, 4, 0xf0, 0x9f, 0x98, 0x80, 1, 2},
      {10, 0, 0, 0, 2, 2, 1, 1, 1, 2, 0, 1, 2}, {10, 0, 0, 0, 2, 1, 5, 1, 1, 1, 0xfb, 1, 2},
      {11}, {49, 0, 0, 0, 0}, {201}, {255}, {3, 0, 0}, {7, 0, 0, 0, 5, 0x61}, {},
    };
    for (int[] r : raw) t(hx(r));
    // Writables as the typed bytes input writer sends them.
    long[] offsets = {0, 1, 127, 128, 65536, 1L << 40, Long.MAX_VALUE};
    for (long off : offsets)
      out.println("W long " + off + " " + esc(encodeWritable(new LongWritable(off))));
    byte[][] texts = {u(""), u("hello world"), u("a\tb"), u("\u00e9\u65e5\uD83D\uDE00"), hx(0xff, 0x61),
      hx(0xc3, 0x28), hx(0xed, 0xa0, 0x80), hx(0xe2, 0x82), hx(0xf0, 0x9f, 0x98), hx(0xf4, 0x90, 0x80, 0x80), hx(0xc0, 0x80)};
    for (byte[] tx : texts)
      out.println("W text " + esc(tx) + " " + esc(encodeWritable(new Text(tx))));
    for (int i = 0; i < 100; i++) {
      byte[] tx = randomBytes(6);
      out.println("W text " + esc(tx) + " " + esc(encodeWritable(new Text(tx))));
    }
    out.println("W bytes " + esc(hx(1, 2, 0xff)) + " " + esc(encodeWritable(new BytesWritable(hx(1, 2, 0xff)))));
    out.println("W int 7 " + esc(encodeWritable(new IntWritable(7))));
    out.println("W double 1.5 " + esc(encodeWritable(new DoubleWritable(1.5))));
    // Typed bytes as map output keys: hash, partition and sort order.
    JobConf job = new JobConf(false);
    job.setMapOutputKeyClass(TypedBytesWritable.class);
    RawComparator<?> cmp = job.getOutputKeyComparator();
    out.println("# key comparator " + cmp.getClass().getName());
    HashPartitioner<TypedBytesWritable, TypedBytesWritable> hp = new HashPartitioner<>();
    List<byte[]> keys = new ArrayList<>();
    for (int i = 0; i < 120; i++) keys.add(encode(randomValue(1)));
    keys.add(new byte[0]);
    keys.add(encode(-1));
    keys.add(encode(1));
    keys.add(encode("a"));
    keys.add(encode("ab"));
    for (byte[] k : keys) {
      TypedBytesWritable w = new TypedBytesWritable(k);
      StringBuilder sb = new StringBuilder();
      for (int n : PARTS) { if (sb.length() > 0) sb.append(','); sb.append(hp.getPartition(w, w, n)); }
      out.println("H " + esc(k) + " " + w.hashCode() + " " + sb);
    }
    for (int i = 0; i < 200; i++) {
      byte[] a = keys.get(RNG.nextInt(keys.size())), b = keys.get(RNG.nextInt(keys.size()));
      DataOutputBuffer ba = new DataOutputBuffer(), bb = new DataOutputBuffer();
      new TypedBytesWritable(a).write(ba);
      new TypedBytesWritable(b).write(bb);
      int s = Integer.signum(cmp.compare(ba.getData(), 0, ba.getLength(), bb.getData(), 0, bb.getLength()));
      out.println("K " + esc(a) + " " + esc(b) + " " + s);
    }
  }
}
