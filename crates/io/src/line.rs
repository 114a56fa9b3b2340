use std::io::Read;

use crate::{InputFile, IoError, Split};

/// Reads the lines of one split the way Hadoop's `TextInputFormat` does.
///
/// * A line ends at `\n`, `\r\n` or a lone `\r`; the terminator is not part of the line.
/// * The last line of a file may lack a terminator.
/// * A split that does not start at byte 0 skips everything up to and including the first line
///   terminator at or after its start: that line belongs to the previous split.
/// * A split reads every line that starts at a position `<= start + len` (so the line that starts
///   exactly at the next split's first byte is read here, and skipped there).
/// * Compressed files are always read whole from the beginning.
///
/// Lines can be of any length (the buffer grows); bytes are never decoded or altered.
pub struct LineReader {
    _todo: Box<dyn Read + Send>,
}

impl LineReader {
    /// Opens `split` of `file`.
    ///
    /// # Errors
    /// [`IoError::Read`] if the file cannot be opened or positioned.
    pub fn open(file: &InputFile, split: &Split) -> Result<LineReader, IoError> {
        todo!("{file:?} {split:?}")
    }

    /// A reader over any byte stream whose first byte is at `start` in a file of which this range
    /// ends at `end` (use `u64::MAX` to read to the end). `name` is used in errors.
    pub fn from_reader(
        reader: Box<dyn Read + Send>,
        start: u64,
        end: u64,
        name: impl Into<std::path::PathBuf>,
    ) -> LineReader {
        let _ = (start, end, name.into());
        LineReader { _todo: reader }
    }

    /// The next line and the byte offset of its first byte in the (uncompressed) file, or `None`
    /// when the split is done.
    ///
    /// # Errors
    /// [`IoError::Read`] or [`IoError::Decompress`], naming the file.
    pub fn next_line(&mut self) -> Result<Option<(u64, &[u8])>, IoError> {
        todo!()
    }

    /// Bytes of the (uncompressed) input consumed so far, terminators included. Used for progress
    /// and the "map input bytes" counter.
    pub fn bytes_consumed(&self) -> u64 {
        todo!()
    }
}
