//! Every JNI entry point of the library, in one place.
//!
//! The Java class `org.sluice.hadoop.SluiceNative` declares them as static native methods. Each
//! runs its body through [`guard`], which catches panics (`catch_unwind`) and typed errors and
//! throws them as a Java `java.io.IOException` carrying the message, so that no panic ever
//! unwinds into the JVM: the task fails with Hadoop's usual report and the JVM lives on.
//!
//! Records cross in batches (one call per direct buffer of about 1 MB), never one by one.
//!
//! A collector lives behind a `jlong` handle: the address of its `Box`, made by
//! `collectorInit` and freed by `collectorClose`. The Java side owns the handle, calls these
//! methods under the Java collector's lock (one call at a time), and zeroes its copy when
//! closing.
//!
//! A reduce task's merge lives behind a handle too (`mergeInit` to `mergeClose`), and so does
//! each map output segment being fetched into it (`mergeSegmentBegin` to `mergeSegmentCommit`
//! or `mergeSegmentAbort`). Several fetcher threads call into one merge at once, each with its
//! own segment: the merge is only ever used through shared references (it synchronises
//! inside), a segment by the one thread fetching it.
//!
//! A Hadoop Streaming program's shared-memory rings live behind a handle too (`shmCreate` to
//! `shmClose`): the task's thread writes its input, Hadoop's output thread reads its output,
//! each through a direct buffer of its own.

use std::panic::{catch_unwind, AssertUnwindSafe};

use jni::objects::{JByteBuffer, JClass, JString};
use jni::sys::{jbyteArray, jint, jlong, jlongArray};
use jni::JNIEnv;

use jni::objects::JByteArray;

use crate::collector::{NativeCollector, Settings, SumCombiner};
use crate::error::JniError;
use crate::keys::KeyKind;
use crate::merge::{MergeSettings, NativeMerge, SegmentBuilder};
use crate::streaming::StreamingSession;
use sluice_io::OutputCodec;

/// The exception class every failure is thrown as.
const EXCEPTION: &str = "java/io/IOException";

/// Runs `body`, turning its error or panic into a pending Java exception and `fallback`.
fn guard<'local, T>(
    env: &mut JNIEnv<'local>,
    fallback: T,
    body: impl FnOnce(&mut JNIEnv<'local>) -> Result<T, JniError>,
) -> T {
    let outcome = catch_unwind(AssertUnwindSafe(|| body(env)));
    let message = match outcome {
        Ok(Ok(value)) => return value,
        Ok(Err(error)) => error.to_string(),
        Err(payload) => format!(
            "sluice: native code panicked: {}",
            panic_text(payload.as_ref())
        ),
    };
    // A JNI call that failed inside the body may have left its own exception pending; it is
    // the more precise one.
    if !env.exception_check().unwrap_or(false) {
        // If even throwing fails, the JVM is out of memory and will say so itself.
        let _ = env.throw_new(EXCEPTION, message);
    }
    fallback
}

/// The message a panic carried (formatted messages included).
pub(crate) fn panic_text(payload: &(dyn std::any::Any + Send)) -> String {
    payload
        .downcast_ref::<&str>()
        .map(|s| (*s).to_string())
        .or_else(|| payload.downcast_ref::<String>().cloned())
        .unwrap_or_else(|| "a panic without a message".to_string())
}

/// The collector behind a handle.
fn collector<'a>(handle: jlong) -> Result<&'a mut NativeCollector, JniError> {
    if handle == 0 {
        return Err(JniError::Config("the collector is closed".into()));
    }
    // SAFETY: a non-zero handle is the address `collectorInit` returned from `Box::into_raw`,
    // not yet freed by `collectorClose` (the Java side zeroes its handle when it closes), and
    // the Java side calls into one collector from one thread at a time, so this is the only
    // reference to it while the call runs.
    Ok(unsafe { &mut *(handle as *mut NativeCollector) })
}

fn to_usize(value: i64, what: &str) -> Result<usize, JniError> {
    usize::try_from(value).map_err(|_| JniError::Config(format!("{what} is {value}")))
}

/// The combiner code of a job's own (Java) combiner, called back per batch.
const COMBINE_JAVA: jint = 3;

/// The job's Java combiner, called back once per batch: `int combineBatch(byte[] batch, int
/// length)` of the Java collector combines the batch's records and leaves its output in the
/// collector's `byte[] combineOutput` field, returning its length.
struct JavaCombiner {
    vm: jni::JavaVM,
    collector: jni::objects::GlobalRef,
    output: Vec<u8>,
}

impl crate::collector::BatchCombiner for JavaCombiner {
    fn combine(&mut self, batch: &[u8]) -> Result<&[u8], JniError> {
        // Spills run on the thread of the JNI call that collects or flushes, so that thread is
        // attached; a frame frees the local references each batch makes.
        let mut env = self.vm.get_env()?;
        let collector = self.collector.as_obj();
        let output = &mut self.output;
        env.with_local_frame(8, |env| -> Result<(), JniError> {
            let length = i32::try_from(batch.len())
                .map_err(|_| JniError::Config("a combiner batch over 2 GB".into()))?;
            let array = env.new_byte_array(length)?;
            // SAFETY: u8 and i8 (jbyte) have the same size and alignment.
            let signed =
                unsafe { std::slice::from_raw_parts(batch.as_ptr().cast::<i8>(), batch.len()) };
            env.set_byte_array_region(&array, 0, signed)?;
            let combined = env
                .call_method(
                    collector,
                    "combineBatch",
                    "([BI)I",
                    &[(&array).into(), length.into()],
                )?
                .i()?;
            let combined = to_usize(combined.into(), "the combiner's output length")?;
            let field = env.get_field(collector, "combineOutput", "[B")?.l()?;
            let out = JByteArray::from(field);
            output.resize(combined, 0);
            // SAFETY: as above.
            let signed = unsafe {
                std::slice::from_raw_parts_mut(output.as_mut_ptr().cast::<i8>(), output.len())
            };
            env.get_byte_array_region(&out, 0, signed)?;
            Ok(())
        })?;
        Ok(&self.output)
    }
}

/// `long collectorInit(int partitions, int keyKind, int combiner, long budget, int
/// minSpillsForCombine, String spillParent, Object collector)`: a new collector's handle.
/// `combiner` 3 is the job's own combiner, called back on `collector` (see `JavaCombiner`).
#[no_mangle]
pub extern "system" fn Java_org_sluice_hadoop_SluiceNative_collectorInit<'local>(
    mut env: JNIEnv<'local>,
    _class: JClass<'local>,
    partitions: jint,
    key_kind: jint,
    combiner: jint,
    budget: jlong,
    min_spills: jint,
    spill_parent: JString<'local>,
    java_collector: jni::objects::JObject<'local>,
) -> jlong {
    guard(&mut env, 0, |env| {
        let key = KeyKind::from_code(key_kind)
            .ok_or_else(|| JniError::Config(format!("unknown key kind {key_kind}")))?;
        let (native, callback) = if combiner == COMBINE_JAVA {
            let callback: Box<dyn crate::collector::BatchCombiner> = Box::new(JavaCombiner {
                vm: env.get_java_vm()?,
                collector: env.new_global_ref(&java_collector)?,
                output: Vec::new(),
            });
            (None, Some(callback))
        } else {
            (SumCombiner::from_code(combiner)?, None)
        };
        let settings = Settings {
            partitions: to_usize(partitions.into(), "the number of partitions")?,
            key,
            combiner: native,
            budget: to_usize(budget, "the sort buffer")?,
            min_spills_for_combine: to_usize(min_spills.into(), "the combiner's minimum spills")?,
            spill_parent: env.get_string(&spill_parent)?.into(),
        };
        let collector = NativeCollector::new(settings, callback)?;
        Ok(Box::into_raw(collector) as jlong)
    })
}

/// `void collectorCollect(long handle, ByteBuffer batch, int length)`: the first `length`
/// bytes of the direct buffer `batch` are records (see `NativeCollector::collect_batch`).
#[no_mangle]
pub extern "system" fn Java_org_sluice_hadoop_SluiceNative_collectorCollect<'local>(
    mut env: JNIEnv<'local>,
    _class: JClass<'local>,
    handle: jlong,
    batch: JByteBuffer<'local>,
    length: jint,
) {
    guard(&mut env, (), |env| {
        let collector = collector(handle)?;
        // SAFETY: the slice lives for this call only, and the Java side does not write to the
        // buffer while this call runs (the one collecting thread is in it).
        let bytes = unsafe { batch_bytes(env, &batch, length)? };
        collector.collect_batch(bytes)
    })
}

/// `long[] collectorFlush(long handle, String outputPath, int codec)`: writes `file.out`, its
/// segments compressed with `codec` (0: none, 1: `DefaultCodec`'s zlib stream, 2: `GzipCodec`,
/// 3: `BZip2Codec`), and returns, per
/// partition, start offset, raw length and part length, then `SPILLED_RECORDS`,
/// `COMBINE_INPUT_RECORDS`, `COMBINE_OUTPUT_RECORDS`, the number of runs and the peak native
/// memory in bytes.
#[no_mangle]
pub extern "system" fn Java_org_sluice_hadoop_SluiceNative_collectorFlush<'local>(
    mut env: JNIEnv<'local>,
    _class: JClass<'local>,
    handle: jlong,
    output: JString<'local>,
    codec: jint,
) -> jlongArray {
    guard(&mut env, std::ptr::null_mut(), |env| {
        let collector = collector(handle)?;
        let path: String = env.get_string(&output)?.into();
        let codec = match codec {
            0 => OutputCodec::None,
            1 => OutputCodec::Deflate,
            2 => OutputCodec::Gzip,
            3 => OutputCodec::Bzip2,
            other => return Err(JniError::Config(format!("map output codec {other}"))),
        };
        let report = collector.finish_output(&path, codec)?;
        let mut values = Vec::with_capacity(report.index.len() * 3 + 5);
        for entry in &report.index {
            values.extend([entry.start, entry.raw_length, entry.part_length]);
        }
        values.extend([
            report.spilled_records,
            report.combine_input,
            report.combine_output,
            report.runs,
            report.peak_memory,
        ]);
        let values: Vec<jlong> = values
            .into_iter()
            .map(|v| jlong::try_from(v).map_err(|_| JniError::Config(format!("{v} overflows"))))
            .collect::<Result<_, _>>()?;
        let length = i32::try_from(values.len())
            .map_err(|_| JniError::Config("too many partitions".into()))?;
        let array = env.new_long_array(length)?;
        env.set_long_array_region(&array, 0, &values)?;
        Ok(array.into_raw())
    })
}

/// `void collectorClose(long handle)`: frees the collector (and its spill directory).
#[no_mangle]
pub extern "system" fn Java_org_sluice_hadoop_SluiceNative_collectorClose<'local>(
    mut env: JNIEnv<'local>,
    _class: JClass<'local>,
    handle: jlong,
) {
    guard(&mut env, (), |_| {
        if handle != 0 {
            // SAFETY: as in `collector`: the handle came from `Box::into_raw` in
            // `collectorInit`, and the Java side closes it once, after its last use.
            drop(unsafe { Box::from_raw(handle as *mut NativeCollector) });
        }
        Ok(())
    })
}

/// The merge behind a handle.
fn merge<'a>(handle: jlong) -> Result<&'a NativeMerge, JniError> {
    if handle == 0 {
        return Err(JniError::Config("the merge is closed".into()));
    }
    // SAFETY: a non-zero handle is the address `mergeInit` returned from `Box::into_raw`, not
    // yet freed: the Java side frees it once (`mergeClose`), after every fetcher has stopped and
    // the reducer has stopped reading. Only shared references are made; `NativeMerge`
    // synchronises its own state, so concurrent calls from several fetchers are sound.
    Ok(unsafe { &*(handle as *const NativeMerge) })
}

/// The segment behind a handle.
fn segment<'a>(handle: jlong) -> Result<&'a mut SegmentBuilder, JniError> {
    if handle == 0 {
        return Err(JniError::Config("the map output segment is closed".into()));
    }
    // SAFETY: a non-zero handle is the address `mergeSegmentBegin` returned from
    // `Box::into_raw`, not yet taken back by `mergeSegmentCommit` or `mergeSegmentAbort`: the
    // Java side feeds a segment and takes its handle for a commit or an abort under one lock
    // (`NativeMapOutput.feed` and `take`), so it is never freed during a feed, and one fetcher
    // thread feeds it, one call at a time.
    Ok(unsafe { &mut *(handle as *mut SegmentBuilder) })
}

/// Takes back the segment behind a handle (which Java must not use again).
fn take_segment(handle: jlong) -> Option<Box<SegmentBuilder>> {
    // SAFETY: as in `segment`; the Java side forgets the handle after this call.
    (handle != 0).then(|| unsafe { Box::from_raw(handle as *mut SegmentBuilder) })
}

/// `long mergeInit(int keyKind, long budget, String spillParent)`: a new reduce-side merge's
/// handle, holding at most `budget` bytes of native memory for segments and merging.
#[no_mangle]
pub extern "system" fn Java_org_sluice_hadoop_SluiceNative_mergeInit<'local>(
    mut env: JNIEnv<'local>,
    _class: JClass<'local>,
    key_kind: jint,
    budget: jlong,
    spill_parent: JString<'local>,
) -> jlong {
    guard(&mut env, 0, |env| {
        let key = KeyKind::from_code(key_kind)
            .ok_or_else(|| JniError::Config(format!("unknown key kind {key_kind}")))?;
        let merge = NativeMerge::new(MergeSettings {
            key,
            budget: to_usize(budget, "the merge's memory")?,
            spill_parent: env.get_string(&spill_parent)?.into(),
        })?;
        Ok(Box::into_raw(Box::new(merge)) as jlong)
    })
}

/// `long mergeSegmentBegin(long merge, long rawLength)`: a handle for a map output segment
/// whose IFile stream holds `rawLength` bytes once decompressed.
#[no_mangle]
pub extern "system" fn Java_org_sluice_hadoop_SluiceNative_mergeSegmentBegin<'local>(
    mut env: JNIEnv<'local>,
    _class: JClass<'local>,
    handle: jlong,
    raw_length: jlong,
) -> jlong {
    guard(&mut env, 0, |_| {
        let raw = u64::try_from(raw_length)
            .map_err(|_| JniError::Config(format!("a segment of {raw_length} bytes")))?;
        let segment = merge(handle)?.begin_segment(raw)?;
        Ok(Box::into_raw(segment) as jlong)
    })
}

thread_local! {
    /// Each fetcher thread's copy of its current chunk (see `mergeSegmentFeed`).
    static FEED_BUFFER: std::cell::RefCell<Vec<i8>> = const { std::cell::RefCell::new(Vec::new()) };
}

/// `void mergeSegmentFeed(long segment, byte[] chunk, int length)`: the next `length` bytes
/// of the segment's checked, decompressed IFile stream.
#[no_mangle]
pub extern "system" fn Java_org_sluice_hadoop_SluiceNative_mergeSegmentFeed<'local>(
    mut env: JNIEnv<'local>,
    _class: JClass<'local>,
    handle: jlong,
    chunk: JByteArray<'local>,
    length: jint,
) {
    guard(&mut env, (), |env| {
        let segment = segment(handle)?;
        let length = to_usize(length.into(), "the chunk length")?;
        let capacity = to_usize(env.get_array_length(&chunk)?.into(), "the chunk capacity")?;
        if length > capacity {
            return Err(JniError::Config(format!(
                "a chunk of {length} bytes in an array of {capacity}"
            )));
        }
        // Copied out rather than pinned (`GetPrimitiveArrayCritical`): feeding may write a
        // spill file, and a critical section that long would hold off the JVM's collector.
        FEED_BUFFER.with(|buffer| {
            let mut buffer = buffer.borrow_mut();
            if buffer.len() < length {
                buffer.resize(length, 0);
            }
            let signed = &mut buffer[..length];
            env.get_byte_array_region(&chunk, 0, signed)?;
            // SAFETY: i8 (jbyte) and u8 have the same size and alignment.
            let bytes = unsafe { std::slice::from_raw_parts(signed.as_ptr().cast::<u8>(), length) };
            segment.feed(bytes)
        })
    })
}

/// `void mergeSegmentCommit(long merge, long segment)`: the segment, fully fed, joins the
/// merge. The segment handle is gone after the call, whatever its outcome.
#[no_mangle]
pub extern "system" fn Java_org_sluice_hadoop_SluiceNative_mergeSegmentCommit<'local>(
    mut env: JNIEnv<'local>,
    _class: JClass<'local>,
    handle: jlong,
    segment: jlong,
) {
    guard(&mut env, (), |_| {
        let merge = merge(handle)?;
        let segment = take_segment(segment)
            .ok_or_else(|| JniError::Config("the map output segment is closed".into()))?;
        merge.commit(*segment)
    })
}

/// `void mergeSegmentAbort(long segment)`: frees a segment that will not be committed.
#[no_mangle]
pub extern "system" fn Java_org_sluice_hadoop_SluiceNative_mergeSegmentAbort<'local>(
    mut env: JNIEnv<'local>,
    _class: JClass<'local>,
    segment: jlong,
) {
    guard(&mut env, (), |_| {
        drop(take_segment(segment));
        Ok(())
    })
}

/// `long[] mergeFinish(long merge)`: starts the final merge (on a thread of its own, which
/// merges ahead of the reader) and returns the segments, records, segments kept in memory,
/// bytes and records written to local disk, and the peak native memory.
#[no_mangle]
pub extern "system" fn Java_org_sluice_hadoop_SluiceNative_mergeFinish<'local>(
    mut env: JNIEnv<'local>,
    _class: JClass<'local>,
    handle: jlong,
) -> jlongArray {
    guard(&mut env, std::ptr::null_mut(), |env| {
        let r = merge(handle)?.finish()?;
        let values = [
            r.segments,
            r.records,
            r.segments_in_memory,
            r.disk_bytes,
            r.disk_records,
            r.peak_memory,
        ];
        long_array(env, &values)
    })
}

/// `int mergeNext(long merge, byte[] batch)`: copies the next merged batch (records of `int
/// keyLength, int valueLength, key, value`) into `batch` and returns its length; 0 at the end
/// of the stream; minus the batch's length if `batch` is too small for it (call again with a
/// larger array).
#[no_mangle]
pub extern "system" fn Java_org_sluice_hadoop_SluiceNative_mergeNext<'local>(
    mut env: JNIEnv<'local>,
    _class: JClass<'local>,
    handle: jlong,
    batch: JByteArray<'local>,
) -> jint {
    guard(&mut env, 0, |env| {
        let capacity = to_usize(env.get_array_length(&batch)?.into(), "the batch capacity")?;
        let length = merge(handle)?.next_batch(capacity, |bytes| {
            // SAFETY: u8 and i8 (jbyte) have the same size and alignment.
            let signed =
                unsafe { std::slice::from_raw_parts(bytes.as_ptr().cast::<i8>(), bytes.len()) };
            env.set_byte_array_region(&batch, 0, signed)?;
            Ok(())
        })?;
        jint::try_from(length).map_err(|_| JniError::Config(format!("a batch of {length} bytes")))
    })
}

/// `void mergeClose(long merge)`: stops the merge thread and frees the merge, its memory and
/// its spill files.
#[no_mangle]
pub extern "system" fn Java_org_sluice_hadoop_SluiceNative_mergeClose<'local>(
    mut env: JNIEnv<'local>,
    _class: JClass<'local>,
    handle: jlong,
) {
    guard(&mut env, (), |_| {
        if handle != 0 {
            // SAFETY: as in `merge`: the handle came from `Box::into_raw` in `mergeInit`, and
            // the Java side closes it once, after its last use.
            drop(unsafe { Box::from_raw(handle as *mut NativeMerge) });
        }
        Ok(())
    })
}

/// A Java `long[]` of `values`.
fn long_array(env: &mut JNIEnv<'_>, values: &[u64]) -> Result<jlongArray, JniError> {
    let values: Vec<jlong> = values
        .iter()
        .map(|&v| jlong::try_from(v).map_err(|_| JniError::Config(format!("{v} overflows"))))
        .collect::<Result<_, _>>()?;
    let length =
        i32::try_from(values.len()).map_err(|_| JniError::Config("too many values".into()))?;
    let array = env.new_long_array(length)?;
    env.set_long_array_region(&array, 0, &values)?;
    Ok(array.into_raw())
}

/// `void panicForTest(String message)`: panics with a formatted message, so that a test can
/// check that a panic becomes a Java exception and not a crashed JVM.
#[no_mangle]
pub extern "system" fn Java_org_sluice_hadoop_SluiceNative_panicForTest<'local>(
    mut env: JNIEnv<'local>,
    _class: JClass<'local>,
    message: JString<'local>,
) {
    guard(&mut env, (), |env| {
        let text: String = env.get_string(&message)?.into();
        panic!("forced for a test: {text}");
    })
}

/// The streaming session behind a handle.
fn streaming<'a>(handle: jlong) -> Result<&'a StreamingSession, JniError> {
    if handle == 0 {
        return Err(JniError::Config(
            "the shared-memory channel is closed".into(),
        ));
    }
    // SAFETY: a non-zero handle is the address `shmCreate` returned from `Box::into_raw`, not
    // yet freed: the Java side frees it once (`shmClose`), after the writer and the reader have
    // both closed, so no call on it runs any more. Only shared references are made;
    // `StreamingSession` locks each direction, so the writer's and the reader's threads may
    // call at once.
    Ok(unsafe { &*(handle as *const StreamingSession) })
}

/// The bytes of a direct `ByteBuffer` (its whole capacity).
///
/// # Safety
/// The caller must not let the slice outlive the buffer, and no Java thread may use the
/// buffer while the slice lives.
unsafe fn direct_bytes<'b>(
    env: &mut JNIEnv<'_>,
    buffer: &JByteBuffer<'_>,
) -> Result<&'b mut [u8], JniError> {
    let address = env.get_direct_buffer_address(buffer)?;
    let capacity = env.get_direct_buffer_capacity(buffer)?;
    // SAFETY: the JVM reports `capacity` bytes at `address` for a direct buffer; the caller
    // keeps the buffer alive and unused by Java for the slice's life.
    Ok(unsafe { std::slice::from_raw_parts_mut(address, capacity) })
}

/// The first `length` bytes of the direct buffer `buffer`: a batch Java filled. A length
/// beyond the buffer's capacity is refused.
///
/// # Safety
/// As [`direct_bytes`].
unsafe fn batch_bytes<'b>(
    env: &mut JNIEnv<'_>,
    buffer: &JByteBuffer<'_>,
    length: jint,
) -> Result<&'b [u8], JniError> {
    let length = to_usize(length.into(), "the batch length")?;
    // SAFETY: the caller upholds `direct_bytes`'s contract.
    let bytes: &'b [u8] = unsafe { direct_bytes(env, buffer)? };
    bytes.get(..length).ok_or_else(|| {
        JniError::Config(format!(
            "a batch of {length} bytes in a buffer of {}",
            bytes.len()
        ))
    })
}

/// `long shmCreate(int pid, long inputRing, long outputRing)`: a shared-memory region for the
/// streaming program with process id `pid`, with an input ring and, unless `outputRing` is 0,
/// an output ring.
#[no_mangle]
pub extern "system" fn Java_org_sluice_hadoop_streaming_ShmNative_shmCreate<'local>(
    mut env: JNIEnv<'local>,
    _class: JClass<'local>,
    pid: jint,
    input_ring: jlong,
    output_ring: jlong,
) -> jlong {
    guard(&mut env, 0, |_| {
        let capacity = |value: jlong| {
            u64::try_from(value).map_err(|_| JniError::Config(format!("a ring of {value} bytes")))
        };
        let output = (output_ring != 0)
            .then(|| capacity(output_ring))
            .transpose()?;
        let session = StreamingSession::new(pid, capacity(input_ring)?, output)?;
        Ok(Box::into_raw(Box::new(session)) as jlong)
    })
}

/// `byte[] shmAttachLine(long session)`: the line that tells the program where the region is.
#[no_mangle]
pub extern "system" fn Java_org_sluice_hadoop_streaming_ShmNative_shmAttachLine<'local>(
    mut env: JNIEnv<'local>,
    _class: JClass<'local>,
    handle: jlong,
) -> jbyteArray {
    guard(&mut env, std::ptr::null_mut(), |env| {
        let line = streaming(handle)?.attach_line()?;
        Ok(env.byte_array_from_slice(&line)?.into_raw())
    })
}

/// `void shmAwaitAttach(long session, long timeoutMillis)`: waits until the program has
/// attached; afterwards no path opens the region.
#[no_mangle]
pub extern "system" fn Java_org_sluice_hadoop_streaming_ShmNative_shmAwaitAttach<'local>(
    mut env: JNIEnv<'local>,
    _class: JClass<'local>,
    handle: jlong,
    timeout_millis: jlong,
) {
    guard(&mut env, (), |_| {
        let millis = u64::try_from(timeout_millis).unwrap_or(0);
        streaming(handle)?.await_attach(std::time::Duration::from_millis(millis))
    })
}

/// `void shmWrite(long session, ByteBuffer batch, int length)`: the first `length` bytes of a
/// direct buffer into the program's input ring.
#[no_mangle]
pub extern "system" fn Java_org_sluice_hadoop_streaming_ShmNative_shmWrite<'local>(
    mut env: JNIEnv<'local>,
    _class: JClass<'local>,
    handle: jlong,
    batch: JByteBuffer<'local>,
    length: jint,
) {
    guard(&mut env, (), |env| {
        let session = streaming(handle)?;
        // SAFETY: the slice lives for this call only, and the writer's thread, which owns the
        // buffer, is blocked in this call.
        let bytes = unsafe { batch_bytes(env, &batch, length)? };
        session.write(bytes)
    })
}

/// `void shmCloseInput(long session)`: the program sees the end of its input.
#[no_mangle]
pub extern "system" fn Java_org_sluice_hadoop_streaming_ShmNative_shmCloseInput<'local>(
    mut env: JNIEnv<'local>,
    _class: JClass<'local>,
    handle: jlong,
) {
    guard(&mut env, (), |_| {
        streaming(handle)?.close_input();
        Ok(())
    })
}

/// `int shmRead(long session, ByteBuffer into)`: what the program wrote, into a direct
/// buffer: the number of bytes, or -1 at the end of its output.
#[no_mangle]
pub extern "system" fn Java_org_sluice_hadoop_streaming_ShmNative_shmRead<'local>(
    mut env: JNIEnv<'local>,
    _class: JClass<'local>,
    handle: jlong,
    into: JByteBuffer<'local>,
) -> jint {
    guard(&mut env, -1, |env| {
        let session = streaming(handle)?;
        // SAFETY: the slice lives for this call only, and the reader's thread, which owns the
        // buffer, is blocked in this call.
        let buf = unsafe { direct_bytes(env, &into)? };
        // At most 1 GiB per call, so the count fits a jint.
        let buf_len = buf.len().min(1 << 30);
        let n = session.read(&mut buf[..buf_len])?;
        if n == 0 {
            return Ok(-1);
        }
        jint::try_from(n).map_err(|_| JniError::Config(format!("a read of {n} bytes")))
    })
}

/// `void shmClose(long session)`: frees the region; a program whose input or output had not
/// ended is told that the task gave up.
#[no_mangle]
pub extern "system" fn Java_org_sluice_hadoop_streaming_ShmNative_shmClose<'local>(
    mut env: JNIEnv<'local>,
    _class: JClass<'local>,
    handle: jlong,
) {
    guard(&mut env, (), |_| {
        if handle != 0 {
            // SAFETY: as in `streaming`: the handle came from `Box::into_raw` in `shmCreate`,
            // and the Java side closes it once, after its last use.
            drop(unsafe { Box::from_raw(handle as *mut StreamingSession) });
        }
        Ok(())
    })
}
