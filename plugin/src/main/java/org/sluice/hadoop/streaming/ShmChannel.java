package org.sluice.hadoop.streaming;

import java.io.DataInputStream;
import java.io.DataOutputStream;
import java.io.FilterInputStream;
import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.lang.reflect.Field;
import java.lang.reflect.Method;
import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.util.Arrays;
import org.apache.hadoop.conf.Configuration;
import org.apache.hadoop.streaming.PipeMapRed;
import org.sluice.hadoop.NativeLoader;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The handshake of {@code docs/shm-protocol.md} ("Setting up under Hadoop Streaming") and the
 * streams over the rings that follow it.
 *
 * <p>Hadoop starts the program and wraps its pipes before any plugin code runs, and its
 * {@code PipeMapRed} writes, flushes and closes the program's stdin, and reads its stdout,
 * through two fields. When the program attaches, those fields are pointed at streams over the
 * rings ({@link RingOutputStream}, {@link RingInputStream}), so that Hadoop's own text writer
 * and reader, its end-of-input close and its output thread work unchanged. The fields are
 * package-private in Hadoop (reflection here); if they cannot be reached the program stays on
 * pipes, which is always correct.
 */
final class ShmChannel {
  private static final Logger LOG = LoggerFactory.getLogger(ShmChannel.class);

  /** How long to wait for the program's offer, and then for its attach. */
  static final String TIMEOUT_KEY = "sluice.shm.handshake.timeout.ms";

  static final long DEFAULT_TIMEOUT_MS = 2000;

  /** Bytes of each ring, as for {@code sluice streaming}. */
  static final String RING_SIZE_KEY = "sluice.shm.ring.size";

  static final long DEFAULT_RING_SIZE = 1L << 20;

  /** The line a program linking a sluice client writes first: see the protocol. */
  static final byte[] HELLO = "\u0001sluice-shm hello 1\n".getBytes(StandardCharsets.US_ASCII);

  /** Bytes per JNI call in each direction. */
  private static final int BATCH = 1 << 20;

  private static final Fields FIELDS = Fields.find();

  private final long session;
  private final OutputStream stdin;
  private int open;

  private ShmChannel(long session, OutputStream stdin, int open) {
    this.session = session;
    this.stdin = stdin;
    this.open = open;
  }

  /** What the program's first stdout bytes said. */
  enum Offer {
    /** The hello line, consumed. */
    HELLO,
    /** Something else, or the end of its output: no offer, the bytes are output. */
    NONE,
    /** Nothing decisive before the timeout: a hello may still come. */
    LATE
  }

  /**
   * Does the handshake for the program {@code pipeMapRed} runs, before its first record.
   *
   * @param map whether the program is a mapper (else a reducer or combiner)
   * @throws IOException if the program offered, was answered, and did not attach
   */
  static void setUp(PipeMapRed pipeMapRed, boolean map) throws IOException {
    Configuration conf = pipeMapRed.getConfiguration();
    long timeout = conf.getLong(TIMEOUT_KEY, DEFAULT_TIMEOUT_MS);
    Process process = FIELDS == null ? null : FIELDS.process(pipeMapRed);
    DataInputStream stdout = (DataInputStream) pipeMapRed.getClientInput();
    Offer offer = awaitOffer(stdout, process, timeout);
    if (offer == Offer.NONE) {
      LOG.info("sluice: the streaming program made no shared-memory offer; its records go "
          + "through pipes");
      return;
    }
    if (offer == Offer.LATE) {
      LOG.info("sluice: no shared-memory offer from the streaming program within {} ms ({}); "
          + "its records go through pipes", timeout, TIMEOUT_KEY);
      if (FIELDS != null) {
        FIELDS.setStdout(pipeMapRed, new DataInputStream(new HelloSkipper(stdout)));
      }
      return;
    }
    // The program offered. Answering with records (not the attach line) keeps it on pipes,
    // correct whatever stops the rings here.
    String refusal = refusal(process);
    if (refusal != null) {
      LOG.warn("sluice: the streaming program offered shared memory, but {}; its records go "
          + "through pipes", refusal);
      return;
    }
    String readerKey = map ? "stream.map.output.reader.class" : "stream.reduce.output.reader.class";
    boolean outputRing = ShmOutputReader.class.getName().equals(conf.get(readerKey));
    long ring = conf.getLong(RING_SIZE_KEY, DEFAULT_RING_SIZE);
    int pid = pid(process);
    DataOutputStream stdin = (DataOutputStream) pipeMapRed.getClientOutput();
    long session = ShmNative.shmCreate(pid, ring, outputRing ? ring : 0);
    try {
      byte[] attach = ShmNative.shmAttachLine(session);
      try {
        stdin.write(attach);
        stdin.flush();
      } catch (IOException e) {
        // Hadoop closed stdin already: a task without input (its first record never came)
        // starts the writer only at its end. The program read the end of its input, so it
        // stays on pipes and ends.
        ShmNative.shmClose(session);
        LOG.info("sluice: the streaming program's input ended before the handshake ({}); it "
            + "stays on pipes", e.getMessage());
        return;
      }
      ShmNative.shmAwaitAttach(session, timeout);
    } catch (IOException | RuntimeException e) {
      ShmNative.shmClose(session);
      throw e;
    }
    ShmChannel channel = new ShmChannel(session, stdin, outputRing ? 2 : 1);
    FIELDS.setStdin(pipeMapRed, new DataOutputStream(channel.new RingOutputStream()));
    if (outputRing) {
      FIELDS.setStdout(pipeMapRed, new DataInputStream(channel.new RingInputStream()));
      drain(stdout);
    }
    LOG.info("sluice: the streaming program (pid {}) attached over shared memory: input ring of "
        + "{} bytes, output {}", pid, ring, outputRing ? "ring of " + ring + " bytes" : "on stdout");
  }

  /** Why an offer cannot be taken up here, or null if it can. */
  private static String refusal(Process process) {
    if (FIELDS == null) {
      return "this Hadoop's PipeMapRed has no fields clientOut_, clientIn_ and sim to use";
    }
    if (pid(process) <= 0) {
      return "its process id is not known";
    }
    try {
      NativeLoader.load();
    } catch (IOException e) {
      return e.getMessage();
    }
    return null;
  }

  /**
   * Waits up to {@code timeoutMillis} for the program's first stdout bytes, without ever
   * blocking on the pipe (a program that does not offer may be waiting for its input). Bytes
   * that are not the hello line stay unread.
   */
  static Offer awaitOffer(DataInputStream stdout, Process process, long timeoutMillis)
      throws IOException {
    byte[] got = new byte[HELLO.length];
    int have = 0;
    stdout.mark(HELLO.length + 1);
    long deadline = System.nanoTime() + Math.max(0, timeoutMillis) * 1_000_000L;
    while (have < HELLO.length) {
      int available = stdout.available();
      if (available > 0) {
        int n = stdout.read(got, have, Math.min(available, HELLO.length - have));
        if (n < 0) {
          stdout.reset();
          return Offer.NONE;
        }
        have += n;
        if (!Arrays.equals(Arrays.copyOf(got, have), Arrays.copyOf(HELLO, have))) {
          stdout.reset();
          return Offer.NONE;
        }
        continue;
      }
      if (process != null && !process.isAlive() && stdout.available() == 0) {
        // It exited: everything it wrote is in the pipe, and there is nothing more.
        stdout.reset();
        return Offer.NONE;
      }
      if (System.nanoTime() - deadline > 0) {
        stdout.reset();
        return Offer.LATE;
      }
      try {
        Thread.sleep(1);
      } catch (InterruptedException e) {
        Thread.currentThread().interrupt();
        stdout.reset();
        return Offer.LATE;
      }
    }
    return Offer.HELLO;
  }

  /** The process id, or 0 if this Java cannot tell it ({@code Process.pid()} is Java 9+). */
  private static int pid(Process process) {
    if (process == null) {
      return 0;
    }
    try {
      Method pid = Process.class.getMethod("pid");
      long value = (Long) pid.invoke(process);
      return value > 0 && value <= Integer.MAX_VALUE ? (int) value : 0;
    } catch (ReflectiveOperationException | RuntimeException e) {
      return 0;
    }
  }

  /**
   * Reads and drops what the program writes to stdout while its output goes through the ring
   * (a stray print), so that it never blocks on a full pipe; says so once.
   */
  private static void drain(InputStream stdout) {
    Thread thread = new Thread(() -> {
      long stray = 0;
      byte[] buffer = new byte[8192];
      try {
        for (int n; (n = stdout.read(buffer)) >= 0; ) {
          stray += n;
        }
      } catch (IOException e) {
        // The program is gone; nothing to drain.
      }
      if (stray > 0) {
        LOG.warn("sluice: the streaming program wrote {} bytes to stdout while its output "
            + "went through shared memory; they were dropped", stray);
      }
    }, "sluice-shm-stdout");
    thread.setDaemon(true);
    thread.start();
  }

  /** Frees the region once both directions are closed. */
  private synchronized void release() throws IOException {
    if (--open == 0) {
      ShmNative.shmClose(session);
    }
  }

  /**
   * The program's input: batches of up to {@link #BATCH} bytes into the input ring. Closing it
   * closes the ring and then the program's stdin, as Hadoop closes stdin at the end of input.
   */
  final class RingOutputStream extends OutputStream {
    private final ByteBuffer batch = ByteBuffer.allocateDirect(BATCH);
    private boolean closed;

    @Override
    public void write(int b) throws IOException {
      if (!batch.hasRemaining()) {
        send();
      }
      batch.put((byte) b);
    }

    @Override
    public void write(byte[] bytes, int offset, int length) throws IOException {
      while (length > 0) {
        if (!batch.hasRemaining()) {
          send();
        }
        int n = Math.min(length, batch.remaining());
        batch.put(bytes, offset, n);
        offset += n;
        length -= n;
      }
    }

    @Override
    public void flush() throws IOException {
      send();
    }

    private void send() throws IOException {
      if (closed) {
        throw new IOException("sluice: the streaming program's input is closed");
      }
      int length = batch.position();
      if (length > 0) {
        // Cleared first: a failed batch is not sent again by the close that follows.
        batch.clear();
        ShmNative.shmWrite(session, batch, length);
      }
    }

    @Override
    public void close() throws IOException {
      if (closed) {
        return;
      }
      try {
        send();
      } finally {
        closed = true;
        try {
          ShmNative.shmCloseInput(session);
        } finally {
          try {
            stdin.close();
          } finally {
            release();
          }
        }
      }
    }
  }

  /** The program's output, read from the output ring a batch per call. */
  final class RingInputStream extends InputStream {
    private final ByteBuffer batch = (ByteBuffer) ByteBuffer.allocateDirect(BATCH).limit(0);
    private boolean ended;
    private boolean closed;

    private boolean fill() throws IOException {
      if (batch.hasRemaining()) {
        return true;
      }
      if (ended || closed) {
        return false;
      }
      batch.clear();
      int n = ShmNative.shmRead(session, batch);
      if (n < 0) {
        ended = true;
        batch.limit(0);
        return false;
      }
      batch.position(0);
      batch.limit(n);
      return true;
    }

    @Override
    public int read() throws IOException {
      return fill() ? batch.get() & 0xff : -1;
    }

    @Override
    public int read(byte[] bytes, int offset, int length) throws IOException {
      if (length == 0) {
        return 0;
      }
      if (!fill()) {
        return -1;
      }
      int n = Math.min(length, batch.remaining());
      batch.get(bytes, offset, n);
      return n;
    }

    @Override
    public int available() {
      return batch.remaining();
    }

    @Override
    public void close() throws IOException {
      if (!closed) {
        closed = true;
        release();
      }
    }
  }

  /**
   * The program's stdout, minus a first line equal to the hello line: a program whose offer
   * came after the wait ran out reads a record, not the attach line, first and stays on
   * pipes; its hello must not become output.
   */
  static final class HelloSkipper extends FilterInputStream {
    private boolean checked;

    HelloSkipper(InputStream in) {
      super(in);
    }

    private void check() throws IOException {
      if (checked) {
        return;
      }
      checked = true;
      in.mark(HELLO.length + 1);
      byte[] got = new byte[HELLO.length];
      int have = 0;
      while (have < HELLO.length) {
        int n = in.read(got, have, HELLO.length - have);
        if (n < 0) {
          break;
        }
        have += n;
        if (!Arrays.equals(Arrays.copyOf(got, have), Arrays.copyOf(HELLO, have))) {
          break;
        }
      }
      if (have < HELLO.length || !Arrays.equals(got, HELLO)) {
        in.reset();
      }
    }

    @Override
    public int read() throws IOException {
      check();
      return in.read();
    }

    @Override
    public int read(byte[] bytes, int offset, int length) throws IOException {
      check();
      return in.read(bytes, offset, length);
    }

    @Override
    public int available() throws IOException {
      return checked ? in.available() : 0;
    }
  }

  /** The fields of Hadoop's {@code PipeMapRed} the channel needs. */
  private static final class Fields {
    private final Field stdin;
    private final Field stdout;
    private final Field process;

    private Fields(Field stdin, Field stdout, Field process) {
      this.stdin = stdin;
      this.stdout = stdout;
      this.process = process;
    }

    /** The fields, or null if this Hadoop has other ones. */
    static Fields find() {
      try {
        Field stdin = PipeMapRed.class.getDeclaredField("clientOut_");
        Field stdout = PipeMapRed.class.getDeclaredField("clientIn_");
        Field process = PipeMapRed.class.getDeclaredField("sim");
        for (Field f : new Field[] {stdin, stdout, process}) {
          f.setAccessible(true);
        }
        if (stdin.getType() != DataOutputStream.class
            || stdout.getType() != DataInputStream.class
            || process.getType() != Process.class) {
          return null;
        }
        return new Fields(stdin, stdout, process);
      } catch (ReflectiveOperationException | RuntimeException e) {
        LOG.warn("sluice: shared-memory streaming is off: Hadoop's PipeMapRed is not as "
            + "expected ({})", e.toString());
        return null;
      }
    }

    Process process(PipeMapRed pipeMapRed) {
      try {
        return (Process) process.get(pipeMapRed);
      } catch (IllegalAccessException e) {
        return null;
      }
    }

    void setStdin(PipeMapRed pipeMapRed, DataOutputStream stream) throws IOException {
      set(stdin, pipeMapRed, stream);
    }

    void setStdout(PipeMapRed pipeMapRed, DataInputStream stream) throws IOException {
      set(stdout, pipeMapRed, stream);
    }

    private static void set(Field field, PipeMapRed pipeMapRed, Object value) throws IOException {
      try {
        field.set(pipeMapRed, value);
      } catch (IllegalAccessException e) {
        throw new IOException("sluice: cannot set PipeMapRed." + field.getName(), e);
      }
    }
  }
}
