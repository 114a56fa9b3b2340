package org.sluice.hadoop;

import java.io.IOException;

import org.apache.hadoop.io.DataInputBuffer;
import org.apache.hadoop.io.DataOutputBuffer;
import org.apache.hadoop.mapred.RawKeyValueIterator;
import org.apache.hadoop.util.Progress;

/**
 * A batch of records as the library and Java hand them to each other: {@code int keyLength,
 * int valueLength, key, value}, lengths big-endian, keys and values serialised as the job
 * serialises them. Read as a {@link RawKeyValueIterator} whose keys and values are views into
 * the batch; {@link #append} writes one.
 */
final class BatchRecords implements RawKeyValueIterator {
  private final DataInputBuffer key = new DataInputBuffer();
  private final DataInputBuffer value = new DataInputBuffer();
  private final Progress progress = new Progress();
  private byte[] batch = new byte[0];
  private int length;
  private int at;

  /** Reads the first {@code length} bytes of {@code batch} from the start. */
  void reset(byte[] batch, int length) {
    this.batch = batch;
    this.length = length;
    this.at = 0;
  }

  /** Whether every record of the batch was read. */
  boolean done() {
    return at == length;
  }

  @Override
  public DataInputBuffer getKey() {
    return key;
  }

  @Override
  public DataInputBuffer getValue() {
    return value;
  }

  @Override
  public boolean next() throws IOException {
    if (at == length) {
      return false;
    }
    int klen = readInt(at);
    int vlen = readInt(at + 4);
    if (klen < 0 || vlen < 0 || (long) at + 8 + klen + vlen > length) {
      throw new IOException("sluice: malformed record batch at byte " + at);
    }
    key.reset(batch, at + 8, klen);
    value.reset(batch, at + 8 + klen, vlen);
    at += 8 + klen + vlen;
    return true;
  }

  private int readInt(int i) {
    return ((batch[i] & 0xFF) << 24) | ((batch[i + 1] & 0xFF) << 16)
        | ((batch[i + 2] & 0xFF) << 8) | (batch[i + 3] & 0xFF);
  }

  @Override
  public void close() {}

  @Override
  public Progress getProgress() {
    return progress;
  }

  /** Appends one record, serialised key and value, to {@code out}. */
  static void append(DataOutputBuffer out, DataOutputBuffer key, DataOutputBuffer value)
      throws IOException {
    out.writeInt(key.getLength());
    out.writeInt(value.getLength());
    out.write(key.getData(), 0, key.getLength());
    out.write(value.getData(), 0, value.getLength());
  }
}
