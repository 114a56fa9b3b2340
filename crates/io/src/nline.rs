//! Cutting files into splits of N lines each: Hadoop's `NLineInputFormat`.
//!
//! Hadoop reads every input file once while it plans the job, counting lines as its
//! `LineReader` ends them (`\n`, `\r\n` or a lone `\r`; the last line may lack a terminator),
//! and makes one split of each run of N lines (the last run of a file may be shorter). A run
//! covering bytes `begin..begin + length` becomes the split `(0, length - 1)` when it starts
//! the file, else `(begin - 1, length)`: every split is moved one byte back, so that the record
//! reader's two rules — a split not at byte 0 drops the line its first byte is in, and a split
//! reads every line that starts at or before its end — give it exactly its own N lines. The
//! dropped "line" is then just the previous run's last terminator byte.
//!
//! The splits are ordinary [`Split`]s, read by [`LineReader`](crate::LineReader) like any
//! other; only the cutting differs from [`plan_splits`](crate::plan_splits).

use std::fs::File;
use std::io::{self, Read};
use std::num::NonZeroU64;

use memchr::memchr2_iter;

use crate::{Compression, InputFile, IoError, Split, Storage, StoredInput};

/// Bytes read at a time while counting lines.
const READ_SIZE: usize = 256 * 1024;

/// Cuts `files` into splits of `lines_per_split` lines, reading each file once: Hadoop's
/// `NLineInputFormat.getSplitsForFile` for every file, in file order.
///
/// An empty file gives no split at all (not an empty one). A file's last split holds the lines
/// that are left, possibly fewer. Each split's `start` and `len` are Hadoop's (see the module
/// documentation), so they are also what a streaming program sees as
/// `mapreduce_map_input_start` and `_length`.
///
/// # Errors
/// [`IoError::Read`] naming the file that cannot be opened or read; [`IoError::Unsplittable`]
/// for a compressed file that is not empty (Hadoop would count the compressed bytes' line
/// breaks and cut the file where no decoder can start).
pub fn plan_line_splits(
    files: &[InputFile],
    lines_per_split: NonZeroU64,
) -> Result<Vec<Split>, IoError> {
    let mut splits = Vec::new();
    let mut buf = vec![0; READ_SIZE];
    for (index, file) in files.iter().enumerate() {
        if file.compression != Compression::None {
            if file.len == 0 {
                continue;
            }
            return Err(IoError::Unsplittable {
                path: file.path.clone(),
                codec: file.compression.name(),
            });
        }
        let read_error = |source| IoError::Read {
            path: file.path.clone(),
            source,
        };
        let handle = File::open(&file.path).map_err(read_error)?;
        cut_lines(handle, index, lines_per_split, &mut buf, &mut splits).map_err(read_error)?;
    }
    Ok(splits)
}

/// [`plan_line_splits`] for the files [`discover`](crate::discover) found on any
/// [`Storage`]: each file is read once from its start through the storage.
///
/// # Errors
/// As for [`plan_line_splits`]; errors name the file's location.
pub fn plan_line_splits_in(
    storage: &dyn Storage,
    files: &[StoredInput],
    lines_per_split: NonZeroU64,
) -> Result<Vec<Split>, IoError> {
    let mut splits = Vec::new();
    let mut buf = vec![0; READ_SIZE];
    for (index, file) in files.iter().enumerate() {
        let location = file.location();
        if file.compression != Compression::None {
            if file.status.len == 0 {
                continue;
            }
            return Err(IoError::Unsplittable {
                path: location.error_path(),
                codec: file.compression.name(),
            });
        }
        let input = storage.open_range(location, 0, u64::MAX)?;
        cut_lines(input, index, lines_per_split, &mut buf, &mut splits).map_err(|source| {
            IoError::Read {
                path: location.error_path(),
                source,
            }
        })?;
    }
    Ok(splits)
}

/// Appends the splits of one file, read from `input` through `buf`, to `splits`.
fn cut_lines(
    mut input: impl Read,
    file: usize,
    lines_per_split: NonZeroU64,
    buf: &mut [u8],
    splits: &mut Vec<Split>,
) -> io::Result<()> {
    let mut runs = Runs {
        file,
        lines_per_split: lines_per_split.get(),
        begin: 0,
        lines: 0,
        last_end: 0,
        splits,
    };
    // A `\r` whose line end depends on the next byte (`\r\n` is one terminator); the byte may
    // only arrive with the next read.
    let mut pending_cr: Option<u64> = None;
    let mut pos: u64 = 0;
    loop {
        let n = match input.read(buf) {
            Ok(0) => break,
            Ok(n) => n.min(buf.len()),
            Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
            Err(e) => return Err(e),
        };
        let chunk = &buf[..n];
        for i in memchr2_iter(b'\n', b'\r', chunk) {
            let at = pos + i as u64;
            if let Some(cr) = pending_cr.take() {
                if chunk[i] == b'\n' && at == cr + 1 {
                    runs.line_ends_at(at + 1);
                    continue;
                }
                runs.line_ends_at(cr + 1);
            }
            if chunk[i] == b'\n' {
                runs.line_ends_at(at + 1);
            } else {
                pending_cr = Some(at);
            }
        }
        pos += n as u64;
    }
    if let Some(cr) = pending_cr {
        runs.line_ends_at(cr + 1);
    }
    if runs.last_end < pos {
        // The last line has no terminator.
        runs.line_ends_at(pos);
    }
    if runs.lines > 0 {
        runs.close(runs.last_end);
    }
    Ok(())
}

/// Lines of one file gathered into runs of `lines_per_split`.
struct Runs<'a> {
    file: usize,
    lines_per_split: u64,
    /// First byte of the current run.
    begin: u64,
    /// Lines in the current run so far.
    lines: u64,
    /// Where the last line seen ends (its terminator included).
    last_end: u64,
    splits: &'a mut Vec<Split>,
}

impl Runs<'_> {
    fn line_ends_at(&mut self, end: u64) {
        self.last_end = end;
        self.lines += 1;
        if self.lines == self.lines_per_split {
            self.close(end);
        }
    }

    /// Makes the split of the run `begin..end`, moved one byte back as Hadoop does.
    fn close(&mut self, end: u64) {
        // A line holds at least its terminator or one byte, so `length >= 1`.
        let length = end - self.begin;
        let (start, len) = match self.begin {
            0 => (0, length.saturating_sub(1)),
            begin => (begin - 1, length),
        };
        self.splits.push(Split {
            file: self.file,
            start,
            len,
        });
        self.begin = end;
        self.lines = 0;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The rule written out plainly: split the bytes into lines (terminator included) one byte
    /// at a time, group them by `n`, and move each group's split back one byte.
    fn reference(data: &[u8], n: usize) -> Vec<(u64, u64)> {
        let mut lines = Vec::new();
        let mut begin = 0;
        let mut i = 0;
        while i < data.len() {
            let step = match (data[i], data.get(i + 1)) {
                (b'\r', Some(b'\n')) => 2,
                (b'\r' | b'\n', _) => 1,
                _ => 0,
            };
            if step == 0 {
                i += 1;
            } else {
                i += step;
                lines.push((begin, i));
                begin = i;
            }
        }
        if begin < data.len() {
            lines.push((begin, data.len()));
        }
        lines
            .chunks(n)
            .map(|group| {
                let (first, last) = (group[0].0 as u64, group[group.len() - 1].1 as u64);
                if first == 0 {
                    (0, last - 1)
                } else {
                    (first - 1, last - first)
                }
            })
            .collect()
    }

    /// A reader handing out at most `chunk` bytes per call.
    struct Trickle<'a>(&'a [u8], usize);

    impl Read for Trickle<'_> {
        fn read(&mut self, out: &mut [u8]) -> io::Result<usize> {
            let n = self.0.len().min(self.1).min(out.len());
            out[..n].copy_from_slice(&self.0[..n]);
            self.0 = &self.0[n..];
            Ok(n)
        }
    }

    fn cut(data: &[u8], n: u64, buffer: usize, chunk: usize) -> Vec<(u64, u64)> {
        let mut splits = Vec::new();
        let mut buf = vec![0; buffer];
        let lines = NonZeroU64::new(n).expect("n >= 1");
        cut_lines(Trickle(data, chunk), 7, lines, &mut buf, &mut splits).expect("in memory");
        assert!(splits.iter().all(|s| s.file == 7));
        splits.iter().map(|s| (s.start, s.len)).collect()
    }

    #[test]
    fn terminators_split_across_reads() {
        let samples: [&[u8]; 7] = [
            b"a\r\nb\r\nc\r\n",
            b"a\rb\r\rc\n\n\r\n",
            b"\r\r\n\n\r",
            b"no newline at all",
            b"ab\r",
            b"\n",
            b"",
        ];
        for data in samples {
            for n in 1..5 {
                let expected = reference(data, n as usize);
                for buffer in 1..6 {
                    for chunk in 1..4 {
                        assert_eq!(
                            cut(data, n, buffer, chunk),
                            expected,
                            "{data:?} n={n} buffer={buffer} chunk={chunk}"
                        );
                    }
                }
            }
        }
    }

    #[test]
    fn every_short_mix_of_terminators() {
        // All strings of up to 7 bytes over {a, \r, \n}.
        for len in 0..=7u32 {
            for code in 0..3usize.pow(len) {
                let mut data = Vec::new();
                let mut c = code;
                for _ in 0..len {
                    data.push([b'a', b'\r', b'\n'][c % 3]);
                    c /= 3;
                }
                for n in 1..4 {
                    assert_eq!(
                        cut(&data, n, 2, 3),
                        reference(&data, n as usize),
                        "{data:?} n={n}"
                    );
                }
            }
        }
    }
}
