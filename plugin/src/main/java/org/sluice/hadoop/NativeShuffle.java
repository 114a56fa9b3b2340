package org.sluice.hadoop;

import java.io.IOException;
import org.apache.hadoop.mapred.RawKeyValueIterator;

import org.apache.hadoop.io.serializer.SerializationFactory;
import org.apache.hadoop.io.serializer.WritableSerialization;
import org.apache.hadoop.mapred.JobConf;
import org.apache.hadoop.mapred.ShuffleConsumerPlugin;
import org.apache.hadoop.mapreduce.MRJobConfig;
import org.apache.hadoop.mapreduce.task.reduce.MergeManager;
import org.apache.hadoop.mapreduce.task.reduce.Shuffle;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Hadoop's shuffle with sluice's native merge: Hadoop's own fetching is kept whole (map
 * completion events, HTTP fetches with the job token, retries, the local fetcher in local
 * mode, checksums, decompression), and the fetched map outputs go into native memory instead
 * of the Java heap and Hadoop's merges through disk. The reducer reads one merged stream.
 * When the map outputs fit in the merge's memory, the reduce side writes no intermediate data
 * to its disk at all.
 *
 * <p>Enable it per job or cluster-wide:
 *
 * <pre>
 * mapreduce.job.reduce.shuffle.consumer.plugin.class=org.sluice.hadoop.NativeShuffle
 * </pre>
 *
 * <p>A job the native merge cannot do exactly as Hadoop would is handed to Hadoop's own merge
 * (this class is Hadoop's {@link Shuffle}; only its merge is replaced), with one log line
 * saying why: a key class and sort comparator not among those sluice reproduces (the
 * comparator actually configured is checked), keys not serialised as Writables, encrypted
 * intermediate data (the native spill files would hold it in the clear), or a native library
 * that does not load.
 *
 * <p>Native memory: {@code sluice.reduce.merge.memory.mb} if set, else what Hadoop gives its
 * in-memory shuffle ({@code mapreduce.reduce.shuffle.input.buffer.percent} of the heap, or of
 * {@code mapreduce.reduce.memory.totalbytes}). Counters: Hadoop's, plus {@code
 * sluice/NATIVE_MERGE_TASKS} (1 per reduce task merged natively), {@code
 * sluice/NATIVE_MERGE_SEGMENTS_IN_MEMORY} and {@code sluice/NATIVE_MERGE_DISK_BYTES} (bytes the
 * merge wrote to local disk; each is read back once).
 */
public class NativeShuffle<K, V> extends Shuffle<K, V> {
  private static final Logger LOG = LoggerFactory.getLogger(NativeShuffle.class);

  /** Reduce tasks whose map outputs the native merge merged. */
  public static final String COUNTER_TASKS = "NATIVE_MERGE_TASKS";
  /** Map output segments the native merge kept in memory. */
  public static final String COUNTER_IN_MEMORY = "NATIVE_MERGE_SEGMENTS_IN_MEMORY";
  /** Bytes the native merge wrote to local disk. */
  public static final String COUNTER_DISK_BYTES = "NATIVE_MERGE_DISK_BYTES";
  /** The native merge's memory in MB, overriding the shuffle buffer Hadoop would use. */
  public static final String MEMORY_MB = "sluice.reduce.merge.memory.mb";

  private NativeMergeManager<K, V> nativeMerge;

  /** Why sluice cannot merge this job's map outputs exactly as Hadoop would, or null. */
  static String refusal(JobConf job) {
    if (job.getBoolean(MRJobConfig.MR_ENCRYPTED_INTERMEDIATE_DATA, false)) {
      return "intermediate data is encrypted (" + MRJobConfig.MR_ENCRYPTED_INTERMEDIATE_DATA
          + ")";
    }
    Class<?> key = job.getMapOutputKeyClass();
    if (!(new SerializationFactory(job).getSerialization(key)
        instanceof WritableSerialization)) {
      return "the map output key is not serialised as a Writable";
    }
    if (NativeMapOutputCollector.keyKind(job) == 0) {
      return "the sort comparator " + job.getOutputKeyComparator().getClass().getName()
          + " of key class " + key.getName() + " is not one sluice reproduces";
    }
    return null;
  }

  /** Bytes of native memory for the merge of {@code job}'s reduce tasks. */
  static long budget(JobConf job) {
    long mb = job.getLong(MEMORY_MB, 0);
    if (mb > 0) {
      return mb << 20;
    }
    float percent = job.getFloat(MRJobConfig.SHUFFLE_INPUT_BUFFER_PERCENT,
        MRJobConfig.DEFAULT_SHUFFLE_INPUT_BUFFER_PERCENT);
    long total = job.getLong(MRJobConfig.REDUCE_MEMORY_TOTAL_BYTES,
        Runtime.getRuntime().maxMemory());
    return Math.max(1L << 20, (long) (Math.min(total, Integer.MAX_VALUE) * percent));
  }

  @Override
  protected MergeManager<K, V> createMergeManager(ShuffleConsumerPlugin.Context context) {
    JobConf job = context.getJobConf();
    String why = refusal(job);
    if (why == null) {
      try {
        NativeLoader.load();
        nativeMerge = new NativeMergeManager<K, V>(context, budget(job));
        return nativeMerge;
      } catch (IOException e) {
        why = e.getMessage();
      }
    }
    LOG.info("sluice: native merge not used: " + why);
    return super.createMergeManager(context);
  }

  /**
   * Hadoop's shuffle; when it fails (a fetch failure beyond retries, an error in the native
   * merge), the native merge's memory, thread and spill files are freed at once: the reduce
   * task never calls {@link #close} after a failed run, and in local mode the JVM lives on.
   */
  @Override
  public RawKeyValueIterator run() throws IOException, InterruptedException {
    try {
      return super.run();
    } catch (IOException | InterruptedException | RuntimeException | Error e) {
      if (nativeMerge != null) {
        nativeMerge.release();
      }
      throw e;
    }
  }

  @Override
  public void close() {
    super.close();
    if (nativeMerge != null) {
      nativeMerge.release();
    }
  }
}
