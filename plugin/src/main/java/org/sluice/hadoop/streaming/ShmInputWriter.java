package org.sluice.hadoop.streaming;

import java.io.IOException;
import org.apache.hadoop.conf.Configuration;
import org.apache.hadoop.mapred.TextInputFormat;
import org.apache.hadoop.streaming.PipeMapRed;
import org.apache.hadoop.streaming.PipeMapper;
import org.apache.hadoop.streaming.io.InputWriter;
import org.apache.hadoop.streaming.io.TextInputWriter;

/**
 * Hadoop's {@link TextInputWriter} for a streaming program that may take its records through
 * shared memory: before the first record, {@link ShmChannel} does the handshake of {@code
 * docs/shm-protocol.md} on the program's pipes. A program that links a sluice client offers;
 * it then reads its records from the input ring (and writes its output into the output ring
 * when the direction's reader is {@link ShmOutputReader}). Any other program gets its records
 * on stdin, exactly as with {@code -io text}.
 *
 * <p>Hadoop's {@code PipeMapper} drops {@code TextInputFormat}'s byte-offset keys only when the
 * writer is its own {@code TextInputWriter}; this writer applies the same rule itself
 * ({@code stream.map.input.ignoreKey}, by default true exactly for {@code TextInputFormat}), so
 * a mapper sees the same lines either way.
 */
public class ShmInputWriter extends InputWriter<Object, Object> {
  private final TextInputWriter text = new TextInputWriter();
  private boolean ignoreKey;

  @Override
  public void initialize(PipeMapRed pipeMapRed) throws IOException {
    super.initialize(pipeMapRed);
    Configuration conf = pipeMapRed.getConfiguration();
    boolean map = pipeMapRed instanceof PipeMapper;
    if (map) {
      String format =
          conf.getClass("mapred.input.format.class", TextInputFormat.class).getCanonicalName();
      ignoreKey = conf.getBoolean("stream.map.input.ignoreKey",
          TextInputFormat.class.getCanonicalName().equals(format));
    }
    ShmChannel.setUp(pipeMapRed, map);
    // After the set-up: the text writer takes whatever output stream the program now has.
    text.initialize(pipeMapRed);
  }

  @Override
  public void writeKey(Object key) throws IOException {
    if (!ignoreKey) {
      text.writeKey(key);
    }
  }

  @Override
  public void writeValue(Object value) throws IOException {
    text.writeValue(value);
  }
}
