package org.sluice.hadoop;

import java.io.File;
import java.io.IOException;
import java.util.Collections;
import java.util.IdentityHashMap;
import java.util.Set;

import org.apache.hadoop.fs.FileSystem;
import org.apache.hadoop.fs.Path;
import org.apache.hadoop.fs.RawLocalFileSystem;
import org.apache.hadoop.io.compress.CompressionCodec;
import org.apache.hadoop.mapred.Counters;
import org.apache.hadoop.mapred.JobConf;
import org.apache.hadoop.mapred.RawKeyValueIterator;
import org.apache.hadoop.mapred.Reporter;
import org.apache.hadoop.mapred.ShuffleConsumerPlugin;
import org.apache.hadoop.mapreduce.TaskAttemptID;
import org.apache.hadoop.mapreduce.task.reduce.MapOutput;
import org.apache.hadoop.mapreduce.task.reduce.MergeManager;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The reduce side's merge in native memory: every fetched map output becomes a segment of the
 * library's merge (in memory while the budget allows, else in a native spill file), and
 * {@link #close} returns the merged stream. It never makes a fetcher wait: what does not fit
 * goes to disk.
 *
 * <p>Locking: segments begin, commit and abort under this object's lock (so they never race
 * with closing); a fetcher feeds its own segment without it.
 */
final class NativeMergeManager<K, V> implements MergeManager<K, V> {
  private static final Logger LOG = LoggerFactory.getLogger(NativeMergeManager.class);

  final JobConf job;
  final CompressionCodec codec;
  private final Reporter reporter;
  private final Counters.Counter spilledRecords;
  private final Counters.Counter mergedMapOutputs;
  private final long budget;
  private long handle;
  /** Segments begun and neither committed nor aborted yet. */
  private final Set<NativeMapOutput<K, V>> open =
      Collections.newSetFromMap(new IdentityHashMap<NativeMapOutput<K, V>, Boolean>());

  NativeMergeManager(ShuffleConsumerPlugin.Context context, long budget) throws IOException {
    this.job = context.getJobConf();
    this.codec = context.getCodec();
    this.reporter = context.getReporter();
    this.spilledRecords = context.getSpilledRecordsCounter();
    this.mergedMapOutputs = context.getMergedMapOutputsCounter();
    this.budget = budget;
    // Spill files go where Hadoop's reduce-side merge puts its own: the attempt's output
    // directory on the task's local disks, removed with the attempt.
    Path where = context.getMapOutputFile()
        .getInputFileForWrite(context.getReduceId().getTaskID(), 0);
    RawLocalFileSystem rfs = (RawLocalFileSystem) FileSystem.getLocal(job).getRaw();
    File parent = rfs.pathToFile(where).getParentFile();
    if (!parent.isDirectory() && !parent.mkdirs() && !parent.isDirectory()) {
      throw new IOException("sluice: cannot create " + parent);
    }
    handle = SluiceNative.mergeInit(NativeMapOutputCollector.keyKind(job), budget,
        parent.getAbsolutePath());
    LOG.info("sluice: native merge, " + (budget >> 20) + " MB, spills under " + parent);
  }

  @Override
  public void waitForResource() {
    // Never waits: a segment that does not fit in memory goes to a native spill file.
  }

  @Override
  public synchronized MapOutput<K, V> reserve(TaskAttemptID mapId, long requestedSize,
      int fetcher) throws IOException {
    if (handle == 0) {
      throw new IOException("sluice: the native merge is closed");
    }
    NativeMapOutput<K, V> output = new NativeMapOutput<K, V>(this, mapId, requestedSize,
        SluiceNative.mergeSegmentBegin(handle, requestedSize));
    open.add(output);
    return output;
  }

  /** Adds {@code output}'s fully fed segment to the merge. */
  synchronized void commit(NativeMapOutput<K, V> output, long segment) throws IOException {
    open.remove(output);
    if (handle == 0) {
      SluiceNative.mergeSegmentAbort(segment);
      throw new IOException("sluice: the native merge is closed");
    }
    SluiceNative.mergeSegmentCommit(handle, segment);
  }

  /** Frees {@code output}'s segment. */
  synchronized void abort(NativeMapOutput<K, V> output, long segment) {
    open.remove(output);
    try {
      SluiceNative.mergeSegmentAbort(segment);
    } catch (IOException e) {
      LOG.warn("sluice: freeing an aborted map output failed", e);
    }
  }

  @Override
  public synchronized RawKeyValueIterator close() throws Throwable {
    // Outputs still open are those a fetcher that outlived Hadoop's shutdown of fetchers is
    // still reading: aborting waits for its chunk in progress (NativeMapOutput.feed).
    for (NativeMapOutput<K, V> output : open.toArray(new NativeMapOutput[0])) {
      output.abort();
    }
    long[] report = SluiceNative.mergeFinish(handle);
    long segments = report[0];
    long records = report[1];
    mergedMapOutputs.increment(segments);
    spilledRecords.increment(report[4]);
    reporter.incrCounter(NativeMapOutputCollector.COUNTER_GROUP, NativeShuffle.COUNTER_TASKS, 1);
    reporter.incrCounter(NativeMapOutputCollector.COUNTER_GROUP,
        NativeShuffle.COUNTER_IN_MEMORY, report[2]);
    reporter.incrCounter(NativeMapOutputCollector.COUNTER_GROUP,
        NativeShuffle.COUNTER_DISK_BYTES, report[3]);
    LOG.info("sluice: merging natively: " + segments + " map outputs, " + records
        + " records, " + report[2] + " in memory, " + report[3] + " bytes on disk, peak "
        + report[5] + " of " + budget + " bytes");
    return new NativeMergeIterator(this, records);
  }

  /** The next merged batch into {@code batch} (see {@link SluiceNative#mergeNext}). */
  synchronized int next(byte[] batch) throws IOException {
    if (handle == 0) {
      throw new IOException("sluice: the native merge is closed");
    }
    return SluiceNative.mergeNext(handle, batch);
  }

  /** Frees the native merge (once): its thread, memory and spill files. */
  synchronized void release() {
    if (handle != 0) {
      long h = handle;
      handle = 0;
      try {
        SluiceNative.mergeClose(h);
      } catch (IOException e) {
        LOG.warn("sluice: closing the native merge failed", e);
      }
    }
  }
}
