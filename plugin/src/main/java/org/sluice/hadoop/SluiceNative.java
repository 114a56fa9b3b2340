package org.sluice.hadoop;

import java.nio.ByteBuffer;

/**
 * The native methods of the sluice library (crates/jni, {@code src/entry.rs}). Every failure
 * on the native side, a panic included, arrives here as an {@link java.io.IOException} carrying
 * its message. Load the library ({@link NativeLoader#load()}) before calling any.
 */
final class SluiceNative {
  private SluiceNative() {}

  /**
   * A new collector: its handle. {@code keyKind} and {@code combiner} are the codes of {@link
   * NativeMapOutputCollector}; {@code budget} is io.sort.mb in bytes; spill files go into a
   * private directory made under {@code spillParent}.
   */
  static native long collectorInit(int partitions, int keyKind, int combiner, long budget,
      int minSpillsForCombine, String spillParent, Object collector) throws java.io.IOException;

  /** Hands over the first {@code length} bytes of the direct buffer {@code batch}. */
  static native void collectorCollect(long handle, ByteBuffer batch, int length)
      throws java.io.IOException;

  /**
   * Writes file.out at {@code outputPath}, each partition's segment compressed with the codec
   * numbered {@code codec} (0: none; see {@link NativeMapOutputCollector#codecNumber}): returns
   * per partition its start offset, raw length and part length, then SPILLED_RECORDS,
   * COMBINE_INPUT_RECORDS, COMBINE_OUTPUT_RECORDS, the number of runs and the peak native memory
   * in bytes.
   */
  static native long[] collectorFlush(long handle, String outputPath, int codec)
      throws java.io.IOException;

  /** Frees a collector and its spill directory. */
  static native void collectorClose(long handle) throws java.io.IOException;

  /**
   * A new reduce-side merge: its handle. {@code keyKind} is a key code of {@link
   * NativeMapOutputCollector}; at most {@code budget} bytes of native memory hold segments and
   * merge them; segments that do not fit go into a private directory made under {@code
   * spillParent}.
   */
  static native long mergeInit(int keyKind, long budget, String spillParent)
      throws java.io.IOException;

  /** A new segment of the merge, {@code rawLength} bytes of IFile stream: its handle. */
  static native long mergeSegmentBegin(long merge, long rawLength) throws java.io.IOException;

  /** The next {@code length} bytes of a segment's checked, decompressed IFile stream. */
  static native void mergeSegmentFeed(long segment, byte[] chunk, int length)
      throws java.io.IOException;

  /** Adds a fully fed segment to the merge; the segment's handle is gone afterwards. */
  static native void mergeSegmentCommit(long merge, long segment) throws java.io.IOException;

  /** Frees a segment that will not be committed. */
  static native void mergeSegmentAbort(long segment) throws java.io.IOException;

  /**
   * Starts the final merge: returns the segments, records, segments kept in memory, bytes and
   * records written to local disk, and the peak native memory in bytes.
   */
  static native long[] mergeFinish(long merge) throws java.io.IOException;

  /**
   * Copies the next merged batch (records of int key length, int value length, key, value)
   * into {@code batch}: its length, 0 at the end, or minus its length if {@code batch} is too
   * small for it.
   */
  static native int mergeNext(long merge, byte[] batch) throws java.io.IOException;

  /** Frees a merge, its thread, memory and spill files. */
  static native void mergeClose(long merge) throws java.io.IOException;

  /** Panics on the native side with {@code message}: the test of panic handling. */
  static native void panicForTest(String message) throws java.io.IOException;
}
