//! Reading the lines of one split, exactly as Hadoop's `LineRecordReader` does.
//!
//! Splits are cut at arbitrary bytes, so lines straddle them. Hadoop resolves this with two rules
//! that together give every line to exactly one split: a split that does not start at byte 0
//! discards everything through the first line terminator it sees, and a split keeps reading while
//! the next line *starts* at or before its end (so it reads one line past its end). A `\r\n`
//! straddling a boundary works out too: the next split sees the `\n` as a terminator of its own
//! and discards it as an empty first line, while this split reads the full `\r\n`.
//!
//! This is the hot input path, so lines are returned as slices into one large reused buffer;
//! bytes are copied only when the unconsumed tail of the buffer is moved to its front before the
//! next read, and the buffer grows only for a line longer than itself.

use std::io::{self, BufReader, Read};
use std::ops::Range;
use std::path::{Path, PathBuf};

use memchr::memchr2;

use crate::bzip2_split::{self, Bzip2Split};
use crate::codec::{BlockCodec, BlockReader, Lz4Frames, ZlibStreams};
use crate::{
    CachePolicy, Compression, InputFile, IoError, LocalStorage, Location, Split, Storage,
    StoredInput,
};

/// Initial buffer size: large enough that refills are rare and cheap relative to the data.
const BUFFER_SIZE: usize = 1 << 20;

/// Bytes a reader of a plain split reads beyond the split's length at first: the split's last
/// line goes on past its end.
const SPLIT_SLACK: usize = 4096;

/// The buffer for a plain split of `len` bytes: [`BUFFER_SIZE`], or less for a small split, so
/// that a task of a few lines (a split of Hadoop's `NLineInputFormat`, a small file) neither
/// allocates nor reads a megabyte. The buffer still grows for a longer line.
fn small_split_buffer(len: u64) -> usize {
    usize::try_from(len).map_or(BUFFER_SIZE, |len| {
        len.saturating_add(SPLIT_SLACK).min(BUFFER_SIZE)
    })
}

/// Accounts for a [`LineReader`]'s buffer beyond its first size: a line longer than the buffer
/// makes it grow (to hold the line whole), and the job's memory budget must see that memory.
pub trait BufferBudget: Send {
    /// The buffer is about to hold `extra` bytes beyond its first size (called before it grows),
    /// or has just given them back (called with 0 after it shrank to its first size).
    fn set_extra(&mut self, extra: usize);
}

/// Reads the lines of one split the way Hadoop's `TextInputFormat` does.
///
/// * A line ends at `\n`, `\r\n` or a lone `\r`; the terminator is not part of the line.
/// * The last line of a file may lack a terminator.
/// * A split that does not start at byte 0 skips everything up to and including the first line
///   terminator at or after its start: that line belongs to the previous split.
/// * A split reads every line that starts at a position `<= start + len` (so the line that starts
///   exactly at the next split's first byte is read here, and skipped there).
/// * A bzip2 file is split at its blocks, as Hadoop's splittable `BZip2Codec` is: the split
///   reads the lines of the blocks that start in it, under the same two rules with the block
///   starts as the boundaries; other compressed files are read whole from their beginning.
///
/// Lines can be of any length (the buffer grows, and shrinks back to its first size once the
/// long line is consumed; a [`BufferBudget`] is told both); bytes are never decoded or altered. (Unlike
/// Hadoop 2.8+, a UTF-8 byte order mark at the start of a file is kept as part of the first line.)
///
/// After an error, every further call to [`LineReader::next_line`] fails too.
pub struct LineReader {
    reader: Box<dyn Read + Send>,
    /// The file, for error messages.
    path: PathBuf,
    /// The codec of a compressed input: its read errors are [`IoError::Decompress`].
    codec: Option<&'static str>,
    /// Buffered input; `buf[head..tail]` is read but not yet consumed.
    buf: Vec<u8>,
    head: usize,
    tail: usize,
    /// The reader reported end of input.
    eof: bool,
    /// Position in the file of the first byte of the stream.
    start: u64,
    /// Lines starting after this position belong to the next split.
    end: u64,
    /// Position in the file of `buf[head]`.
    pos: u64,
    /// Bytes obtained from the reader so far, for error messages.
    read_total: u64,
    /// Whether the partial first line of a split has been dealt with.
    positioned: bool,
    /// The kind of an earlier error, which poisons the reader.
    failed: Option<io::ErrorKind>,
    /// The buffer's first size, which it shrinks back to after a long line.
    base: usize,
    /// Told of the buffer's growth beyond `base`.
    budget: Option<Box<dyn BufferBudget>>,
}

impl LineReader {
    /// Opens `split` of `file`.
    ///
    /// A zero-length compressed file reads as empty (no lines) rather than as a truncated stream.
    ///
    /// # Errors
    /// [`IoError::Read`] if the file cannot be opened or positioned; [`IoError::Decompress`] if a
    /// decoder cannot be set up.
    pub fn open(file: &InputFile, split: &Split) -> Result<LineReader, IoError> {
        let SplitStream {
            reader,
            codec,
            start,
        } = open_split_stream(
            &LocalStorage::new(),
            &Location::from_path(file.path.clone()),
            file.compression,
            split,
            CachePolicy::Keep,
        )?;
        Ok(LineReader::over(
            reader,
            codec,
            start,
            split,
            file.path.clone(),
        ))
    }

    /// Opens `split` of `input` on any [`Storage`]: the same rules as [`LineReader::open`].
    ///
    /// A plain split is read from its start through [`Storage::open_range`] to as far as its
    /// last line goes (the reader is dropped there); a compressed file is read whole from its
    /// start. On [`LocalStorage`] the bytes come from the same positioned [`std::fs::File`] as
    /// [`LineReader::open`]'s, refilling the same buffer: no extra copy, no per-line dynamic
    /// call.
    ///
    /// # Errors
    /// The storage's error if the file cannot be opened or positioned ([`IoError::Read`],
    /// [`IoError::UnsupportedScheme`]); [`IoError::Decompress`] if a decoder cannot be set up.
    /// Errors name [`Location::error_path`].
    pub fn open_in(
        storage: &dyn Storage,
        input: &StoredInput,
        split: &Split,
    ) -> Result<LineReader, IoError> {
        let location = input.location();
        let SplitStream {
            reader,
            codec,
            start,
        } = open_split_stream(
            storage,
            location,
            input.compression,
            split,
            CachePolicy::Keep,
        )?;
        Ok(LineReader::over(
            reader,
            codec,
            start,
            split,
            location.error_path(),
        ))
    }

    /// The reader of `split` over a stream opened for it, whose first byte is at `start`
    /// ([`open_split_stream`]).
    fn over(
        reader: Box<dyn Read + Send>,
        codec: Option<&'static str>,
        start: u64,
        split: &Split,
        path: PathBuf,
    ) -> LineReader {
        let (end, buffer_size) = match codec {
            None => (
                split.start.saturating_add(split.len),
                small_split_buffer(split.len),
            ),
            // A compressed stream holds the split's lines and no more (a bzip2 split's: and,
            // unless it starts the data, the partial line before them).
            Some(_) => (u64::MAX, BUFFER_SIZE),
        };
        LineReader::build(reader, start, end, path, codec, buffer_size)
    }

    /// A reader over any byte stream whose first byte is at `start` in a file of which this range
    /// ends at `end` (use `u64::MAX` to read to the end). `name` is used in errors.
    pub fn from_reader(
        reader: Box<dyn Read + Send>,
        start: u64,
        end: u64,
        name: impl Into<std::path::PathBuf>,
    ) -> LineReader {
        LineReader::build(reader, start, end, name.into(), None, BUFFER_SIZE)
    }

    fn build(
        reader: Box<dyn Read + Send>,
        start: u64,
        end: u64,
        path: PathBuf,
        codec: Option<&'static str>,
        buffer_size: usize,
    ) -> LineReader {
        let base = buffer_size.max(1);
        LineReader {
            reader,
            path,
            codec,
            buf: vec![0; base],
            head: 0,
            tail: 0,
            eof: false,
            start,
            end,
            pos: start,
            read_total: 0,
            positioned: false,
            failed: None,
            base,
            budget: None,
        }
    }

    /// Has `budget` told of the buffer's growth beyond its first size from now on.
    pub fn set_budget(&mut self, budget: Box<dyn BufferBudget>) {
        let extra = self.buf.len().saturating_sub(self.base);
        self.budget = Some(budget);
        budget_extra(&mut self.budget, extra);
    }

    /// Bytes the buffer holds (its first size, more while a long line is read).
    pub fn buffer_size(&self) -> usize {
        self.buf.len()
    }

    /// The next line and the byte offset of its first byte in the (uncompressed) file, or `None`
    /// when the split is done.
    ///
    /// # Errors
    /// [`IoError::Read`] or [`IoError::Decompress`], naming the file.
    pub fn next_line(&mut self) -> Result<Option<(u64, &[u8])>, IoError> {
        if let Some(kind) = self.failed {
            let source = io::Error::new(kind, "an earlier read of this input failed");
            return Err(self.error(source));
        }
        match self.advance() {
            Ok(Some((offset, line))) => Ok(Some((offset, &self.buf[line]))),
            Ok(None) => Ok(None),
            Err(source) => {
                self.failed = Some(source.kind());
                Err(self.error(source))
            }
        }
    }

    /// Bytes of the (uncompressed) input consumed so far, terminators included. Used for progress
    /// and the "map input bytes" counter.
    pub fn bytes_consumed(&self) -> u64 {
        self.pos - self.start
    }

    /// Applies the split rules around [`LineReader::read_line`].
    fn advance(&mut self) -> io::Result<Option<(u64, Range<usize>)>> {
        if !self.positioned {
            self.positioned = true;
            if self.start != 0 {
                // The partial (or whole) line at our start belongs to the previous split.
                self.skip_line()?;
            }
        }
        if self.pos > self.end {
            return Ok(None);
        }
        self.read_line()
    }

    /// Consumes the next line of the stream: its file offset and its range in `buf` (terminator
    /// excluded), or `None` at end of input.
    fn read_line(&mut self) -> io::Result<Option<(u64, Range<usize>)>> {
        let mut scan = self.head;
        loop {
            let Some(found) = memchr2(b'\n', b'\r', &self.buf[scan..self.tail]) else {
                let scanned = self.tail - self.head;
                if !self.fill()? {
                    if self.head == self.tail {
                        return Ok(None);
                    }
                    let tail = self.tail;
                    return Ok(Some(self.consume(tail, tail)));
                }
                scan = self.head + scanned;
                continue;
            };
            let at = scan + found;
            if self.buf[at] == b'\n' {
                return Ok(Some(self.consume(at, at + 1)));
            }
            if at + 1 < self.tail {
                let next = if self.buf[at + 1] == b'\n' {
                    at + 2
                } else {
                    at + 1
                };
                return Ok(Some(self.consume(at, next)));
            }
            // The `\r` is the last byte we have: the next byte decides between `\r` and `\r\n`.
            let offset_in_line = at - self.head;
            let more = self.fill()?;
            let at = self.head + offset_in_line;
            if !more {
                return Ok(Some(self.consume(at, at + 1)));
            }
            scan = at;
        }
    }

    /// Consumes the rest of the current line and its terminator without holding it: the
    /// buffer does not grow for a long line that belongs to the previous split.
    fn skip_line(&mut self) -> io::Result<()> {
        loop {
            let Some(found) = memchr2(b'\n', b'\r', &self.buf[self.head..self.tail]) else {
                let tail = self.tail;
                self.consume(tail, tail);
                if !self.fill()? {
                    return Ok(());
                }
                continue;
            };
            let at = self.head + found;
            if self.buf[at] == b'\n' {
                self.consume(at, at + 1);
                return Ok(());
            }
            if at + 1 < self.tail {
                let next = if self.buf[at + 1] == b'\n' {
                    at + 2
                } else {
                    at + 1
                };
                self.consume(at, next);
                return Ok(());
            }
            // The `\r` is the last byte we have: keep it, and let the next byte decide between
            // `\r` and `\r\n`.
            self.consume(at, at);
            if !self.fill()? {
                let head = self.head;
                self.consume(head, head + 1);
                return Ok(());
            }
        }
    }

    /// Marks the line `buf[head..line_end]` and its terminator (up to `next`) consumed.
    fn consume(&mut self, line_end: usize, next: usize) -> (u64, Range<usize>) {
        let offset = self.pos;
        let line = self.head..line_end;
        self.pos += (next - self.head) as u64;
        self.head = next;
        (offset, line)
    }

    /// Reads more input after the buffered bytes, keeping the unconsumed ones (moved to the front
    /// of the buffer, which doubles when they fill it, and shrinks back to its first size when
    /// they fit in that again). Returns `false` at end of input.
    fn fill(&mut self) -> io::Result<bool> {
        if self.eof {
            return Ok(false);
        }
        if self.head > 0 {
            self.buf.copy_within(self.head..self.tail, 0);
            self.tail -= self.head;
            self.head = 0;
        }
        if self.buf.len() > self.base && self.tail < self.base {
            // The long line is consumed: give its memory back rather than keep it for the
            // rest of the split.
            self.buf.truncate(self.base);
            self.buf.shrink_to_fit();
            budget_extra(&mut self.budget, 0);
        }
        if self.tail == self.buf.len() {
            let grown = self.buf.len().saturating_mul(2);
            budget_extra(&mut self.budget, grown - self.base);
            self.buf.resize(grown, 0);
        }
        loop {
            let space = &mut self.buf[self.tail..];
            let room = space.len();
            match self.reader.read(space) {
                Ok(0) => {
                    self.eof = true;
                    return Ok(false);
                }
                Ok(n) if n <= room => {
                    self.tail += n;
                    self.read_total += n as u64;
                    return Ok(true);
                }
                Ok(_) => {
                    return Err(io::Error::other(
                        "reader returned more bytes than asked for",
                    ))
                }
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(e) => return Err(e),
            }
        }
    }

    fn error(&self, source: io::Error) -> IoError {
        stream_error(&self.path, self.codec, self.read_total, source)
    }
}

/// Tells `budget`, if any, that the buffer holds `extra` bytes beyond its first size.
fn budget_extra(budget: &mut Option<Box<dyn BufferBudget>>, extra: usize) {
    if let Some(budget) = budget {
        budget.set_extra(extra);
    }
}

/// The bytes of a file on any storage: a plain file's bytes `plain_start..plain_start +
/// plain_len`, or a compressed file's decoded bytes from its beginning.
///
/// # Errors
/// [`IoError::Read`] if the file cannot be opened or positioned, and the storage's errors;
/// [`IoError::Decompress`] if a decoder cannot be set up.
pub(crate) fn open_stream_in(
    storage: &dyn Storage,
    location: &Location,
    compression: Compression,
    plain_start: u64,
    plain_len: u64,
    cache: CachePolicy,
) -> Result<(Box<dyn Read + Send>, Option<&'static str>), IoError> {
    if compression == Compression::None {
        let reader = storage.open_range_with(location, plain_start, plain_len, cache)?;
        return Ok((reader, None));
    }
    let codec = compression.name();
    let raw = storage.open_range_with(location, 0, u64::MAX, cache)?;
    let reader = decoder_of(compression, raw)
        .map_err(|source| stream_error(&location.error_path(), Some(codec), 0, source))?;
    Ok((reader, Some(codec)))
}

/// The codec name of bzip2 files, whose splits [`Bzip2Split`] reads.
const BZIP2: &str = "bzip2";

/// Opens the bytes of `split` for a line reader: a plain file's from the split's start on; a
/// bzip2 file's blocks that start in the split, then as far as the line running past its end
/// goes ([`Bzip2Split`]); any other compressed file decoded whole from its beginning. With
/// the stream come the codec's name and where the line reader counts from: a split that does not
/// start the data discards its partial first line, and its keys count from the split's start
/// (a bzip2 split's as Hadoop's do, see [`crate::bzip2_split`]).
///
/// # Errors
/// As for [`open_stream_in`]; [`IoError::Decompress`] if the bzip2 file does not start as one.
fn open_split_stream(
    storage: &dyn Storage,
    location: &Location,
    compression: Compression,
    split: &Split,
    cache: CachePolicy,
) -> Result<SplitStream, IoError> {
    if compression != Compression::Bzip2 {
        let start = if compression == Compression::None {
            split.start
        } else {
            0
        };
        let (reader, codec) =
            open_stream_in(storage, location, compression, split.start, u64::MAX, cache)?;
        return Ok(SplitStream {
            reader,
            codec,
            start,
        });
    }
    let error = |source| stream_error(&location.error_path(), Some(BZIP2), 0, source);
    let raw = storage.open_range_with(location, split.start, u64::MAX, cache)?;
    let end = split.start.saturating_add(split.len);
    let reader = Bzip2Split::new(raw, split.start, end).map_err(error)?;
    let mut start = split.start;
    if let Some(first) = reader.first_block().filter(|_| split.start > 0) {
        // Streams with no blocks may come first (an empty one, then the data appended): the
        // split holding the first block then starts the data, with nothing to discard.
        if first / 8 < bzip2_split::LOOK_BACK {
            // The first 64 bytes hold the first block's marker but after empty streams.
            let mut first_of_data = None;
            for len in [64, first / 8 + 8] {
                let mut head = Vec::new();
                storage
                    .open_range_with(location, 0, len, cache)?
                    .read_to_end(&mut head)
                    .map_err(error)?;
                first_of_data = bzip2_split::first_block_of_data(&head);
                if first_of_data.is_some() {
                    break;
                }
            }
            if first_of_data == Some(first) {
                start = 0;
            }
        }
    }
    Ok(SplitStream {
        reader: Box::new(reader),
        codec: Some(BZIP2),
        start,
    })
}

/// What [`open_split_stream`] opens.
struct SplitStream {
    reader: Box<dyn Read + Send>,
    /// The codec's name, for a compressed file.
    codec: Option<&'static str>,
    /// The position of the stream's first byte, as the line reader counts.
    start: u64,
}

/// The decoded bytes of the whole file at `location`, decompressed by its name's codec
/// (`.gz`, `.bz2`, `.zst`, `.lz4`, `.snappy`, `.deflate`) as a job reads its input; a file
/// whose name gives none but which starts with gzip's magic number as gzip; else as it is.
/// What `sluice fs -text` prints (Hadoop's `-text` tells gzip by its first bytes too).
///
/// # Errors
/// As for [`Storage::open_range`]; [`IoError::Decompress`] if a decoder cannot be set up (an
/// empty `.gz` file).
pub fn open_decompressed(
    storage: &dyn Storage,
    location: &Location,
) -> Result<Box<dyn Read + Send>, IoError> {
    let mut compression = Compression::from_location(location);
    if compression == Compression::None {
        let mut magic = Vec::with_capacity(2);
        storage
            .open_range(location, 0, 2)?
            .read_to_end(&mut magic)
            .map_err(|source| stream_error(&location.error_path(), None, 0, source))?;
        if magic == [0x1f, 0x8b] {
            compression = Compression::Gzip;
        }
    }
    open_stream_in(
        storage,
        location,
        compression,
        0,
        u64::MAX,
        CachePolicy::Keep,
    )
    .map(|(r, _)| r)
}

/// The error of a stream from [`open_stream_in`]: [`IoError::Decompress`] (with the uncompressed
/// `offset`) for a compressed file, else [`IoError::Read`].
pub(crate) fn stream_error(
    path: &Path,
    codec: Option<&'static str>,
    offset: u64,
    source: io::Error,
) -> IoError {
    match codec {
        Some(codec) => IoError::Decompress {
            path: path.to_path_buf(),
            codec,
            offset,
            source,
        },
        None => IoError::Read {
            path: path.to_path_buf(),
            source,
        },
    }
}

/// A decoder of a compressed file's whole stream. An empty file reads as empty (no lines), as
/// Hadoop's readers of the block and bzip2 formats read it; but not an empty `.gz` or
/// `.deflate` file: a gzip or zlib stream holds at least a header and a trailer (sluice writes
/// them for an empty part file too), so an empty one is a truncated file, which Hadoop's
/// readers fail on as well (`EOFException: Unexpected end of input stream`).
fn decoder_of(
    compression: Compression,
    mut raw: Box<dyn Read + Send>,
) -> io::Result<Box<dyn Read + Send>> {
    let (head, got) = read_head(&mut raw)?;
    if got == 0 {
        return match compression {
            Compression::Gzip | Compression::Deflate => Err(io::Error::new(
                io::ErrorKind::UnexpectedEof,
                format!(
                    "the file is empty: a {} file holds at least a header, so this one was \
                     cut short (Hadoop fails on it too)",
                    compression.name()
                ),
            )),
            _ => Ok(Box::new(io::empty())),
        };
    }
    // The bytes already read go back in front of the rest (the stream may not be seekable).
    decoder(
        compression,
        io::Cursor::new(head[..got].to_vec()).chain(raw),
    )
}

/// Up to the first four bytes of `reader` (fewer only at its end), and how many there are.
fn read_head(reader: &mut impl Read) -> io::Result<([u8; 4], usize)> {
    let mut head = [0u8; 4];
    let mut got = 0;
    while got < head.len() {
        match reader.read(&mut head[got..]) {
            Ok(0) => break,
            Ok(n) => got += n.min(head.len() - got),
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            Err(e) => return Err(e),
        }
    }
    Ok((head, got))
}

/// A decoder reading the whole of a compressed stream.
pub(crate) fn decoder<R: Read + Send + 'static>(
    compression: Compression,
    file: R,
) -> io::Result<Box<dyn Read + Send>> {
    Ok(match compression {
        Compression::None => Box::new(file),
        Compression::Gzip => Box::new(flate2::read::MultiGzDecoder::new(file)),
        Compression::Zstd => Box::new(zstd::stream::read::Decoder::new(file)?),
        Compression::Lz4 => lz4_decoder(file)?,
        Compression::Bzip2 => Box::new(bzip2::read::MultiBzDecoder::new(file)),
        Compression::Deflate => Box::new(ZlibStreams::new(BufReader::new(file))),
        Compression::Snappy => Box::new(BlockReader::new(BufReader::new(file), BlockCodec::Snappy)),
    })
}

/// The LZ4 frame format's magic number, as its first four bytes (0x184D2204 little-endian).
const LZ4_FRAME_MAGIC: [u8; 4] = [0x04, 0x22, 0x4d, 0x18];

/// A `.lz4` file is either LZ4 frames (the `lz4` tool) or Hadoop's `Lz4Codec` block framing,
/// whose first four bytes are a big-endian block length: decided by the frame magic number.
/// Read as a block length the magic is 69,356,824 bytes, which Hadoop's writer only produces
/// for a single write of exactly that size (its blocks are otherwise under 256 KiB).
fn lz4_decoder<R: Read + Send + 'static>(mut file: R) -> io::Result<Box<dyn Read + Send>> {
    let (head, got) = read_head(&mut file)?;
    // The bytes already read go back in front of the rest (the file may not be seekable).
    let stream = BufReader::new(io::Cursor::new(head[..got].to_vec()).chain(file));
    Ok(if head[..got] == LZ4_FRAME_MAGIC {
        Box::new(Lz4Frames::new(stream))
    } else {
        Box::new(BlockReader::new(stream, BlockCodec::Lz4))
    })
}

#[cfg(test)]
mod tests {
    //! Exercises buffer boundaries with tiny buffers and readers that return one byte at a time;
    //! the integration tests cover real files with the real buffer size.
    use super::*;

    /// Hands out at most `chunk` bytes per read.
    struct Trickle {
        data: Vec<u8>,
        at: usize,
        chunk: usize,
    }

    impl Read for Trickle {
        fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
            let n = buf.len().min(self.chunk).min(self.data.len() - self.at);
            buf[..n].copy_from_slice(&self.data[self.at..self.at + n]);
            self.at += n;
            Ok(n)
        }
    }

    /// The obvious splitter: every line of the whole file with its offset.
    fn reference(data: &[u8]) -> Vec<(u64, Vec<u8>)> {
        let mut lines = Vec::new();
        let (mut begin, mut i) = (0, 0);
        while i < data.len() {
            let terminator = match (data[i], data.get(i + 1)) {
                (b'\r', Some(b'\n')) => 2,
                (b'\r' | b'\n', _) => 1,
                _ => 0,
            };
            if terminator == 0 {
                i += 1;
            } else {
                lines.push((begin as u64, data[begin..i].to_vec()));
                i += terminator;
                begin = i;
            }
        }
        if begin < data.len() {
            lines.push((begin as u64, data[begin..].to_vec()));
        }
        lines
    }

    fn read_split(
        data: &[u8],
        start: usize,
        end: usize,
        buffer: usize,
        chunk: usize,
    ) -> Vec<(u64, Vec<u8>)> {
        let reader = Trickle {
            data: data[start..].to_vec(),
            at: 0,
            chunk,
        };
        let mut lines = LineReader::build(
            Box::new(reader),
            start as u64,
            end as u64,
            PathBuf::from("test"),
            None,
            buffer,
        );
        let mut out = Vec::new();
        while let Some((offset, line)) = lines.next_line().expect("in-memory read") {
            out.push((offset, line.to_vec()));
        }
        out
    }

    fn read_all_splits(
        data: &[u8],
        size: usize,
        buffer: usize,
        chunk: usize,
    ) -> Vec<(u64, Vec<u8>)> {
        let mut out = Vec::new();
        let mut start = 0;
        loop {
            let end = (start + size).min(data.len());
            out.extend(read_split(data, start, end, buffer, chunk));
            if end == data.len() {
                return out;
            }
            start = end;
        }
    }

    #[test]
    fn tiny_buffers_and_trickling_reads_agree_with_reference() {
        let samples: &[&[u8]] = &[
            b"",
            b"\n",
            b"\r",
            b"\r\n",
            b"\n\r",
            b"\r\r\n\n",
            b"a",
            b"ab\rcd\r\nef\ngh",
            b"abc\r",
            b"abc\r\n",
            b"\r\n\r\n\r\r\n\n\nxyz\r\r",
            b"long line without end that crosses many buffers",
            b"x\r\ny\r\nzzzzzzzzzzzzzzzzzzz\r\r\r\n\xff\xfe\n",
        ];
        for data in samples {
            let expected = reference(data);
            for size in 1..=data.len().max(1) + 2 {
                for buffer in [1, 2, 3, 5, 64] {
                    for chunk in [1, 2, 7, usize::MAX] {
                        assert_eq!(
                            read_all_splits(data, size, buffer, chunk),
                            expected,
                            "data {data:?} split size {size} buffer {buffer} chunk {chunk}"
                        );
                    }
                }
            }
        }
    }

    /// Records what a reader tells its budget.
    struct Recorded(std::sync::Arc<std::sync::Mutex<Vec<usize>>>);

    impl BufferBudget for Recorded {
        fn set_extra(&mut self, extra: usize) {
            self.0.lock().unwrap_or_else(|p| p.into_inner()).push(extra);
        }
    }

    #[test]
    fn a_long_line_grows_the_buffer_through_the_budget_and_it_shrinks_back() {
        let mut data = b"ab\n".to_vec();
        data.extend(std::iter::repeat_n(b'x', 100));
        data.extend_from_slice(b"\ncd\nef\n");
        let reader = Trickle {
            data: data.clone(),
            at: 0,
            chunk: 7,
        };
        let mut lines =
            LineReader::build(Box::new(reader), 0, u64::MAX, PathBuf::from("t"), None, 8);
        let told = std::sync::Arc::new(std::sync::Mutex::new(Vec::new()));
        lines.set_budget(Box::new(Recorded(std::sync::Arc::clone(&told))));
        let mut out = Vec::new();
        let mut largest = 0;
        while let Some((offset, line)) = lines.next_line().expect("in-memory read") {
            out.push((offset, line.to_vec()));
            largest = largest.max(lines.buffer_size());
        }
        assert_eq!(out, reference(&data));
        // 8 bytes doubled until the 100-byte line and its terminator fit: 128.
        assert_eq!(largest, 128);
        assert_eq!(lines.buffer_size(), 8, "the buffer did not shrink back");
        let told = told.lock().unwrap_or_else(|p| p.into_inner()).clone();
        // Nothing extra at first; each doubling announced; all given back at the end.
        assert_eq!(told, vec![0, 8, 24, 56, 120, 0]);
    }

    #[test]
    fn a_long_line_of_the_previous_split_is_skipped_without_growing_the_buffer() {
        for terminator in [&b"\n"[..], b"\r", b"\r\n"] {
            let mut data = vec![b'x'; 100];
            data.extend_from_slice(terminator);
            data.extend_from_slice(b"ab\ncd");
            let reader = Trickle {
                data: data[1..].to_vec(),
                at: 0,
                chunk: 7,
            };
            let end = data.len() as u64;
            let mut lines =
                LineReader::build(Box::new(reader), 1, end, PathBuf::from("t"), None, 8);
            let told = std::sync::Arc::new(std::sync::Mutex::new(Vec::new()));
            lines.set_budget(Box::new(Recorded(std::sync::Arc::clone(&told))));
            let mut out = Vec::new();
            while let Some((offset, line)) = lines.next_line().expect("in-memory read") {
                out.push((offset, line.to_vec()));
                assert_eq!(lines.buffer_size(), 8, "the buffer grew");
            }
            let first = 100 + terminator.len() as u64;
            assert_eq!(
                out,
                vec![(first, b"ab".to_vec()), (first + 3, b"cd".to_vec())],
                "terminator {terminator:?}"
            );
            let told = told.lock().unwrap_or_else(|p| p.into_inner()).clone();
            assert_eq!(told, vec![0], "terminator {terminator:?}");
        }
    }

    #[test]
    fn bytes_consumed_counts_skipped_prefix_and_terminators() {
        let data = b"aa\r\nbb\rcc\n";
        let mut lines = LineReader::build(Box::new(&data[1..]), 1, 5, PathBuf::from("t"), None, 2);
        assert_eq!(lines.bytes_consumed(), 0);
        let (offset, line) = lines.next_line().expect("read").expect("a line");
        assert_eq!((offset, line), (4, &b"bb"[..]));
        assert_eq!(lines.bytes_consumed(), 6);
        assert!(lines.next_line().expect("read").is_none());
        assert_eq!(lines.bytes_consumed(), 6);
    }

    #[test]
    fn errors_poison_the_reader() {
        struct Failing;
        impl Read for Failing {
            fn read(&mut self, _: &mut [u8]) -> io::Result<usize> {
                Err(io::Error::other("disk on fire"))
            }
        }
        let mut lines = LineReader::from_reader(Box::new(Failing), 0, u64::MAX, "burning");
        for _ in 0..2 {
            match lines.next_line() {
                Err(IoError::Read { path, .. }) => assert_eq!(path, PathBuf::from("burning")),
                other => panic!(
                    "expected a read error, got {:?}",
                    other.map(|l| l.map(|(o, _)| o))
                ),
            }
        }
    }
}
