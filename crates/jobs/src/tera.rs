//! TeraGen and TeraValidate: the generator and the checker of the sort benchmark, writing and
//! reading the same files as Hadoop's examples.
//!
//! Neither is a MapReduce job here: generating rows needs no input, and validating needs one
//! ordered pass per file plus a check across files. Both run their files on the worker threads
//! and write their output through the output store's committer like every job: it appears
//! whole, with `_SUCCESS`, or not at all, on the local file system, HDFS or S3 alike.

use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::Mutex;

use sluice_hadoop::tera::{RowGenerator, TeraChecksum, KEY_LEN, ROW_LEN};
use sluice_io::{
    discover, CachePolicy, Compression, FixedRecordReader, IoError, JobCommitter, Location,
    PartAttempt, Split, StorageWriter, StoredInput, Stores, DEFAULT_WRITE_BUFFER,
};

use sluice_api::{Counter, ExecError, JobStatus, Phase};
use sluice_exec::{run_tasks, JobOutput};

/// Rows generated and written per write call (1 MB).
const ROWS_PER_WRITE: usize = 10_000;

/// What [`teragen`] wrote.
#[derive(Debug, Clone)]
pub struct TeraGenReport {
    /// The committed output directory.
    pub output: Location,
    /// Rows written.
    pub rows: u64,
    /// Part files written (`part-m-NNNNN`).
    pub files: usize,
    /// Checksum of all rows, as TeraValidate computes it on the sorted output.
    pub checksum: TeraChecksum,
}

/// The rows of part file `index` of `files`: Hadoop's `RangeInputFormat` split, row
/// `ceil(rows * (index + 1) / files)` (in doubles, as Java computes it) ends each.
pub fn teragen_range(rows: u64, files: usize, index: usize) -> std::ops::Range<u64> {
    let goal = |i: usize| -> u64 {
        if i == 0 {
            return 0;
        }
        // Java: (long) Math.ceil(totalRows * (double) i / numSplits); `as` saturates the same way.
        (rows as f64 * i as f64 / files as f64).ceil() as u64
    };
    goal(index)..goal(index + 1)
}

/// Writes `rows` rows of Hadoop's TeraGen into `files` part files `part-m-NNNNN` of `output`
/// (row ranges split as Hadoop splits them among map tasks), on `threads` threads, through
/// the committer `stores` gives for `output`: the directory appears with every part file and
/// `_SUCCESS`, or nothing appears.
///
/// # Errors
/// An existing output ([`IoError::OutputExists`], checked before anything is written), a
/// store's error, a cancelled job.
pub fn teragen(
    stores: &Stores,
    output: &Location,
    rows: u64,
    files: usize,
    threads: usize,
    status: &JobStatus,
) -> Result<TeraGenReport, ExecError> {
    if files == 0 || threads == 0 {
        return Err(ExecError::Config(
            "teragen needs at least 1 map and 1 thread".into(),
        ));
    }
    let job = JobOutput::set_up(stores, output)?;
    status.set_input_bytes_total(rows.saturating_mul(ROW_LEN as u64));
    status.enter(Phase::Map, files as u64);
    let checksums = Mutex::new(vec![TeraChecksum::new(); files]);
    run_tasks(threads, files, status, |index| {
        let name = format!("part-m-{index:05}");
        let range = teragen_range(rows, files, index);
        let checksum = write_part(job.committer(), &name, |out| write_rows(out, range, status))
            .map_err(|e| e.in_task(format!("teragen {name}")))?;
        checksums.lock().unwrap_or_else(|p| p.into_inner())[index] = checksum;
        Ok(())
    })?;
    let mut checksum = TeraChecksum::new();
    for part in checksums.into_inner().unwrap_or_else(|p| p.into_inner()) {
        checksum.merge(part);
    }
    status.enter(Phase::Commit, 1);
    let output = job.commit()?;
    status.enter(Phase::Done, 0);
    Ok(TeraGenReport {
        output,
        rows,
        files,
        checksum,
    })
}

/// An attempt's part file being written; its errors name the part file.
struct PartOut {
    writer: StorageWriter,
    path: PathBuf,
}

impl PartOut {
    fn write_all(&mut self, bytes: &[u8]) -> Result<(), ExecError> {
        self.writer
            .write_all(bytes)
            .map_err(|source| write_error(&self.path, source))
    }
}

fn write_error(path: &Path, source: std::io::Error) -> ExecError {
    ExecError::Io(IoError::Write {
        path: path.to_path_buf(),
        source,
    })
}

/// Writes part file `name` as the only attempt of its task: creates the attempt's file, lets
/// `fill` write it, finishes it and commits the task. Whatever fails, the attempt is aborted
/// (its file discarded) before the error is returned.
fn write_part<T>(
    committer: &dyn JobCommitter,
    name: &str,
    fill: impl FnOnce(&mut PartOut) -> Result<T, ExecError>,
) -> Result<T, ExecError> {
    let part = PartAttempt::new(name, 0);
    // Locally the committer's writer goes past the page cache, like every part file's:
    // gigabytes of rows that nobody reads back soon.
    let result = committer
        .create_part(part, DEFAULT_WRITE_BUFFER)
        .map_err(ExecError::from)
        .and_then(|writer| {
            let mut out = PartOut {
                writer,
                path: committer.output().join(name).error_path(),
            };
            let value = fill(&mut out)?;
            // A store's file is only whole once finished (the local writer's last chunk, an
            // object store's upload).
            let PartOut { writer, path } = out;
            writer.finish().map_err(|e| write_error(&path, e))?;
            committer.commit_task(part)?;
            Ok(value)
        });
    if result.is_err() {
        // The job is aborted too, which discards everything; this drops what the attempt
        // left at once, and the job's error is the one to report.
        let _ = committer.abort_task(part);
    }
    result
}

/// Writes TeraGen's rows `range` to `out`; returns their checksum.
fn write_rows(
    out: &mut PartOut,
    range: std::ops::Range<u64>,
    status: &JobStatus,
) -> Result<TeraChecksum, ExecError> {
    let mut generator = RowGenerator::new(u128::from(range.start));
    let mut buffer = vec![0u8; ROWS_PER_WRITE * ROW_LEN];
    let mut checksum = TeraChecksum::new();
    let mut left = range.end - range.start;
    while left > 0 {
        if status.is_cancelled() {
            return Err(ExecError::Cancelled);
        }
        let n = usize::try_from(left).map_or(ROWS_PER_WRITE, |left| left.min(ROWS_PER_WRITE));
        let chunk = &mut buffer[..n * ROW_LEN];
        generator.fill(chunk);
        for row in chunk.chunks_exact(ROW_LEN) {
            checksum.add_row(row);
        }
        out.write_all(chunk)?;
        status
            .counters
            .add(Counter::MapInputBytes, chunk.len() as u64);
        left -= n as u64;
    }
    Ok(checksum)
}

/// What [`teravalidate`] found.
#[derive(Debug, Clone)]
pub struct TeraValidateReport {
    /// The committed report directory.
    pub output: Location,
    /// Rows read.
    pub rows: u64,
    /// Files read.
    pub files: usize,
    /// Rows whose key equals the previous row's key (across files too).
    pub duplicate_keys: u64,
    /// Checksum of all rows (equal to the checksum of the unsorted input if no row was lost,
    /// added or changed).
    pub checksum: TeraChecksum,
    /// Rows whose key is smaller than the previous row's key in the same file.
    pub misorders: u64,
    /// Problems, in the words of Hadoop's TeraValidate; empty if the output is valid. Hadoop
    /// lists every misorder; this lists at most [`MAX_MISORDERS_LISTED`] per file (an unsorted
    /// file of a billion rows would otherwise fill memory), and counts them all in
    /// [`TeraValidateReport::misorders`].
    pub errors: Vec<String>,
}

/// Most misorders listed per file.
pub const MAX_MISORDERS_LISTED: usize = 1000;

/// What one file holds, as far as validation is concerned.
#[derive(Default, Clone)]
struct FileSummary {
    name: String,
    rows: u64,
    first: Option<[u8; KEY_LEN]>,
    last: Option<[u8; KEY_LEN]>,
    duplicates: u64,
    misorders: u64,
    checksum: TeraChecksum,
    errors: Vec<String>,
}

/// Checks that the part files of `input` (read in name order) hold rows sorted by key within
/// and across files, counts rows and duplicate keys, and computes the checksum. Writes Hadoop
/// TeraValidate's report (`checksum\tSUM`, then one `error\t...` line per problem) to
/// `part-r-00000` of `output`. Both are on any of `stores`; the report is committed as a
/// job's output is (whole, with `_SUCCESS`, or not at all).
///
/// # Errors
/// Unreadable input, a file whose length is not a whole number of rows, an existing output
/// directory (refused before any input is read). Order violations are not errors: they are in
/// the report.
pub fn teravalidate(
    stores: &Stores,
    input: &Location,
    output: &Location,
    threads: usize,
    status: &JobStatus,
) -> Result<TeraValidateReport, ExecError> {
    let job = JobOutput::set_up(stores, output)?;
    let files = discover(stores, std::slice::from_ref(input))?;
    status.set_input_bytes_total(files.iter().map(|f| f.status.len).sum());
    status.enter(Phase::Map, files.len() as u64);
    let summaries = Mutex::new(vec![FileSummary::default(); files.len()]);
    run_tasks(threads.max(1), files.len(), status, |index| {
        let file = &files[index];
        let summary = check_file(stores, file, index, status)
            .map_err(|e| e.in_task(format!("teravalidate {}", file.location())))?;
        summaries.lock().unwrap_or_else(|p| p.into_inner())[index] = summary;
        Ok(())
    })?;
    let summaries = summaries.into_inner().unwrap_or_else(|p| p.into_inner());

    let mut report = TeraValidateReport {
        output: output.clone(),
        rows: 0,
        files: files.len(),
        duplicate_keys: 0,
        misorders: 0,
        checksum: TeraChecksum::new(),
        errors: Vec::new(),
    };
    let mut boundary_errors = Vec::new();
    let mut previous: Option<(&str, [u8; KEY_LEN])> = None;
    for summary in &summaries {
        report.rows += summary.rows;
        report.duplicate_keys += summary.duplicates;
        report.misorders += summary.misorders;
        report.checksum.merge(summary.checksum);
        report.errors.extend(summary.errors.iter().cloned());
        let (Some(first), Some(last)) = (summary.first, summary.last) else {
            continue;
        };
        // Hadoop's reducer checks the sequence begin, end, begin, end, ... of the files in name
        // order, so a file whose last key is below its first is reported here too.
        if let Some((previous_name, previous_last)) = previous {
            if first < previous_last {
                boundary_errors.push(format!(
                    "bad key partitioning:\n  file {previous_name}:end key {}\n  file {}:begin key {}",
                    hex(&previous_last),
                    summary.name,
                    hex(&first)
                ));
            } else if first == previous_last {
                report.duplicate_keys += 1;
            }
        }
        if last < first {
            boundary_errors.push(format!(
                "bad key partitioning:\n  file {0}:begin key {1}\n  file {0}:end key {2}",
                summary.name,
                hex(&first),
                hex(&last)
            ));
        }
        previous = Some((&summary.name, last));
    }
    // Hadoop's reducer sees the misorders (key "error") before the file boundaries.
    report.errors.extend(boundary_errors);

    status.enter(Phase::Commit, 1);
    let mut text = Vec::new();
    if report.rows > 0 {
        text.extend_from_slice(format!("checksum\t{}\n", report.checksum).as_bytes());
    }
    for error in &report.errors {
        text.extend_from_slice(format!("error\t{error}\n").as_bytes());
    }
    write_part(job.committer(), "part-r-00000", |out| out.write_all(&text))?;
    report.output = job.commit()?;
    status.enter(Phase::Done, 0);
    Ok(report)
}

/// Rows counted between progress updates (and checks for cancellation).
const ROWS_PER_UPDATE: u64 = 100_000;

/// Reads every row of `file` (input `index` of the job), in order.
fn check_file(
    stores: &Stores,
    file: &StoredInput,
    index: usize,
    status: &JobStatus,
) -> Result<FileSummary, ExecError> {
    let location = file.location();
    let name = location
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    // Said before reading, in TeraSort's words; the reader would only say that the file ends
    // inside a record. (A compressed file's rows are only known once it is decompressed: the
    // reader's error is the one to see there.)
    let partial = file.status.len % ROW_LEN as u64;
    if file.compression == Compression::None && partial != 0 {
        return Err(ExecError::user(format!(
            "{location} ends with a partial row of {partial} bytes: TeraSort rows are {ROW_LEN} \
             bytes"
        )));
    }
    let whole = Split {
        file: index,
        start: 0,
        len: file.status.len,
    };
    // Every row is read once, and the files are as large as the sort's output: the store need
    // not keep them cached.
    let mut rows =
        FixedRecordReader::open_in(stores, file, &whole, ROW_LEN, CachePolicy::DropBehind)?;
    let mut summary = FileSummary {
        name,
        ..FileSummary::default()
    };
    let mut counted = 0;
    while let Some((_, row)) = rows.next_record()? {
        let mut key = [0u8; KEY_LEN];
        key.copy_from_slice(&row[..KEY_LEN]);
        match summary.last {
            None => summary.first = Some(key),
            Some(last) if key < last => {
                summary.misorders += 1;
                if summary.errors.len() < MAX_MISORDERS_LISTED {
                    summary.errors.push(format!(
                        "misorder in {} between {} and {}",
                        summary.name,
                        hex(&last),
                        hex(&key)
                    ));
                }
            }
            Some(last) if key == last => summary.duplicates += 1,
            Some(_) => {}
        }
        summary.last = Some(key);
        summary.checksum.add_row(row);
        summary.rows += 1;
        if summary.rows.is_multiple_of(ROWS_PER_UPDATE) {
            if status.is_cancelled() {
                return Err(ExecError::Cancelled);
            }
            let consumed = rows.bytes_consumed();
            status
                .counters
                .add(Counter::MapInputBytes, consumed - counted);
            counted = consumed;
        }
    }
    status
        .counters
        .add(Counter::MapInputBytes, rows.bytes_consumed() - counted);
    Ok(summary)
}

/// A key as Hadoop's TeraValidate prints it (`BytesWritable.toString`).
fn hex(bytes: &[u8]) -> String {
    let mut text = Vec::with_capacity(bytes.len() * 3);
    sluice_hadoop::java::bytes_writable_text(bytes, &mut text);
    String::from_utf8_lossy(&text).into_owned()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ranges_split_rows_as_hadoop() {
        // 10 rows in 3 maps: ceil(10/3)=4, ceil(20/3)=7, 10.
        let ranges: Vec<_> = (0..3).map(|i| teragen_range(10, 3, i)).collect();
        assert_eq!(ranges, vec![0..4, 4..7, 7..10]);
        assert_eq!(teragen_range(0, 2, 1), 0..0);
        assert_eq!(teragen_range(5, 1, 0), 0..5);
        // Every row exactly once, whatever the number of maps.
        for files in 1..12 {
            let mut next = 0;
            for i in 0..files {
                let r = teragen_range(1000, files, i);
                assert_eq!(r.start, next);
                next = r.end;
            }
            assert_eq!(next, 1000);
        }
    }

    fn local(path: &Path) -> Location {
        Location::from_path(path)
    }

    fn names(dir: &Path) -> Vec<String> {
        let mut names: Vec<_> = std::fs::read_dir(dir)
            .unwrap()
            .map(|e| e.unwrap().file_name().into_string().unwrap())
            .collect();
        names.sort();
        names
    }

    #[test]
    fn teragen_commits_its_parts_and_success() {
        let dir = tempfile::tempdir().unwrap();
        let stores = Stores::local();
        let one = dir.path().join("one");
        let three = dir.path().join("three");
        let status = JobStatus::default();
        let report = teragen(&stores, &local(&one), 1000, 1, 2, &status).unwrap();
        assert_eq!((report.rows, report.files), (1000, 1));
        assert_eq!(report.output, local(&one));
        let again = teragen(&stores, &local(&three), 1000, 3, 2, &JobStatus::default()).unwrap();
        assert_eq!(again.checksum, report.checksum);
        assert_eq!(
            names(&three),
            ["_SUCCESS", "part-m-00000", "part-m-00001", "part-m-00002"]
        );
        let joined: Vec<u8> = ["part-m-00000", "part-m-00001", "part-m-00002"]
            .iter()
            .flat_map(|n| std::fs::read(three.join(n)).unwrap())
            .collect();
        assert_eq!(joined, std::fs::read(one.join("part-m-00000")).unwrap());
        assert_eq!(&joined[..10], b"JimGrayRIP");
        // Nothing but the two outputs: no staging directory left behind.
        assert_eq!(names(dir.path()), ["one", "three"]);
    }

    #[test]
    fn teragen_refuses_an_existing_output_without_touching_it() {
        let dir = tempfile::tempdir().unwrap();
        let out = dir.path().join("out");
        std::fs::create_dir(&out).unwrap();
        std::fs::write(out.join("part-m-00000"), b"earlier rows").unwrap();
        let error = teragen(
            &Stores::local(),
            &local(&out),
            100,
            2,
            1,
            &JobStatus::default(),
        )
        .unwrap_err();
        assert!(
            matches!(error, ExecError::Io(IoError::OutputExists { .. })),
            "{error}"
        );
        assert_eq!(names(&out), ["part-m-00000"]);
        assert_eq!(
            std::fs::read(out.join("part-m-00000")).unwrap(),
            b"earlier rows"
        );
        assert_eq!(names(dir.path()), ["out"]);
    }

    #[test]
    fn a_cancelled_teragen_leaves_nothing() {
        let dir = tempfile::tempdir().unwrap();
        let out = dir.path().join("out");
        let status = JobStatus::default();
        status.cancel();
        let error = teragen(&Stores::local(), &local(&out), 50_000, 2, 1, &status).unwrap_err();
        assert!(matches!(error, ExecError::Cancelled), "{error}");
        assert!(names(dir.path()).is_empty(), "{:?}", names(dir.path()));
    }

    #[test]
    fn teravalidate_reads_and_reports_through_the_stores() {
        let dir = tempfile::tempdir().unwrap();
        let stores = Stores::local();
        let rows = dir.path().join("rows");
        let generated = teragen(&stores, &local(&rows), 1000, 2, 1, &JobStatus::default()).unwrap();
        let report_dir = dir.path().join("report");
        let status = JobStatus::default();
        let report = teravalidate(&stores, &local(&rows), &local(&report_dir), 2, &status).unwrap();
        assert_eq!(report.output, local(&report_dir));
        assert_eq!((report.rows, report.files), (1000, 2));
        assert_eq!(report.checksum, generated.checksum);
        // TeraGen's rows are not sorted.
        assert!(report.misorders > 0);
        let text = std::fs::read_to_string(report_dir.join("part-r-00000")).unwrap();
        assert!(
            text.starts_with(&format!(
                "checksum\t{}\nerror\tmisorder in part-m-00000 ",
                generated.checksum
            )),
            "{text}"
        );
        assert_eq!(names(&report_dir), ["_SUCCESS", "part-r-00000"]);
        assert_eq!(
            status.counters.get(Counter::MapInputBytes),
            1000 * ROW_LEN as u64
        );

        // An existing report is refused before the input is read, and left as it is.
        let error = teravalidate(
            &stores,
            &local(&dir.path().join("missing")),
            &local(&report_dir),
            1,
            &JobStatus::default(),
        )
        .unwrap_err();
        assert!(
            matches!(error, ExecError::Io(IoError::OutputExists { .. })),
            "{error}"
        );
        assert_eq!(names(&report_dir), ["_SUCCESS", "part-r-00000"]);
    }

    #[test]
    fn teravalidate_refuses_a_partial_row_and_writes_no_report() {
        let dir = tempfile::tempdir().unwrap();
        let input = dir.path().join("cut");
        std::fs::create_dir(&input).unwrap();
        std::fs::write(input.join("part-r-00000"), vec![b'x'; 250]).unwrap();
        let report = dir.path().join("report");
        let error = teravalidate(
            &Stores::local(),
            &local(&input),
            &local(&report),
            1,
            &JobStatus::default(),
        )
        .unwrap_err();
        let mut text = error.to_string();
        let mut source = std::error::Error::source(&error);
        while let Some(cause) = source {
            text.push_str(&format!(": {cause}"));
            source = cause.source();
        }
        assert!(text.contains("partial row of 50 bytes"), "{text}");
        assert_eq!(names(dir.path()), ["cut"]);
    }

    #[test]
    fn hex_is_spaced_lowercase() {
        assert_eq!(hex(&[0x00, 0xab, 0x10]), "00 ab 10");
    }
}
