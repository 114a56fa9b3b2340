package org.sluice.hadoop.streaming;

import java.io.IOException;
import java.nio.ByteBuffer;

/**
 * The native side of a streaming program's shared-memory channel ({@code crates/jni/src/entry.rs},
 * {@code crates/jni/src/streaming.rs}). Every failure is an {@link IOException}; a handle is
 * used by the writer's thread and the reader's thread at once, each for its own direction, and
 * closed once after both are done.
 */
final class ShmNative {
  private ShmNative() {}

  /** A region for the program with process id {@code pid}; {@code outputRing} 0 for none. */
  static native long shmCreate(int pid, long inputRing, long outputRing) throws IOException;

  /** The line that tells the program where the region is. */
  static native byte[] shmAttachLine(long session) throws IOException;

  /** Waits until the program has attached; afterwards no path opens the region. */
  static native void shmAwaitAttach(long session, long timeoutMillis) throws IOException;

  /** The first {@code length} bytes of a direct buffer into the program's input ring. */
  static native void shmWrite(long session, ByteBuffer batch, int length) throws IOException;

  /** The program sees the end of its input. */
  static native void shmCloseInput(long session) throws IOException;

  /** The program's output into a direct buffer: the byte count, or -1 at its end. */
  static native int shmRead(long session, ByteBuffer into) throws IOException;

  /** Frees the region; a program still running is told the task gave up. */
  static native void shmClose(long session) throws IOException;
}
