//! TeraGen and TeraValidate: the generator and the checker of the sort benchmark, writing and
//! reading the same files as Hadoop's examples.
//!
//! Neither is a MapReduce job here: generating rows needs no input, and validating needs one
//! ordered pass per file plus a check across files. Both run their files on the worker threads
//! and commit their output directory like every job (temporary directory, rename, `_SUCCESS`).

use std::fs::File;
use std::io::{BufReader, BufWriter, Read, Write};
use std::path::{Path, PathBuf};
use std::sync::Mutex;

use sluice_hadoop::tera::{RowGenerator, TeraChecksum, KEY_LEN, ROW_LEN};
use sluice_io::{discover_inputs, DirectWriter, IoError, OutputCommitter};

use sluice_api::{Counter, ExecError, JobStatus, Phase};
use sluice_exec::run_tasks;

/// Rows generated and written per write call (1 MB).
const ROWS_PER_WRITE: usize = 10_000;

/// What [`teragen`] wrote.
#[derive(Debug, Clone)]
pub struct TeraGenReport {
    /// The committed output directory.
    pub output: PathBuf,
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
/// (row ranges split as Hadoop splits them among map tasks), on `threads` threads.
///
/// # Errors
/// An existing output directory, a write error, a cancelled job.
pub fn teragen(
    rows: u64,
    output: &Path,
    files: usize,
    threads: usize,
    status: &JobStatus,
) -> Result<TeraGenReport, ExecError> {
    if files == 0 || threads == 0 {
        return Err(ExecError::Config(
            "teragen needs at least 1 map and 1 thread".into(),
        ));
    }
    let committer = OutputCommitter::create(output)?;
    status.set_input_bytes_total(rows.saturating_mul(ROW_LEN as u64));
    status.enter(Phase::Map, files as u64);
    let checksums = Mutex::new(vec![TeraChecksum::new(); files]);
    run_tasks(threads, files, status, |index| {
        let name = format!("part-m-{index:05}");
        let range = teragen_range(rows, files, index);
        let checksum = write_rows(&committer, &name, range, status)
            .map_err(|e| e.in_task(format!("teragen {name}")))?;
        checksums.lock().unwrap_or_else(|p| p.into_inner())[index] = checksum;
        Ok(())
    })?;
    let mut checksum = TeraChecksum::new();
    for part in checksums.into_inner().unwrap_or_else(|p| p.into_inner()) {
        checksum.merge(part);
    }
    status.enter(Phase::Commit, 1);
    let output = committer.commit()?;
    status.enter(Phase::Done, 0);
    Ok(TeraGenReport {
        output,
        rows,
        files,
        checksum,
    })
}

fn write_rows(
    committer: &OutputCommitter,
    name: &str,
    range: std::ops::Range<u64>,
    status: &JobStatus,
) -> Result<TeraChecksum, ExecError> {
    let path = committer.temp_dir().join(name);
    let write_error = |source| {
        ExecError::Io(IoError::Write {
            path: path.clone(),
            source,
        })
    };
    // Past the page cache, like every part file: gigabytes of rows that nobody reads back soon.
    let mut out = DirectWriter::create(&path).map_err(write_error)?;
    let mut generator = RowGenerator::new(u128::from(range.start));
    let mut buffer = vec![0u8; ROWS_PER_WRITE * ROW_LEN];
    let mut checksum = TeraChecksum::new();
    let mut left = range.end - range.start;
    while left > 0 {
        if status.is_cancelled() {
            return Err(ExecError::Cancelled);
        }
        let n = left.min(ROWS_PER_WRITE as u64) as usize;
        let chunk = &mut buffer[..n * ROW_LEN];
        generator.fill(chunk);
        for row in chunk.chunks_exact(ROW_LEN) {
            checksum.add_row(row);
        }
        out.write_all(chunk).map_err(write_error)?;
        status
            .counters
            .add(Counter::MapInputBytes, chunk.len() as u64);
        left -= n as u64;
    }
    out.finish().map_err(write_error)?;
    Ok(checksum)
}

/// What [`teravalidate`] found.
#[derive(Debug, Clone)]
pub struct TeraValidateReport {
    /// The committed report directory.
    pub output: PathBuf,
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
/// `part-r-00000` of `output`.
///
/// # Errors
/// Unreadable input, a file whose length is not a whole number of rows, an existing output
/// directory. Order violations are not errors: they are in the report.
pub fn teravalidate(
    input: &Path,
    output: &Path,
    threads: usize,
    status: &JobStatus,
) -> Result<TeraValidateReport, ExecError> {
    let committer = OutputCommitter::create(output)?;
    let files = discover_inputs(&[input.to_path_buf()])?;
    status.set_input_bytes_total(files.iter().map(|f| f.len).sum());
    status.enter(Phase::Map, files.len() as u64);
    let summaries = Mutex::new(vec![FileSummary::default(); files.len()]);
    run_tasks(threads.max(1), files.len(), status, |index| {
        let file = &files[index];
        let summary = check_file(&file.path, status)
            .map_err(|e| e.in_task(format!("teravalidate {}", file.path.display())))?;
        summaries.lock().unwrap_or_else(|p| p.into_inner())[index] = summary;
        Ok(())
    })?;
    let summaries = summaries.into_inner().unwrap_or_else(|p| p.into_inner());

    let mut report = TeraValidateReport {
        output: PathBuf::new(),
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
    let path = committer.temp_dir().join("part-r-00000");
    let write_error = |source| {
        ExecError::Io(IoError::Write {
            path: path.clone(),
            source,
        })
    };
    let mut out = BufWriter::new(committer.create_file("part-r-00000")?);
    if report.rows > 0 {
        writeln!(out, "checksum\t{}", report.checksum).map_err(write_error)?;
    }
    for error in &report.errors {
        writeln!(out, "error\t{error}").map_err(write_error)?;
    }
    out.flush().map_err(write_error)?;
    drop(out);
    report.output = committer.commit()?;
    status.enter(Phase::Done, 0);
    Ok(report)
}

fn check_file(path: &Path, status: &JobStatus) -> Result<FileSummary, ExecError> {
    let read_error = |source| {
        ExecError::Io(IoError::Read {
            path: path.to_path_buf(),
            source,
        })
    };
    let name = path
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    let mut input = BufReader::with_capacity(1 << 20, File::open(path).map_err(read_error)?);
    let mut summary = FileSummary {
        name,
        ..FileSummary::default()
    };
    let mut row = [0u8; ROW_LEN];
    loop {
        let got = read_row(&mut input, &mut row).map_err(read_error)?;
        if got == 0 {
            break;
        }
        if got < ROW_LEN {
            return Err(ExecError::user(format!(
                "{} ends with a partial row of {got} bytes: TeraSort rows are {ROW_LEN} bytes",
                path.display()
            )));
        }
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
        summary.checksum.add_row(&row);
        summary.rows += 1;
        if summary.rows % 100_000 == 0 {
            if status.is_cancelled() {
                return Err(ExecError::Cancelled);
            }
            status
                .counters
                .add(Counter::MapInputBytes, 100_000 * ROW_LEN as u64);
        }
    }
    Ok(summary)
}

/// Reads up to one row; returns the bytes read (0 at the end, less than a row if the file
/// ends inside one).
fn read_row(input: &mut impl Read, row: &mut [u8; ROW_LEN]) -> std::io::Result<usize> {
    let mut got = 0;
    while got < ROW_LEN {
        match input.read(&mut row[got..]) {
            Ok(0) => break,
            Ok(n) => got += n,
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
            Err(e) => return Err(e),
        }
    }
    Ok(got)
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

    #[test]
    fn hex_is_spaced_lowercase() {
        assert_eq!(hex(&[0x00, 0xab, 0x10]), "00 ab 10");
    }
}
