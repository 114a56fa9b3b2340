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
  private final BatchRecords records = new BatchRecords();
  private byte[] batch = new byte[NativeMapOutput.CHUNK];
  private long read;
  private boolean ended;

  NativeMergeIterator(NativeMergeManager<?, ?> merger, long total) {
    this.merger = merger;
    this.total = total;
  }

  @Override
  public DataInputBuffer getKey() {
    return records.getKey();
  }

  @Override
  public DataInputBuffer getValue() {
    return records.getValue();
  }

  @Override
  public boolean next() throws IOException {
    if (records.done() && !fill()) {
      return false;
    }
    if (!records.next()) {
      return false;
    }
    read++;
    if ((read & 0xFFF) == 0 && total > 0) {
      progress.set(Math.min(1f, (float) read / total));
    }
    return true;
  }

  /** The next non-empty batch; false at the end of the stream. */
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
    records.reset(batch, n);
    return true;
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
