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
      int minSpillsForCombine, String spillParent) throws java.io.IOException;

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

  /** Panics on the native side with {@code message}: the test of panic handling. */
  static native void panicForTest(String message) throws java.io.IOException;
}
