// Generates writable_vectors.txt: Hadoop's Writable serialisation (WritableUtils' zero-compressed
// vints and vlongs, Text, BytesWritable, IntWritable, LongWritable, BooleanWritable,
// VIntWritable, VLongWritable), their hashCode() and their registered raw comparators, computed
// by Hadoop's own classes, so the Rust tests can check sluice_hadoop::writable without a JVM.
// See README.md for how to run it.
//
// Line formats (fields separated by one space; byte strings are lower-case hex, "~" when empty):
//   V <long> <writeVLong bytes> <getVIntSize>
//   I <int> <writeVInt bytes>
//   R <bytes> <readVLong> <bytes consumed> <readVInt> <bytes consumed>
//                      a read that throws shows "!" and the exception's simple class name, and
//                      then "-" for the bytes consumed
//   S <class> <value> <write() bytes> <hashCode()>
//                      value: decimal for numbers, true/false, hex bytes for Text and
//                      BytesWritable
//   D <class> <bytes> <value or !Exception> <bytes consumed or ->
//                      readFields() of a fresh object over the bytes (some of them malformed);
//                      VIntWritable and VLongWritable read exactly as R lines show
//   C <class> <a> <b> <sign>
//                      the sign (-1, 0, 1) of WritableComparator.get(class).compare over the
//                      serialised keys a and b
// <class> is the simple name of a class in org.apache.hadoop.io.
import java.io.*;
import java.nio.charset.StandardCharsets;
import java.util.*;
import org.apache.hadoop.io.*;

public class WritableVectors {
  static final Random RNG = new Random(20250117L);
  static PrintStream out;

  static String hex(byte[] b) {
    if (b.length == 0) return "~";
    StringBuilder sb = new StringBuilder();
    for (byte x : b) sb.append(String.format("%02x", x & 0xff));
    return sb.toString();
  }
  static byte[] unhex(String s) {
    byte[] b = new byte[s.length() / 2];
    for (int i = 0; i < b.length; i++) b[i] = (byte) Integer.parseInt(s.substring(2 * i, 2 * i + 2), 16);
    return b;
  }
  static byte[] u(String s) { return s.getBytes(StandardCharsets.UTF_8); }
  static byte[] ser(Writable w) throws IOException {
    DataOutputBuffer buf = new DataOutputBuffer();
    w.write(buf);
    return Arrays.copyOf(buf.getData(), buf.getLength());
  }
  static byte[] vlong(long v) throws IOException {
    DataOutputBuffer buf = new DataOutputBuffer();
    WritableUtils.writeVLong(buf, v);
    return Arrays.copyOf(buf.getData(), buf.getLength());
  }
  static byte[] vint(int v) throws IOException {
    DataOutputBuffer buf = new DataOutputBuffer();
    WritableUtils.writeVInt(buf, v);
    return Arrays.copyOf(buf.getData(), buf.getLength());
  }

  // Values around every boundary of the encoding: the one-byte range, each byte count, the sign.
  static long[] interestingLongs() {
    TreeSet<Long> set = new TreeSet<>();
    long[] fixed = {0, 1, -1, 2, -2, 100, -100, 111, -111, 112, -112, 113, -113, 119, -119, 120,
        -120, 121, -121, 126, -126, 127, -127, 128, -128, 129, -129, 200, -200, 254, 255, -255, 256,
        -256, 257, -257, 1000, -1000, 65535, 65536, -65536, -65537, 1L << 31, -(1L << 31),
        (1L << 31) - 1, -(1L << 31) - 1, 1L << 32, -(1L << 32), Integer.MAX_VALUE,
        Integer.MIN_VALUE, Long.MAX_VALUE, Long.MIN_VALUE, Long.MAX_VALUE - 1, Long.MIN_VALUE + 1};
    for (long v : fixed) set.add(v);
    for (int bits = 7; bits < 64; bits++) {
      long p = 1L << bits;
      for (long d = -1; d <= 1; d++) {
        set.add(p + d);
        set.add(-p + d);
      }
    }
    return set.stream().mapToLong(Long::longValue).toArray();
  }

  static String readVLong(byte[] b) {
    DataInputBuffer in = new DataInputBuffer();
    in.reset(b, b.length);
    try {
      long v = WritableUtils.readVLong(in);
      return v + " " + in.getPosition();
    } catch (IOException | RuntimeException e) {
      return "!" + e.getClass().getSimpleName() + " -";
    }
  }
  static String readVInt(byte[] b) {
    DataInputBuffer in = new DataInputBuffer();
    in.reset(b, b.length);
    try {
      int v = WritableUtils.readVInt(in);
      return v + " " + in.getPosition();
    } catch (IOException | RuntimeException e) {
      return "!" + e.getClass().getSimpleName() + " -";
    }
  }

  static String show(Writable w) {
    if (w instanceof Text) {
      Text t = (Text) w;
      return hex(Arrays.copyOf(t.getBytes(), t.getLength()));
    }
    if (w instanceof BytesWritable) return hex(((BytesWritable) w).copyBytes());
    return w.toString();
  }
  static void s(Writable w) throws IOException {
    out.println("S " + w.getClass().getSimpleName() + " " + show(w) + " " + hex(ser(w)) + " " + w.hashCode());
  }
  static void d(Writable w, byte[] b) {
    DataInputBuffer in = new DataInputBuffer();
    in.reset(b, b.length);
    String result;
    try {
      w.readFields(in);
      result = show(w) + " " + in.getPosition();
    } catch (IOException | RuntimeException e) {
      result = "!" + e.getClass().getSimpleName() + " -";
    }
    out.println("D " + w.getClass().getSimpleName() + " " + hex(b) + " " + result);
  }
  static void c(Class<? extends WritableComparable> cls, byte[] a, byte[] b) {
    int sign = Integer.signum(WritableComparator.get(cls).compare(a, 0, a.length, b, 0, b.length));
    out.println("C " + cls.getSimpleName() + " " + hex(a) + " " + hex(b) + " " + sign);
  }

  static byte[] randomBytes(int maxLen) {
    byte[] b = new byte[RNG.nextInt(maxLen + 1)];
    for (int i = 0; i < b.length; i++) {
      int r = RNG.nextInt(4);
      // Mostly a small alphabet, so that equal prefixes and equal keys are common.
      b[i] = (byte) (r < 2 ? 'a' + RNG.nextInt(3) : r == 2 ? 0x7e + RNG.nextInt(4) : RNG.nextInt(256));
    }
    return b;
  }
  static byte[] repeat(char c, int n) {
    byte[] b = new byte[n];
    Arrays.fill(b, (byte) c);
    return b;
  }

  public static void main(String[] args) throws Exception {
    out = new PrintStream(new FileOutputStream(args.length > 0 ? args[0] : "writable_vectors.txt"),
        false, "UTF-8");
    out.println("# Generated by WritableVectors.java against Hadoop " + org.apache.hadoop.util.VersionInfo.getVersion()
        + " on Java " + System.getProperty("java.specification.version") + "; do not edit.");

    // Zero-compressed vlongs and vints.
    long[] longs = interestingLongs();
    List<Long> all = new ArrayList<>();
    for (long v : longs) all.add(v);
    for (int i = 0; i < 200; i++) all.add(RNG.nextLong() >> RNG.nextInt(64));
    for (long v : all) {
      out.println("V " + v + " " + hex(vlong(v)) + " " + WritableUtils.getVIntSize(v));
      if (v == (int) v) out.println("I " + v + " " + hex(vint((int) v)));
    }

    // Reading: canonical encodings, non-canonical ones (more bytes than needed), truncated
    // ones, trailing bytes, values too large for an int, and random bytes.
    List<byte[]> reads = new ArrayList<>();
    for (long v : longs) {
      byte[] e = vlong(v);
      reads.add(e);
      if (e.length > 1) reads.add(Arrays.copyOf(e, e.length - 1));
      byte[] trailing = Arrays.copyOf(e, e.length + 1);
      trailing[e.length] = 0x55;
      reads.add(trailing);
    }
    String[] crafted = {"", "8f", "8f05", "8f7f", "8f80", "8fff", "8e0000", "8e0001", "88000000000000007f",
        "870000000000000000", "87ffffffffffffff80", "877fffffffffffffff", "80ffffffffffffffff",
        "8000000000000000", "8c80000000", "8c7fffffff", "8cffffffff", "8b0000000080000000",
        "847fffffff", "8480000000", "84ffffffff", "85ffffff", "8500", "70", "90", "7f", "80", "ff"};
    for (String s : crafted) reads.add(unhex(s));
    for (int i = 0; i < 100; i++) {
      byte[] b = new byte[1 + RNG.nextInt(10)];
      RNG.nextBytes(b);
      if (RNG.nextBoolean()) b[0] = (byte) (0x80 + RNG.nextInt(0x10));
      reads.add(b);
    }
    for (byte[] b : reads) out.println("R " + hex(b) + " " + readVLong(b) + " " + readVInt(b));

    // Serialisation and hashCode of each type.
    List<byte[]> texts = new ArrayList<>(Arrays.asList(new byte[0], u("a"), u("ab"), u("hello world"),
        u("\u00e9"), u("\u65e5\u672c"), u("\ud83d\ude00"), new byte[] {(byte) 0xff}, new byte[] {(byte) 0x80, 0, 0x7f},
        repeat('x', 127), repeat('x', 128), repeat('y', 300)));
    for (int i = 0; i < 40; i++) texts.add(randomBytes(12));
    for (byte[] t : texts) {
      s(new Text(t));
      s(new BytesWritable(t));
    }
    for (long v : longs) {
      s(new LongWritable(v));
      s(new VLongWritable(v));
      if (v == (int) v) {
        s(new IntWritable((int) v));
        s(new VIntWritable((int) v));
      }
    }
    s(new BooleanWritable(false));
    s(new BooleanWritable(true));

    // Deserialising, malformed input included.
    String[] textInputs = {"~", "00", "0161", "026162", "0161ff", "01", "0261", "ff", "8f0080", "8f0001" + "61",
        "8e00000161", "8c80000000", "8cffffffff", "8b00000000ffffffff", "8f"};
    for (String s : textInputs) d(new Text(), s.equals("~") ? new byte[0] : unhex(s));
    String[] bytesInputs = {"~", "00000000", "0000000161", "000000026162", "0000000161ff", "00000002",
        "0000000261", "ffffffff", "80000000", "000000", "00010000"};
    for (String s : bytesInputs) d(new BytesWritable(), s.equals("~") ? new byte[0] : unhex(s));
    String[] fixedInputs = {"~", "00", "01", "02", "ff", "000000", "00000001", "ffffffff", "80000000",
        "7fffffff0102", "0000000000000001", "8000000000000000", "ffffffffffffffff", "00000000000000"};
    for (String s : fixedInputs) {
      byte[] b = s.equals("~") ? new byte[0] : unhex(s);
      d(new IntWritable(), b);
      d(new LongWritable(), b);
      d(new BooleanWritable(), b);
    }

    // Raw comparators over serialised keys.
    List<byte[]> textKeys = new ArrayList<>();
    List<byte[]> bytesKeys = new ArrayList<>();
    for (byte[] t : texts) {
      textKeys.add(ser(new Text(t)));
      bytesKeys.add(ser(new BytesWritable(t)));
    }
    for (int i = 0; i < textKeys.size(); i++) {
      for (int j = 0; j < textKeys.size(); j++) {
        if ((i < 12 && j < 12) || RNG.nextInt(6) == 0) {
          c(Text.class, textKeys.get(i), textKeys.get(j));
          c(BytesWritable.class, bytesKeys.get(i), bytesKeys.get(j));
        }
      }
    }
    List<Long> numbers = new ArrayList<>();
    for (long v : longs) numbers.add(v);
    for (int i = 0; i < 30; i++) numbers.add(RNG.nextLong() >> RNG.nextInt(64));
    for (int i = 0; i < numbers.size(); i++) {
      for (int j = 0; j < numbers.size(); j++) {
        if (RNG.nextInt(192) != 0 && i != j) continue;
        long a = numbers.get(i), b = numbers.get(j);
        c(LongWritable.class, ser(new LongWritable(a)), ser(new LongWritable(b)));
        c(VLongWritable.class, ser(new VLongWritable(a)), ser(new VLongWritable(b)));
        if (a == (int) a && b == (int) b) {
          c(IntWritable.class, ser(new IntWritable((int) a)), ser(new IntWritable((int) b)));
          c(VIntWritable.class, ser(new VIntWritable((int) a)), ser(new VIntWritable((int) b)));
        }
      }
    }
    // BooleanWritable compares the serialised bytes, so a true written as 02 is not equal to 01.
    String[] bools = {"00", "01", "02", "ff"};
    for (String a : bools) for (String b : bools) c(BooleanWritable.class, unhex(a), unhex(b));
    out.close();
  }
}
