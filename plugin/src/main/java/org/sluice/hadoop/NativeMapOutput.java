package org.sluice.hadoop;

import java.io.IOException;
import java.io.InputStream;

import org.apache.hadoop.io.IOUtils;
import org.apache.hadoop.io.compress.CodecPool;
import org.apache.hadoop.io.compress.Decompressor;
import org.apache.hadoop.mapred.IFileInputStream;
import org.apache.hadoop.mapred.Reporter;
import org.apache.hadoop.mapreduce.TaskAttemptID;
import org.apache.hadoop.mapreduce.task.reduce.MapHost;
import org.apache.hadoop.mapreduce.task.reduce.MapOutput;
import org.apache.hadoop.mapreduce.task.reduce.ShuffleClientMetrics;

/**
 * One fetched map output on its way into the native merge: its bytes are checked (IFile's
 * CRC32, by Hadoop's {@link IFileInputStream}) and decompressed (the job's codec) in Java as
 * Hadoop's in-memory outputs are, and handed to the library about 1 MB per call.
 */
final class NativeMapOutput<K, V> extends MapOutput<K, V> {
  /** Bytes handed to the library per call. */
  static final int CHUNK = 1 << 20;

  /** Each fetcher thread's chunk buffer, reused from one map output to the next. */
  private static final ThreadLocal<byte[]> BUFFERS = new ThreadLocal<byte[]>() {
    @Override
    protected byte[] initialValue() {
      return new byte[CHUNK];
    }
  };

  private final NativeMergeManager<K, V> merger;
  private long segment;

  NativeMapOutput(NativeMergeManager<K, V> merger, TaskAttemptID mapId, long size,
      long segment) {
    super(mapId, size, true);
    this.merger = merger;
    this.segment = segment;
  }

  @Override
  public void shuffle(MapHost host, InputStream input, long compressedLength,
      long decompressedLength, ShuffleClientMetrics metrics, Reporter reporter)
      throws IOException {
    InputStream in = new IFileInputStream(input, compressedLength, merger.job);
    Decompressor decompressor = null;
    if (merger.codec != null) {
      decompressor = CodecPool.getDecompressor(merger.codec);
      decompressor.reset();
      in = merger.codec.createInputStream(in, decompressor);
    }
    try {
      byte[] chunk = BUFFERS.get();
      long left = decompressedLength;
      while (left > 0) {
        int n = (int) Math.min(chunk.length, left);
        IOUtils.readFully(in, chunk, 0, n);
        feed(chunk, n);
        left -= n;
        metrics.inputBytes(n);
        reporter.progress();
      }
      // Reading past the end makes the checksum stream check its CRC32 and the decompressor
      // take any trailing bytes, as Hadoop's own map outputs do.
      if (in.read() >= 0) {
        throw new IOException("Unexpected extra bytes from input stream for " + getMapId());
      }
    } finally {
      if (decompressor != null) {
        CodecPool.returnDecompressor(decompressor);
      }
    }
  }

  @Override
  public void commit() throws IOException {
    long s = take();
    if (s != 0) {
      merger.commit(this, s);
    }
  }

  @Override
  public void abort() {
    long s = take();
    if (s != 0) {
      merger.abort(this, s);
    }
  }

  /**
   * Hands a chunk to the segment under the lock {@link #take} holds: a merge closed while this
   * fetcher still reads (Hadoop's shutdown of fetchers waits 5 s at most) aborts the segment
   * only between two chunks, never during one, and the next chunk fails the fetch.
   */
  private synchronized void feed(byte[] chunk, int n) throws IOException {
    if (segment == 0) {
      throw new IOException("sluice: the map output of " + getMapId()
          + " was aborted while it was being fetched");
    }
    SluiceNative.mergeSegmentFeed(segment, chunk, n);
  }

  /** The segment's handle, once: it is committed or aborted, never both. */
  private synchronized long take() {
    long s = segment;
    segment = 0;
    return s;
  }

  @Override
  public String getDescription() {
    return "SLUICE";
  }
}
