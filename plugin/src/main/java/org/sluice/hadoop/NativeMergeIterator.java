package org.sluice.hadoop;

import java.io.IOException;

import org.apache.hadoop.io.DataInputBuffer;
import org.apache.hadoop.mapred.RawKeyValueIterator;
import org.apache.hadoop.util.Progress;

/**
 * The reducer's input: the native merge's records, a batch of about 1 MB per JNI call, while
 * the library merges the next batch. Keys and values are views into the current batch.
 */
final class NativeMergeIterator implements RawKeyValueIterator {
  private final NativeMergeManager<?, ?> merger;
  private final long total;
  private final Progress progress = new Progress();
  private final DataInputBuffer key = new DataInputBuffer();
  private final DataInputBuffer value = new DataInputBuffer();
  private byte[] batch = new byte[NativeMapOutput.CHUNK];
  private int length;
  private int at;
  private long read;
  private boolean ended;

  NativeMergeIterator(NativeMergeManager<?, ?> merger, long total) {
    this.merger = merger;
    this.total = total;
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
    if (at == length && !fill()) {
      return false;
    }
    int klen = readInt(at);
    int vlen = readInt(at + 4);
    if (klen < 0 || vlen < 0 || (long) at + 8 + klen + vlen > length) {
      throw new IOException("sluice: malformed merged batch at byte " + at);
    }
    key.reset(batch, at + 8, klen);
    value.reset(batch, at + 8 + klen, vlen);
    at += 8 + klen + vlen;
    read++;
    if ((read & 0xFFF) == 0 && total > 0) {
      progress.set(Math.min(1f, (float) read / total));
    }
    return true;
  }

  /** The next batch; false at the end of the stream. */
  private boolean fill() throws IOException {
    if (ended) {
      return false;
    }
    int n = merger.next(batch);
    if (n < 0) {
      // A record larger than the buffer: a buffer of its size, and the same batch again.
      batch = new byte[-n];
      n = merger.next(batch);
    }
    if (n <= 0) {
      ended = true;
      progress.complete();
      merger.release();
      return false;
    }
    length = n;
    at = 0;
    return true;
  }

  private int readInt(int i) {
    return ((batch[i] & 0xFF) << 24) | ((batch[i + 1] & 0xFF) << 16)
        | ((batch[i + 2] & 0xFF) << 8) | (batch[i + 3] & 0xFF);
  }

  @Override
  public void close() {
    merger.release();
  }

  @Override
  public Progress getProgress() {
    return progress;
  }
}
