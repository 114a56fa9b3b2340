package org.sluice.hadoop;

import java.io.File;
import java.io.IOException;
import java.nio.ByteBuffer;
import java.util.HashMap;
import java.util.Map;

import org.apache.hadoop.fs.FileSystem;
import org.apache.hadoop.fs.Path;
import org.apache.hadoop.fs.RawLocalFileSystem;
import org.apache.hadoop.fs.permission.FsPermission;
import org.apache.hadoop.io.BooleanWritable;
import org.apache.hadoop.io.ByteWritable;
import org.apache.hadoop.io.BytesWritable;
import org.apache.hadoop.io.DataOutputBuffer;
import org.apache.hadoop.io.IntWritable;
import org.apache.hadoop.io.LongWritable;
import org.apache.hadoop.io.NullWritable;
import org.apache.hadoop.io.RawComparator;
import org.apache.hadoop.io.Text;
import org.apache.hadoop.io.VIntWritable;
import org.apache.hadoop.io.VLongWritable;
import org.apache.hadoop.io.WritableComparator;
import org.apache.hadoop.io.compress.DefaultCodec;
import org.apache.hadoop.io.serializer.SerializationFactory;
import org.apache.hadoop.io.serializer.Serializer;
import org.apache.hadoop.io.serializer.WritableSerialization;
import org.apache.hadoop.mapred.Counters;
import org.apache.hadoop.mapred.IndexRecord;
import org.apache.hadoop.mapred.JobConf;
import org.apache.hadoop.mapred.MapOutputCollector;
import org.apache.hadoop.mapred.MapOutputFile;
import org.apache.hadoop.mapred.MapTask;
import org.apache.hadoop.mapred.OutputCollector;
import org.apache.hadoop.mapred.Task;
import org.apache.hadoop.mapred.SpillRecord;
import org.apache.hadoop.mapred.Task.TaskReporter;
import org.apache.hadoop.mapreduce.MRJobConfig;
import org.apache.hadoop.mapreduce.TaskCounter;
import org.apache.hadoop.util.IndexedSorter;
import org.apache.hadoop.util.QuickSort;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Hadoop's map-output collector replaced by sluice's native one: sort, combine, spill and
 * merge run in the sluice library, and the result is Hadoop's own {@code file.out} and {@code
 * file.out.index}, which the stock shuffle and reducers read.
 *
 * <p>Enable it per job or cluster-wide, with Hadoop's own buffer as the fallback:
 *
 * <pre>
 * mapreduce.job.map.output.collector.class=org.sluice.hadoop.NativeMapOutputCollector,org.apache.hadoop.mapred.MapTask$MapOutputBuffer
 * </pre>
 *
 * <p>{@link #init} throws, so that Hadoop uses the next collector of the list, for every job it
 * cannot reproduce exactly, and logs one line saying why: a key class and sort comparator not
 * among those sluice reproduces (the comparator actually configured is checked, not only the
 * key), keys or values not serialised as Writables, map output compression with a codec other
 * than {@code DefaultCodec} (and its subclass {@code DeflateCodec}), {@code GzipCodec} or {@code
 * BZip2Codec} (whose streams sluice writes as those codecs frame them), encrypted intermediate
 * data, a {@code map.sort.class} other than QuickSort, a combiner grouping comparator of its
 * own ({@code mapreduce.job.combiner.group.comparator.class}), or a native library that does
 * not load.
 *
 * <p>Combiners: Hadoop's sum combiners ({@code IntSumReducer}, {@code LongSumReducer}) run
 * natively; any other combiner runs here, in Java, called back by the library once per batch
 * of about 1 MB of whole key groups of a spill (NativeTask's design), through Hadoop's own
 * {@code CombinerRunner}. It is not run again over the final merge of several spills (a
 * combiner may run any number of times).
 *
 * <p>Records are serialised with the job's serializers into a direct buffer of 1 MB and handed
 * to the library one buffer at a time. Native memory is bounded by {@code
 * mapreduce.task.io.sort.mb}. The counters are those Hadoop's {@code MapOutputBuffer} keeps,
 * plus {@code sluice/NATIVE_COLLECTOR_TASKS}, 1 per task whose output sluice wrote.
 */
public class NativeMapOutputCollector<K, V> implements MapOutputCollector<K, V> {
  private static final Logger LOG = LoggerFactory.getLogger(NativeMapOutputCollector.class);

  /** The counter group of sluice's own counters. */
  public static final String COUNTER_GROUP = "sluice";
  /** Map tasks whose output the native collector wrote. */
  public static final String COUNTER_TASKS = "NATIVE_COLLECTOR_TASKS";

  /** Bytes of a batch: about 1 MB, one JNI call each. */
  static final int BATCH = 1 << 20;
  /** Bytes of a record's header in a batch: partition, key length, value length. */
  static final int HEADER = 12;
  /** Bytes of an index entry (three longs), for the size estimate of the index file. */
  static final int INDEX_ENTRY = 24;
  /** Permissions the shuffle needs on the output, as MapTask sets them. */
  private static final FsPermission SHUFFLE_OUTPUT_PERM = new FsPermission((short) 0640);

  /** Key codes of the library's KeyKind (crates/jni/src/keys.rs). */
  static final int KEY_TEXT = 1;
  static final int KEY_BYTES = 2;
  static final int KEY_INT = 3;
  static final int KEY_LONG = 4;
  static final int KEY_LONG_DECREASING = 5;
  static final int KEY_VLONG = 6;
  static final int KEY_BYTE = 7;
  static final int KEY_RAW = 8;

  /** Combiner codes of the library's SumCombiner. */
  static final int COMBINE_NONE = 0;
  static final int COMBINE_INT_SUM = 1;
  static final int COMBINE_LONG_SUM = 2;
  /** The job's own combiner, called back per batch ({@link #combineBatch}). */
  static final int COMBINE_JAVA = 3;

  /** The combiners the library runs natively, and the value class each needs. */
  private static final Map<String, Class<?>> SUM_COMBINERS = new HashMap<String, Class<?>>();

  /**
   * The map output codecs whose streams the library writes, and the number it knows each by
   * (0 is no compression). Checked by exact class: a subclass may frame its stream otherwise.
   */
  private static final Map<String, Integer> CODECS = new HashMap<>();

  static {
    CODECS.put("org.apache.hadoop.io.compress.DefaultCodec", 1);
    CODECS.put("org.apache.hadoop.io.compress.DeflateCodec", 1);
    CODECS.put("org.apache.hadoop.io.compress.GzipCodec", 2);
    CODECS.put("org.apache.hadoop.io.compress.BZip2Codec", 3);
  }

  /** The number of the job's map output codec (0: not compressed), or -1 for one not known. */
  static int codecNumber(JobConf job) {
    if (!job.getCompressMapOutput()) {
      return 0;
    }
    Class<?> codec = job.getMapOutputCompressorClass(DefaultCodec.class);
    return CODECS.getOrDefault(codec.getName(), -1);
  }

  static {
    SUM_COMBINERS.put("org.apache.hadoop.mapreduce.lib.reduce.IntSumReducer", IntWritable.class);
    SUM_COMBINERS.put("org.apache.hadoop.examples.WordCount$IntSumReducer", IntWritable.class);
    SUM_COMBINERS.put("org.apache.hadoop.mapreduce.lib.reduce.LongSumReducer",
        LongWritable.class);
    SUM_COMBINERS.put("org.apache.hadoop.mapred.lib.LongSumReducer", LongWritable.class);
  }

  private JobConf job;
  private TaskReporter reporter;
  private MapTask mapTask;
  private MapOutputFile mapOutputFile;
  private RawLocalFileSystem rfs;
  private int partitions;
  private Class<?> keyClass;
  private Class<?> valClass;
  private Serializer<K> keySerializer;
  private Serializer<V> valSerializer;
  private final DataOutputBuffer keyOut = new DataOutputBuffer();
  private final DataOutputBuffer valOut = new DataOutputBuffer();
  private ByteBuffer batch;
  private long handle;
  private long bytesCollected;

  private Counters.Counter mapOutputRecordCounter;
  private Counters.Counter mapOutputByteCounter;
  private Counters.Counter fileOutputByteCounter;
  private Counters.Counter spilledRecordsCounter;
  private Counters.Counter combineInputCounter;
  private Counters.Counter combineOutputCounter;
  /** The job's own combiner, when it is called back. */
  private Task.CombinerRunner<K, V> combinerRunner;
  private final BatchRecords combineInput = new BatchRecords();
  private final DataOutputBuffer combined = new DataOutputBuffer();
  // The combiner's own serializers: it runs while collect() holds a record in keyOut/valOut.
  private final DataOutputBuffer combineKeyOut = new DataOutputBuffer();
  private final DataOutputBuffer combineValOut = new DataOutputBuffer();
  private Serializer<K> combineKeySerializer;
  private Serializer<V> combineValSerializer;
  /** The output of the last {@link #combineBatch}: read by the library. */
  byte[] combineOutput = new byte[0];

  /** Why sluice cannot collect this job's output exactly as Hadoop would, or null if it can. */
  static String refusal(JobConf job) {
    if (codecNumber(job) < 0) {
      String codec = job.getMapOutputCompressorClass(DefaultCodec.class).getName();
      return "the map output codec " + codec
          + " is not one sluice writes (DefaultCodec, DeflateCodec, GzipCodec, BZip2Codec)";
    }
    if (job.getBoolean(MRJobConfig.MR_ENCRYPTED_INTERMEDIATE_DATA, false)) {
      return "intermediate data is encrypted (" + MRJobConfig.MR_ENCRYPTED_INTERMEDIATE_DATA
          + ")";
    }
    Class<?> sorter = job.getClass(MRJobConfig.MAP_SORT_CLASS, QuickSort.class,
        IndexedSorter.class);
    if (sorter != QuickSort.class) {
      return "map.sort.class is " + sorter.getName() + ", not QuickSort";
    }
    int sortmb = job.getInt(MRJobConfig.IO_SORT_MB, MRJobConfig.DEFAULT_IO_SORT_MB);
    if ((sortmb & 0x7FF) != sortmb || sortmb == 0) {
      return MRJobConfig.IO_SORT_MB + " is " + sortmb;
    }
    SerializationFactory serializations = new SerializationFactory(job);
    Class<?> key = job.getMapOutputKeyClass();
    Class<?> value = job.getMapOutputValueClass();
    if (!(serializations.getSerialization(key) instanceof WritableSerialization)
        || !(serializations.getSerialization(value) instanceof WritableSerialization)) {
      return "the map output key or value is not serialised as a Writable";
    }
    if (keyKind(job) == 0) {
      return "the sort comparator " + job.getOutputKeyComparator().getClass().getName()
          + " of key class " + key.getName() + " is not one sluice reproduces";
    }
    String combiner = combinerName(job);
    if (combiner != null && job.get(MRJobConfig.COMBINER_GROUP_COMPARATOR_CLASS) != null) {
      return "the combiner groups keys with a comparator of its own ("
          + MRJobConfig.COMBINER_GROUP_COMPARATOR_CLASS + ")";
    }
    return null;
  }

  /** The library's code for the job's key class and comparator, or 0 if it has none. */
  static int keyKind(JobConf job) {
    Class<?> key = job.getMapOutputKeyClass();
    RawComparator<?> comparator = job.getOutputKeyComparator();
    Class<?> c = comparator.getClass();
    if (key == Text.class && c == Text.Comparator.class) {
      return KEY_TEXT;
    } else if (key == BytesWritable.class && c == BytesWritable.Comparator.class) {
      return KEY_BYTES;
    } else if (key == IntWritable.class && c == IntWritable.Comparator.class) {
      return KEY_INT;
    } else if (key == LongWritable.class && c == LongWritable.Comparator.class) {
      return KEY_LONG;
    } else if (key == LongWritable.class && c == LongWritable.DecreasingComparator.class) {
      return KEY_LONG_DECREASING;
    } else if ((key == VIntWritable.class || key == VLongWritable.class)
        && c == WritableComparator.class) {
      // No raw comparator registered: the generic one compares the numbers.
      return KEY_VLONG;
    } else if (key == ByteWritable.class && c == ByteWritable.Comparator.class) {
      return KEY_BYTE;
    } else if ((key == BooleanWritable.class && c == BooleanWritable.Comparator.class)
        || (key == NullWritable.class && c == NullWritable.Comparator.class)) {
      return KEY_RAW;
    }
    return 0;
  }

  /** The combiner class Hadoop's CombinerRunner would run (old API first), or null. */
  static String combinerName(JobConf job) {
    Class<?> old = job.getCombinerClass();
    if (old != null) {
      return old.getName();
    }
    String name = job.get(MRJobConfig.COMBINE_CLASS_ATTR);
    return name == null ? null : name.trim();
  }

  @Override
  @SuppressWarnings("unchecked")
  public void init(MapOutputCollector.Context context) throws IOException, ClassNotFoundException {
    job = context.getJobConf();
    String why = refusal(job);
    if (why == null) {
      try {
        NativeLoader.load();
      } catch (IOException e) {
        why = e.getMessage();
      }
    }
    if (why != null) {
      LOG.info("sluice: native collector not used: " + why);
      throw new IOException("sluice: native collector not used: " + why);
    }
    reporter = context.getReporter();
    mapTask = context.getMapTask();
    mapOutputFile = mapTask.getMapOutputFile();
    rfs = (RawLocalFileSystem) FileSystem.getLocal(job).getRaw();
    partitions = job.getNumReduceTasks();
    keyClass = job.getMapOutputKeyClass();
    valClass = job.getMapOutputValueClass();
    SerializationFactory serializations = new SerializationFactory(job);
    keySerializer = (Serializer<K>) serializations.getSerializer(keyClass);
    keySerializer.open(keyOut);
    valSerializer = (Serializer<V>) serializations.getSerializer(valClass);
    valSerializer.open(valOut);

    mapOutputRecordCounter = reporter.getCounter(TaskCounter.MAP_OUTPUT_RECORDS);
    mapOutputByteCounter = reporter.getCounter(TaskCounter.MAP_OUTPUT_BYTES);
    fileOutputByteCounter = reporter.getCounter(TaskCounter.MAP_OUTPUT_MATERIALIZED_BYTES);
    spilledRecordsCounter = reporter.getCounter(TaskCounter.SPILLED_RECORDS);
    combineInputCounter = reporter.getCounter(TaskCounter.COMBINE_INPUT_RECORDS);
    String combiner = combinerName(job);
    int combine = COMBINE_NONE;
    if (combiner != null) {
      combineOutputCounter = reporter.getCounter(TaskCounter.COMBINE_OUTPUT_RECORDS);
      Class<?> sums = SUM_COMBINERS.get(combiner);
      if (sums == IntWritable.class && valClass == IntWritable.class) {
        combine = COMBINE_INT_SUM;
      } else if (sums == LongWritable.class && valClass == LongWritable.class) {
        combine = COMBINE_LONG_SUM;
      } else {
        combine = COMBINE_JAVA;
        // The library counts the combiner's input and output records (reported at flush);
        // the runner's own count goes to a counter of its own, not the task's.
        combinerRunner = Task.CombinerRunner.create(job, mapTask.getTaskID(),
            new Counters.Counter(), reporter, null);
        combineKeySerializer = (Serializer<K>) serializations.getSerializer(keyClass);
        combineKeySerializer.open(combineKeyOut);
        combineValSerializer = (Serializer<V>) serializations.getSerializer(valClass);
        combineValSerializer.open(combineValOut);
      }
    }

    long budget = ((long) job.getInt(MRJobConfig.IO_SORT_MB, MRJobConfig.DEFAULT_IO_SORT_MB))
        << 20;
    Path spill = mapOutputFile.getSpillFileForWrite(0, 0);
    File spillParent = rfs.pathToFile(spill).getParentFile();
    if (!spillParent.isDirectory() && !spillParent.mkdirs() && !spillParent.isDirectory()) {
      throw new IOException("sluice: cannot create " + spillParent);
    }
    handle = SluiceNative.collectorInit(partitions, keyKind(job), combine, budget,
        job.getInt(MRJobConfig.MAP_COMBINE_MIN_SPILLS, 3), spillParent.getAbsolutePath(), this);
    batch = ByteBuffer.allocateDirect(BATCH);
    LOG.info("sluice: native collector, " + partitions + " partitions, "
        + (budget >> 20) + " MB, combiner " + (combiner == null ? "none" : combiner)
        + (combine == COMBINE_JAVA ? " (called back per batch)" : ""));
  }

  @Override
  public synchronized void collect(K key, V value, int partition)
      throws IOException, InterruptedException {
    if (key.getClass() != keyClass) {
      throw new IOException("Type mismatch in key from map: expected " + keyClass.getName()
          + ", received " + key.getClass().getName());
    }
    if (value.getClass() != valClass) {
      throw new IOException("Type mismatch in value from map: expected " + valClass.getName()
          + ", received " + value.getClass().getName());
    }
    if (partition < 0 || partition >= partitions) {
      throw new IOException("Illegal partition for " + key + " (" + partition + ")");
    }
    keyOut.reset();
    keySerializer.serialize(key);
    valOut.reset();
    valSerializer.serialize(value);
    int klen = keyOut.getLength();
    int vlen = valOut.getLength();
    long need = (long) HEADER + klen + vlen;
    if (need > Integer.MAX_VALUE) {
      throw new IOException("sluice: a map output record of " + need + " bytes is too large");
    }
    if (need > batch.capacity()) {
      // A record larger than a batch travels alone in a buffer of its own.
      send();
      ByteBuffer alone = ByteBuffer.allocateDirect((int) need);
      put(alone, partition, klen, vlen);
      SluiceNative.collectorCollect(handle, alone, alone.position());
    } else {
      if (batch.remaining() < need) {
        send();
      }
      put(batch, partition, klen, vlen);
    }
    mapOutputRecordCounter.increment(1);
    mapOutputByteCounter.increment(klen + vlen);
    bytesCollected += klen + vlen;
  }

  /**
   * Runs the job's combiner over the first {@code length} bytes of {@code batch} (records of
   * whole key groups, sorted, see {@link BatchRecords}), leaving its output in {@link
   * #combineOutput}: its length. Called by the library, once per batch, while it spills.
   */
  @SuppressWarnings("unused") // called from native code
  int combineBatch(byte[] batch, int length) throws Exception {
    combineInput.reset(batch, length);
    combined.reset();
    combinerRunner.combine(combineInput, new OutputCollector<K, V>() {
      @Override
      public void collect(K key, V value) throws IOException {
        combineKeyOut.reset();
        combineKeySerializer.serialize(key);
        combineValOut.reset();
        combineValSerializer.serialize(value);
        BatchRecords.append(combined, combineKeyOut, combineValOut);
      }
    });
    combineOutput = combined.getData();
    return combined.getLength();
  }

  private void put(ByteBuffer into, int partition, int klen, int vlen) {
    into.putInt(partition).putInt(klen).putInt(vlen);
    into.put(keyOut.getData(), 0, klen).put(valOut.getData(), 0, vlen);
  }

  /** Hands the batch to the library and empties it. */
  private void send() throws IOException {
    if (batch.position() > 0) {
      SluiceNative.collectorCollect(handle, batch, batch.position());
      batch.clear();
    }
  }

  @Override
  public synchronized void flush()
      throws IOException, InterruptedException, ClassNotFoundException {
    try {
      writeOutput();
    } finally {
      // The native memory and spill files go now, whether the output was written or not.
      release();
    }
  }

  /** Sends the last batch, has the library write file.out, writes the index, counts. */
  private void writeOutput() throws IOException {
    send();
    Path output = mapOutputFile.getOutputFileForWrite(bytesCollected + partitions * 150L);
    Path index = mapOutputFile.getOutputIndexFileForWrite((long) partitions * INDEX_ENTRY);
    File outputFile = rfs.pathToFile(output);
    File parent = outputFile.getParentFile();
    if (!parent.isDirectory() && !parent.mkdirs() && !parent.isDirectory()) {
      throw new IOException("sluice: cannot create " + parent);
    }
    long[] report =
        SluiceNative.collectorFlush(handle, outputFile.getAbsolutePath(), codecNumber(job));
    SpillRecord spillRecord = new SpillRecord(partitions);
    for (int p = 0; p < partitions; p++) {
      spillRecord.putIndex(
          new IndexRecord(report[3 * p], report[3 * p + 1], report[3 * p + 2]), p);
    }
    spillRecord.writeToFile(index, job);
    int at = 3 * partitions;
    spilledRecordsCounter.increment(report[at]);
    if (combineOutputCounter != null) {
      combineInputCounter.increment(report[at + 1]);
      combineOutputCounter.increment(report[at + 2]);
    }
    mapTask.getSortPhase().complete();
    fileOutputByteCounter.increment(rfs.getFileStatus(output).getLen());
    if (!SHUFFLE_OUTPUT_PERM.equals(SHUFFLE_OUTPUT_PERM.applyUMask(FsPermission.getUMask(job)))) {
      rfs.setPermission(output, SHUFFLE_OUTPUT_PERM);
      rfs.setPermission(index, SHUFFLE_OUTPUT_PERM);
    }
    reporter.getCounter(COUNTER_GROUP, COUNTER_TASKS).increment(1);
    LOG.info("sluice: map output written natively: " + report[at + 3] + " runs, "
        + report[at] + " spilled records, peak native memory " + report[at + 4] + " bytes");
  }

  @Override
  public synchronized void close() throws IOException {
    release();
  }

  /** Frees the native collector (once); the library is only ever called under this lock. */
  private void release() throws IOException {
    if (handle != 0) {
      long h = handle;
      handle = 0;
      SluiceNative.collectorClose(h);
    }
  }
}
